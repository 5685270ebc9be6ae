"""Adam's step through the kernels' `rowwise` (row blocks on two threads with the fast kernels)
against the plain kernels: the same bits."""

import numpy as np
import pytest

from minigrad import nn, optim
from minigrad.engine import RowSparse, kernels
from minigrad.engine.kernels import fast


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
    blocks = []
    in_blocks = fast.in_row_blocks
    monkeypatch.setattr(fast, "in_row_blocks", lambda *a, **k: blocks.append(a[0]) or in_blocks(*a, **k))
    monkeypatch.setattr(fast, "PARALLEL_MIN_BYTES", 0)
    default = kernels.fast_enabled()
    kernels.use_fast(True)  # the row blocks against the plain step, whatever MINIGRAD_FAST_KERNELS says
    try:
        fast_result = run(kind, lazy, sparse)
    finally:
        kernels.use_fast(default)
    assert len(blocks) == 4, "the row-block form ran at every step"
    with kernels.plain_only():
        plain_result = run(kind, lazy, sparse)
    assert len(blocks) == 4, "the plain form ran at every step with the plain kernels"
    for a, b in zip(fast_result, plain_result):
        np.testing.assert_array_equal(a, b)
