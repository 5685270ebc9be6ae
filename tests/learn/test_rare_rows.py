"""minigrad.learn.rare_rows: minigrad's step after a silence against its Adam, and RowAdamW (a
table stepped by a row rule) against AdamW(lazy=True) for touched-only and catch-up decay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn.lessons import load_module
from minigrad.learn.rare_rows import RowAdamW, adam_step_after_silence, lazy_adamw
from minigrad.optim import Adam, AdamW

SOLUTION = load_module(Path(__file__).resolve().parents[2] / "lessons" / "solutions" /
                       "07_rare_rows_and_the_optimizer.py")


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("k", [0, 1, 9])
def test_step_after_silence_is_what_adam_does(lazy, k):
    rng = np.random.default_rng(k)
    table = mg.nn.Parameter(rng.standard_normal((2, 3)))
    optimizer = Adam([table], lr=0.03, lazy=lazy)
    for _ in range(4):
        table.grad = mg.RowSparse([0, 1], rng.standard_normal((2, 3)), table.shape)
        optimizer.step()
    state = optimizer.state_dict()["state"][0]
    m, v = state["exp_avg"][0].copy(), state["exp_avg_sq"][0].copy()
    for _ in range(k):
        table.grad = mg.RowSparse([1], rng.standard_normal((1, 3)), table.shape)
        optimizer.step()
    g, before = rng.standard_normal(3), table.data[0].copy()
    table.grad = mg.RowSparse([0], g[None], table.shape)
    optimizer.step()
    predicted = adam_step_after_silence(m, v, 4, k, g, 0.03, lazy=lazy)
    np.testing.assert_allclose(predicted, table.data[0] - before, rtol=1e-10)


def _train(make, steps=30, seed=0):
    rng = np.random.default_rng(seed)
    table = mg.nn.Parameter(np.random.default_rng(1).standard_normal((12, 4)))
    optimizer = make([table])
    for _ in range(steps):
        present = np.unique(rng.choice(12, size=3, p=np.r_[[0.3] * 2, [0.4 / 9] * 9, [0.0]]))
        table.grad = mg.RowSparse(present, rng.standard_normal((present.size, 4)), table.shape)
        optimizer.step()
    optimizer.flush()
    return table.data


@pytest.mark.parametrize("decay", ["touched", "catch_up"])
def test_row_adamw_with_the_reference_rule_is_adamw(decay):
    ours = _train(lambda p: RowAdamW(p, SOLUTION.lazy_adamw_rows, lr=0.05, weight_decay=0.4, decay=decay))
    theirs = _train(lambda p: AdamW(p, lr=0.05, weight_decay=0.4, lazy=True, decay=decay))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_never_seen_row_under_catch_up_keeps_exactly_the_dense_decay():
    rule = SOLUTION.lazy_adamw_rows
    final = _train(lambda p: RowAdamW(p, rule, lr=0.05, weight_decay=0.4, decay="catch_up"))
    start = np.random.default_rng(1).standard_normal((12, 4))
    np.testing.assert_allclose(final[11], start[11] * (1 - 0.05 * 0.4) ** 30, rtol=1e-12)


def test_lazy_adamw_picks_minigrads_without_a_rule_and_refuses_a_dense_mode():
    table = mg.nn.Parameter(np.zeros((2, 2)))
    assert isinstance(lazy_adamw([table], None, lr=0.1, weight_decay=0.1, decay="touched"), AdamW)
    rule = SOLUTION.lazy_adamw_rows
    assert isinstance(lazy_adamw([table], rule, lr=0.1, weight_decay=0.1, decay="touched"), RowAdamW)
    with pytest.raises(ValueError, match="decay must be 'touched' or 'catch_up', got 'dense'"):
        RowAdamW([table], SOLUTION.lazy_adamw_rows, lr=0.1, weight_decay=0.1, decay="dense")


def test_row_adamw_refuses_a_dense_gradient():
    table = mg.nn.Parameter(np.zeros((2, 2)))
    optimizer = RowAdamW([table], SOLUTION.lazy_adamw_rows, lr=0.1, weight_decay=0.1, decay="touched")
    table.grad = np.ones((2, 2))
    with pytest.raises(TypeError, match="must be a RowSparse"):
        optimizer.step()
