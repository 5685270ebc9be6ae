"""Adam's one fast call (row blocks on two threads) against its plain step: the same bits."""

import numpy as np
import pytest

import minigrad
from minigrad import nn, optim
from minigrad.engine import RowSparse, fast
from minigrad.optim import optimizers


def run(kind, lazy, sparse):
    rng = np.random.default_rng(3)
    p = nn.Parameter(rng.standard_normal((17, 5)))
    opt = getattr(optim, kind)([p], lr=0.01, weight_decay=0.1, lazy=lazy)
    for _ in range(4):
        g = rng.standard_normal((17, 5))
        rows = np.array([0, 3, 4, 16])
        p.grad = RowSparse(rows, g[rows], p.shape) if sparse else g
        opt.step()
    state = opt.state[p]
    return p.data.copy(), state["exp_avg"].copy(), state["exp_avg_sq"].copy()


@pytest.mark.parametrize("lazy,sparse", [(False, False), (False, True), (True, True)])
@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam_in_row_blocks_gives_the_plain_steps_bits(kind, lazy, sparse, small_row_blocks, monkeypatch):
    ran_fast = []
    in_blocks = optimizers._adam_step_in_row_blocks_fast
    monkeypatch.setattr(optimizers, "_adam_step_in_row_blocks_fast",
                        lambda arrays, rule: ran_fast.append(in_blocks(arrays, rule)) or ran_fast[-1])
    with minigrad.use(fast=True):  # the twin against the plain step, whatever MINIGRAD_FAST_PATHS says
        fast_result = run(kind, lazy, sparse)
    assert len(ran_fast) == 4 and all(ran_fast), "the row-block form ran at every step"
    with fast.disabled():
        plain_result = run(kind, lazy, sparse)
    assert ran_fast[4:] == [False] * 4, "the plain form ran at every step with the fast paths off"
    for a, b in zip(fast_result, plain_result):
        np.testing.assert_array_equal(a, b)
