"""minigrad.learn.kit.rare_rows: minigrad's step after a silence against its Adam, and RowAdamW (a
table stepped by a row rule) against AdamW(lazy=True) for touched-only and catch-up decay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn.course import load_module
from minigrad.learn.kit.rare_rows import RowAdamW, adam_step_after_silence, lazy_adamw, row_gradient_noise
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


def _train_model_params(make, steps=12, dtype=np.float64):
    """A table (read by lookups: RowSparse), a matrix, a vector and a 0-d number, stepped together."""
    rng = np.random.default_rng(3)
    start = [rng.standard_normal(shape).astype(dtype) for shape in ((6, 3), (4, 3), (4,), ())]
    params = [mg.nn.Parameter(a.copy()) for a in start]
    optimizer = make(params)
    for _ in range(steps):
        present = np.unique(rng.choice(6, size=3))
        params[0].grad = mg.RowSparse(present, rng.standard_normal((present.size, 3)).astype(dtype), (6, 3))
        for p in params[1:]:
            p.grad = rng.standard_normal(p.shape).astype(dtype)
        optimizer.step()
    return [p.data for p in params]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_adamw_on_every_row_is_pytorchs_adamw_for_every_kind_of_parameter(dtype):
    """lazy=False: every row of every parameter each step (a vector as one row, a number as one)."""
    rule = SOLUTION.lazy_adamw_rows
    ours = _train_model_params(lambda p: RowAdamW(p, rule, lr=0.05, weight_decay=0.3, lazy=False),
                               dtype=dtype)
    theirs = _train_model_params(lambda p: AdamW(p, lr=0.05, weight_decay=0.3), dtype=dtype)
    tolerance = 1e-10 if dtype == np.float64 else 2e-6
    for a, b in zip(ours, theirs):
        assert a.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


def test_row_adamw_follows_a_learning_rate_schedule_and_reports_its_second_moment():
    rule = SOLUTION.lazy_adamw_rows
    ours_params = [mg.nn.Parameter(np.ones((3, 2)))]
    theirs_params = [mg.nn.Parameter(np.ones((3, 2)))]
    ours = RowAdamW(ours_params, rule, lr=0.1, weight_decay=0.1, lazy=False)
    theirs = AdamW(theirs_params, lr=0.1, weight_decay=0.1)
    for step, g in enumerate(np.random.default_rng(0).standard_normal((5, 3, 2))):
        for optimizer, params in ((ours, ours_params), (theirs, theirs_params)):
            optimizer.param_groups[0]["lr"] = 0.1 / (1 + step)  # what fit_scheduled does
            params[0].grad = g.copy()
            optimizer.step()
    np.testing.assert_allclose(ours_params[0].data, theirs_params[0].data, rtol=1e-12)
    np.testing.assert_allclose(ours.second_moment(ours_params[0], bias_corrected=True),
                               theirs.second_moment(theirs_params[0], bias_corrected=True), rtol=1e-12)


def test_row_adamw_names_a_bad_decay_and_a_bad_lazy():
    table = mg.nn.Parameter(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="RowAdamW: lazy must be True or False, got 'yes'"):
        RowAdamW([table], SOLUTION.lazy_adamw_rows, lr=0.1, weight_decay=0.1, lazy="yes")
    with pytest.raises(ValueError, match="RowAdamW: weight_decay must be >= 0, got -1"):
        RowAdamW([table], SOLUTION.lazy_adamw_rows, lr=0.1, weight_decay=-1)


@pytest.mark.parametrize("decay", ["touched", "catch_up"])
def test_a_dense_gradient_steps_every_row_as_lazy_adamw_does(decay):
    """A tied table's gradient is dense: every row is present, for the rule as for AdamW(lazy=True)."""
    rng = np.random.default_rng(3)
    tables = [mg.nn.Parameter(rng.standard_normal((5, 3))) for _ in range(2)]
    tables[1].data[...] = tables[0].data
    ours = RowAdamW([tables[0]], SOLUTION.lazy_adamw_rows, lr=0.1, weight_decay=0.2, decay=decay)
    theirs = AdamW([tables[1]], lr=0.1, weight_decay=0.2, lazy=True, decay=decay)
    for step in range(6):
        grad = rng.standard_normal((5, 3))
        sparse = mg.RowSparse(np.array([0, 2]), grad[[0, 2]], (5, 3))
        for table, optimizer in ((tables[0], ours), (tables[1], theirs)):
            table.grad = grad.copy() if step % 2 else sparse  # dense and sparse steps in turn
            optimizer.step()
    np.testing.assert_allclose(tables[0].data, tables[1].data, rtol=1e-12, atol=1e-14)


# ---- row_gradient_noise: the noise that lesson 7 measures on real gradients ----------------------

def noisy_gradients(level: float, steps: int, rng: np.random.Generator):
    """Row 0 present every step, row 1 every other step, row 2 once: g (1 + level z)."""
    g = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, -0.5], [1.0, 2.0, 3.0]])
    for t in range(steps):
        rows = np.array([0, 1] if t % 2 == 0 else [0]) if t else np.array([0, 2])
        yield mg.RowSparse(rows, g[rows] * (1 + level * rng.standard_normal((rows.size, 3))), (4, 3))


@pytest.mark.parametrize("level", [0.5, 1.0, 3.0, 6.0])
def test_row_gradient_noise_recovers_a_known_noise_level(level):
    rows, noise = row_gradient_noise(noisy_gradients(level, 4000, np.random.default_rng(1)), min_seen=20)
    assert rows.tolist() == [0, 1]  # row 2 was present once, row 3 never
    assert np.allclose(noise, level, rtol=0.12), noise


def test_a_constant_gradient_has_no_noise_so_lesson_7s_assert_would_fail():
    """Lesson 7 asserts noise > 2 for the frequent rows of a trained model; without noise it reads 0."""
    _, noise = row_gradient_noise(noisy_gradients(0.0, 100, np.random.default_rng(0)))
    assert np.allclose(noise, 0.0, atol=1e-6) and not np.any(noise > 2)


def test_a_constant_gradient_reads_zero_not_nan_when_rounding_makes_the_variance_negative():
    # E[g^2] - E[g]^2 over 200 identical float64 values can round to a hair below zero
    g = np.random.default_rng(0).standard_normal((30, 4))
    grads = [mg.RowSparse(np.arange(30), g.copy(), (30, 4)) for _ in range(200)]
    _, noise = row_gradient_noise(grads)
    assert np.all(np.isfinite(noise)) and np.allclose(noise, 0.0, atol=1e-6)


def test_repeated_ids_count_once_per_gradient_and_a_lost_mean_is_inf():
    rng = np.random.default_rng(2)
    grads = [mg.RowSparse([0, 0], rng.standard_normal((2, 2)), (1, 2)) for _ in range(50)]  # mean 0
    rows, noise = row_gradient_noise(grads, min_seen=50)
    assert rows.tolist() == [0]  # two entries of row 0 per gradient: still 50 gradients, not 100
    assert noise[0] > 5 or np.isinf(noise[0])


def test_row_gradient_noise_names_bad_input():
    with pytest.raises(ValueError, match="no gradients"):
        row_gradient_noise([])
    with pytest.raises(TypeError, match="RowSparse"):
        row_gradient_noise([np.zeros((3, 2))])
    with pytest.raises(ValueError, match=r"shape \(4, 2\) among ones of \(3, 2\)"):
        row_gradient_noise([mg.RowSparse([0], np.ones((1, 2)), shape) for shape in ((3, 2), (4, 2))])
