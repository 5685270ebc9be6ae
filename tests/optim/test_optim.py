"""Optimizers: one step in closed form, lazy rows, the three decay semantics, tied tables,
parameter groups, state round trips and the per-row introspection the lessons use."""

import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.engine import RowSparse
from minigrad.nn import functional as F

LR, WD = 0.1, 0.05
B1, B2 = 0.9, 0.999


def param(values):
    return nn.Parameter(np.array(values, dtype=np.float64))


def sparse(rows, values, shape):
    values = np.asarray(values, dtype=np.float64).reshape(len(rows), *shape[1:])
    return RowSparse(np.asarray(rows, dtype=np.int64), values, shape)


def step(opt, p, grad):
    p.grad = grad
    opt.step()


# ---- one step in closed form -----------------------------------------------------------------
P0 = np.array([1.0, -2.0, 3.0])
G1 = np.array([0.5, 0.25, -1.0])
G2 = np.array([-0.3, 0.75, 0.5])


def test_sgd_one_step_is_p_minus_lr_g():
    p = param(P0)
    step(optim.SGD([p], lr=LR), p, G1)
    np.testing.assert_allclose(p.data, P0 - LR * G1, rtol=1e-15)


def test_sgd_weight_decay_joins_the_gradient():
    p = param(P0)
    step(optim.SGD([p], lr=LR, weight_decay=WD), p, G1)
    np.testing.assert_allclose(p.data, P0 - LR * (G1 + WD * P0), rtol=1e-15)


def test_sgd_momentum_starts_at_g_and_then_accumulates():
    p, mu = param(P0), 0.9
    opt = optim.SGD([p], lr=LR, momentum=mu)
    step(opt, p, G1)
    np.testing.assert_allclose(p.data, P0 - LR * G1, rtol=1e-15)
    step(opt, p, G2)
    np.testing.assert_allclose(p.data, P0 - LR * G1 - LR * (mu * G1 + G2), rtol=1e-14)


def test_sgd_dampening_scales_new_gradients_but_not_the_first():
    p, mu, damp = param(P0), 0.9, 0.25
    opt = optim.SGD([p], lr=LR, momentum=mu, dampening=damp)
    step(opt, p, G1)
    step(opt, p, G2)
    expected = P0 - LR * G1 - LR * (mu * G1 + (1 - damp) * G2)
    np.testing.assert_allclose(p.data, expected, rtol=1e-14)


def test_sgd_nesterov_looks_ahead_along_the_buffer():
    p, mu = param(P0), 0.9
    step(optim.SGD([p], lr=LR, momentum=mu, nesterov=True), p, G1)
    np.testing.assert_allclose(p.data, P0 - LR * (G1 + mu * G1), rtol=1e-15)


def test_adam_first_step_is_lr_times_sign_with_eps_after_bias_correction():
    # m_hat = g and sqrt(v_hat) = |g| on step 1, so p1 = p0 - lr g / (|g| + eps). A large eps
    # tells the placements apart: SparseAdam's sqrt(v) + eps before correction would give ~30x less.
    p, eps = param(P0), 0.1
    step(optim.Adam([p], lr=LR, eps=eps), p, G1)
    np.testing.assert_allclose(p.data, P0 - LR * G1 / (np.abs(G1) + eps), rtol=1e-12)


def test_adam_second_step_uses_bias_corrected_moments():
    p, eps = param(P0), 1e-8
    opt = optim.Adam([p], lr=LR, eps=eps)
    step(opt, p, G1)
    p1 = p.data.copy()
    step(opt, p, G2)
    m = B1 * (1 - B1) * G1 + (1 - B1) * G2
    v = B2 * (1 - B2) * G1**2 + (1 - B2) * G2**2
    expected = p1 - LR / (1 - B1**2) * m / (np.sqrt(v / (1 - B2**2)) + eps)
    np.testing.assert_allclose(p.data, expected, rtol=1e-12)


def test_adam_weight_decay_is_l2_inside_the_moments():
    p = param(P0)
    step(optim.Adam([p], lr=LR, weight_decay=WD), p, G1)
    g = G1 + WD * P0
    np.testing.assert_allclose(p.data, P0 - LR * g / (np.abs(g) + 1e-8), rtol=1e-12)


def test_adamw_decays_the_weights_then_takes_the_adam_step():
    p = param(P0)
    step(optim.AdamW([p], lr=LR, weight_decay=WD), p, G1)
    expected = P0 * (1 - LR * WD) - LR * G1 / (np.abs(G1) + 1e-8)
    np.testing.assert_allclose(p.data, expected, rtol=1e-12)


@pytest.mark.parametrize("make", [lambda p: optim.Adam([p], lr=LR),
                                  lambda p: optim.AdamW([p], lr=LR, weight_decay=WD)])
def test_a_0d_parameter_steps_as_a_one_element_vector_does(make):
    number, vector = param(1.5), param([1.5])
    first, second = make(number), make(vector)
    for g in (0.5, -0.25, 1.0):
        step(first, number, np.array(g))
        step(second, vector, np.array([g]))
    assert number.shape == () and number.data.item() == vector.data[0]


def test_defaults_match_pytorch():
    p = param(P0)
    assert optim.SGD([p]).defaults["lr"] == 1e-3
    adam, adamw = optim.Adam([p]).defaults, optim.AdamW([p]).defaults
    assert (adam["lr"], adam["betas"], adam["eps"], adam["weight_decay"]) == (1e-3, (0.9, 0.999), 1e-8, 0)
    assert adamw["weight_decay"] == 1e-2
    assert adam["lazy"] is False and adam["decay"] is None  # None: dense unless lazy (see below)
    assert optim.Adam([p]).param_groups[0]["decay"] == "dense"


# ---- row-sparse gradients: dense semantics and lazy ----------------------------------------------
SHAPE = (5, 2)
TABLE = np.arange(10, dtype=np.float64).reshape(SHAPE) / 10 - 0.4


def test_lazy_adam_steps_only_present_rows_with_the_parameter_step_count():
    p = param(TABLE)
    opt = optim.Adam([p], lr=LR, lazy=True)
    g_row1, g_row2 = np.array([0.5, -0.2]), np.array([0.3, 0.7])
    step(opt, p, sparse([1], g_row1, SHAPE))
    after_step1 = p.data.copy()
    step(opt, p, sparse([2], g_row2, SHAPE))
    # row 1 absent on step 2: its value and moments stay exactly as step 1 left them
    np.testing.assert_array_equal(p.data[1], after_step1[1])
    np.testing.assert_array_equal(opt.second_moment(p, 1), (1 - B2) * g_row1**2)
    # row 2 first present on step 2: one update of its moments, bias-corrected with t = 2
    m, v = (1 - B1) * g_row2, (1 - B2) * g_row2**2
    expected = TABLE[2] - LR / (1 - B1**2) * m / (np.sqrt(v / (1 - B2**2)) + 1e-8)
    np.testing.assert_allclose(p.data[2], expected, rtol=1e-12)
    np.testing.assert_array_equal(p.data[[0, 3, 4]], TABLE[[0, 3, 4]])


def test_lazy_sgd_starts_a_row_buffer_at_its_first_gradient():
    p, mu, damp = param(TABLE), 0.9, 0.5
    opt = optim.SGD([p], lr=LR, momentum=mu, dampening=damp, lazy=True)
    g1, g2 = np.array([1.0, -2.0]), np.array([0.5, 0.5])
    step(opt, p, sparse([0], [3.0, 3.0], SHAPE))
    step(opt, p, sparse([1], g1, SHAPE))  # row 1's first step: b = g, not (1 - dampening) g
    np.testing.assert_allclose(p.data[1], TABLE[1] - LR * g1, rtol=1e-15)
    step(opt, p, sparse([1], g2, SHAPE))
    np.testing.assert_allclose(p.data[1], TABLE[1] - LR * g1 - LR * (mu * g1 + (1 - damp) * g2), rtol=1e-14)


def test_dense_semantics_keep_moving_an_absent_row_and_decay_its_second_moment():
    p = param(TABLE)
    opt = optim.Adam([p], lr=LR)
    g = np.array([0.5, -0.2])
    step(opt, p, sparse([1], g, SHAPE))
    after_step1 = p.data[1].copy()
    for _ in range(3):
        step(opt, p, sparse([0], [1.0, 1.0], SHAPE))
    assert np.all(np.abs(p.data[1] - after_step1) > 1e-3)  # momentum carries the absent row on
    np.testing.assert_allclose(opt.second_moment(p, 1), B2**3 * (1 - B2) * g**2, rtol=1e-12)
    np.testing.assert_allclose(opt.second_moment(p, [1], bias_corrected=True),
                               [B2**3 * (1 - B2) * g**2 / (1 - B2**4)], rtol=1e-12)
    np.testing.assert_array_equal(p.data[2:], TABLE[2:])  # never-seen rows: m = 0, so no step


def test_a_sparse_gradient_means_its_dense_array_by_default():
    rng = np.random.default_rng(1)
    p_sparse, p_dense = param(TABLE), param(TABLE)
    opt_sparse, opt_dense = optim.AdamW([p_sparse], lr=LR), optim.AdamW([p_dense], lr=LR)
    for _ in range(6):
        grad = sparse(rng.integers(0, 5, size=4), rng.normal(size=(4, 2)), SHAPE)  # repeats sum
        step(opt_sparse, p_sparse, grad)
        step(opt_dense, p_dense, grad.to_dense())
    np.testing.assert_allclose(p_sparse.data, p_dense.data, rtol=1e-14)


CONFIGS = {
    "sgd": (optim.SGD, dict(lr=LR)),
    "sgd_momentum_damp_touched": (optim.SGD, dict(lr=LR, momentum=0.9, dampening=0.3, weight_decay=WD,
                                                  decay="touched")),
    "sgd_nesterov_catch_up": (optim.SGD, dict(lr=LR, momentum=0.8, nesterov=True, weight_decay=WD,
                                              decay="catch_up")),
    "adam_touched": (optim.Adam, dict(lr=LR, weight_decay=WD, decay="touched")),
    "adamw_dense": (optim.AdamW, dict(lr=LR, weight_decay=WD)),
    "adamw_touched": (optim.AdamW, dict(lr=LR, weight_decay=WD, decay="touched")),
    "adamw_catch_up": (optim.AdamW, dict(lr=LR, weight_decay=WD, decay="catch_up")),
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_lazy_equals_dense_when_every_row_is_present(name, layout):
    cls, options = CONFIGS[name]
    rng = np.random.default_rng(2)
    lazy_p, dense_p = param(TABLE), param(TABLE)
    lazy = cls([lazy_p], **{**options, "lazy": True})
    reference = cls([dense_p], **{**options, "decay": "dense"})  # every row present: all modes agree
    for _ in range(8):
        ids = np.r_[rng.permutation(5), rng.integers(0, 5, size=3)]  # every row, some twice
        grad = sparse(ids, rng.normal(size=(8, 2)), SHAPE)
        step(lazy, lazy_p, grad if layout == "sparse" else grad.to_dense())
        step(reference, dense_p, grad.to_dense())
    lazy.flush()
    np.testing.assert_allclose(lazy_p.data, dense_p.data, rtol=1e-12, atol=1e-15)


# ---- decay semantics ---------------------------------------------------------------------------
def run_rows(opt, p, schedule, value=1.0):
    """One step per entry of `schedule`: a gradient of `value` on those rows."""
    for rows in schedule:
        step(opt, p, sparse(rows, np.full((len(rows), 2), value), SHAPE))


def test_catch_up_equals_dense_decay_for_a_momentum_free_row_after_k_silent_steps():
    k = 7
    p_dense, p_catch = param(TABLE), param(TABLE)
    dense = optim.AdamW([p_dense], lr=LR, weight_decay=WD)
    catch = optim.AdamW([p_catch], lr=LR, weight_decay=WD, decay="catch_up")
    schedule = [[0, 1, 2, 3]] * k  # row 4 is never present: m = 0, only decay moves it
    run_rows(dense, p_dense, schedule)
    run_rows(catch, p_catch, schedule)
    np.testing.assert_allclose(p_dense.data[4], TABLE[4] * (1 - LR * WD) ** k, rtol=1e-14)
    np.testing.assert_array_equal(p_catch.data[4], TABLE[4])  # owed, not yet paid
    catch.flush()
    np.testing.assert_allclose(p_catch.data[4], p_dense.data[4], rtol=1e-14)
    np.testing.assert_allclose(p_catch.data, p_dense.data, rtol=1e-13)


def test_lazy_catch_up_matches_lazy_dense_decay_when_a_row_returns():
    # Lazy rows do not move while absent, so the only difference is when the decay is paid.
    schedule = [[0, 3], [1], [1, 2], [1], [1], [0, 2], [4]]
    p_dense, p_catch = param(TABLE), param(TABLE)
    with pytest.warns(optim.PerformanceWarning):
        dense = optim.AdamW([p_dense], lr=LR, weight_decay=WD, lazy=True, decay="dense")
    catch = optim.AdamW([p_catch], lr=LR, weight_decay=WD, lazy=True, decay="catch_up")
    for rows in schedule:
        run_rows(dense, p_dense, [rows])
        run_rows(catch, p_catch, [rows])
        np.testing.assert_allclose(p_catch.data[rows], p_dense.data[rows], rtol=1e-13)
    assert not np.allclose(p_catch.data[3], p_dense.data[3])  # row 3: absent since step 1
    catch.flush()
    np.testing.assert_allclose(p_catch.data, p_dense.data, rtol=1e-13)


def test_sgd_catch_up_equals_dense_weight_decay_without_momentum():
    rng = np.random.default_rng(3)
    p_dense, p_catch = param(TABLE), param(TABLE)
    dense = optim.SGD([p_dense], lr=LR, weight_decay=WD)
    catch = optim.SGD([p_catch], lr=LR, weight_decay=WD, lazy=True, decay="catch_up")
    for _ in range(12):
        grad = sparse(rng.choice(5, size=2, replace=False), rng.normal(size=(2, 2)), SHAPE)
        step(dense, p_dense, grad)
        step(catch, p_catch, grad)
    catch.flush()
    np.testing.assert_allclose(p_catch.data, p_dense.data, rtol=1e-13)


def test_catch_up_pays_the_exact_product_when_lr_changes():
    p = param(TABLE)
    opt = optim.AdamW([p], lr=LR, weight_decay=WD, lazy=True, decay="catch_up")
    lrs = [0.1, 0.3, 0.05, 0.2]
    for lr in lrs:
        opt.param_groups[0]["lr"] = lr
        run_rows(opt, p, [[0]])
    opt.flush()
    np.testing.assert_allclose(p.data[1:], TABLE[1:] * np.prod([1 - lr * WD for lr in lrs]), rtol=1e-14)
    before = p.data.copy()
    opt.flush()  # nothing is owed any more
    np.testing.assert_array_equal(p.data, before)


def test_touched_decay_leaves_absent_rows_exactly_unchanged():
    p = param(TABLE)
    opt = optim.AdamW([p], lr=LR, weight_decay=WD, lazy=True, decay="touched")
    run_rows(opt, p, [[0], [0, 1], [1]])
    np.testing.assert_array_equal(p.data[2:], TABLE[2:])
    opt.flush()  # touched owes nothing
    np.testing.assert_array_equal(p.data[2:], TABLE[2:])


def test_an_explicit_dense_decay_shrinks_silent_rows_every_step_even_when_lazy():
    p = param(TABLE)
    with pytest.warns(optim.PerformanceWarning):
        opt = optim.AdamW([p], lr=LR, weight_decay=WD, lazy=True, decay="dense")
    assert opt.param_groups[0]["decay"] == "dense"
    run_rows(opt, p, [[0]] * 4)
    np.testing.assert_allclose(p.data[1:], TABLE[1:] * (1 - LR * WD) ** 4, rtol=1e-14)


@pytest.mark.parametrize("cls, lazy, wd, chosen", [
    (optim.AdamW, True, WD, "catch_up"), (optim.SGD, True, WD, "catch_up"),
    (optim.Adam, True, WD, "touched"),  # Adam's L2 decay has no factor to catch up
    (optim.AdamW, True, 0.0, "dense"),  # no decay to apply: nothing to choose
    (optim.AdamW, False, WD, "dense"), (optim.SGD, False, WD, "dense"), (optim.Adam, False, WD, "dense"),
])
def test_decay_left_unset_is_dense_unless_a_lazy_step_has_decay_to_apply(cls, lazy, wd, chosen):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default never warns
        opt = cls([param(TABLE)], lr=LR, weight_decay=wd, lazy=lazy)
    assert opt.param_groups[0]["decay"] == chosen
    assert opt.defaults["decay"] is None  # a group added later chooses for its own lazy and wd


def test_lazy_adamw_by_default_leaves_absent_rows_alone_and_equals_explicit_catch_up():
    # the default for a lazy step is O(rows present): an absent row is not read or written
    p_default, p_catch = param(TABLE), param(TABLE)
    default = optim.AdamW([p_default], lr=LR, weight_decay=WD, lazy=True)
    catch = optim.AdamW([p_catch], lr=LR, weight_decay=WD, lazy=True, decay="catch_up")
    for rows in [[0, 3], [1], [1, 2]]:
        run_rows(default, p_default, [rows])
        run_rows(catch, p_catch, [rows])
        np.testing.assert_array_equal(p_default.data, p_catch.data)
    np.testing.assert_array_equal(p_default.data[4], TABLE[4])  # never present, never touched
    default.flush()
    np.testing.assert_allclose(p_default.data[4], TABLE[4] * (1 - LR * WD) ** 3, rtol=1e-14)


# ---- empty gradients, tied tables ----------------------------------------------------------
@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("lazy", [False, True])
def test_empty_sparse_gradient_is_a_no_op(name, lazy):
    cls, options = CONFIGS[name]
    p = param(TABLE)
    opt = cls([p], **{**options, "lazy": lazy})
    empty = RowSparse(np.zeros(0, np.int64), np.zeros((0, 2)), SHAPE)
    step(opt, p, empty)  # before any state exists
    assert opt.step_count(p) == 0 and p not in opt.state
    run_rows(opt, p, [[1, 3]])
    values, state = p.data.copy(), opt.state_dict()["state"]
    step(opt, p, empty)
    np.testing.assert_array_equal(p.data, values)
    assert opt.step_count(p) == 1
    for key, saved in state[0].items():
        np.testing.assert_array_equal(opt.state[p][key], saved)


class TiedLM(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.emb = nn.Embedding(*table.shape, sparse=True, dtype=np.float64)
        self.head = nn.Linear(table.shape[1], table.shape[0], bias=False, dtype=np.float64)
        self.emb.weight.data[...] = table
        self.head.weight = self.emb.weight  # one Parameter, two roles

    def forward(self, ids):
        return self.head(self.emb(ids))


IDS, TARGETS = np.array([0, 2, 2, 4]), np.array([1, 1, 3, 0])


def both_path_gradients(table):
    """The lookup path's and the classifier path's gradients, from an untied copy."""
    emb = nn.Embedding(*table.shape, sparse=True, dtype=np.float64)
    head = nn.Linear(table.shape[1], table.shape[0], bias=False, dtype=np.float64)
    emb.weight.data[...] = table
    head.weight.data[...] = table
    F.cross_entropy(head(emb(IDS)), TARGETS).backward()
    return emb.weight.grad.to_dense(), head.weight.grad


@pytest.mark.parametrize("lazy", [False, True])
def test_tied_parameter_is_stepped_once_with_the_sum_of_both_gradients(lazy):
    model = TiedLM(TABLE)
    params = list(model.parameters())
    assert len(params) == 1
    opt = optim.Adam(params, lr=LR, lazy=lazy)
    F.cross_entropy(model(IDS), TARGETS).backward()
    lookup, classifier = both_path_gradients(TABLE)
    total = lookup + classifier
    np.testing.assert_allclose(model.emb.weight.grad, total, rtol=1e-12)
    opt.step()
    expected = TABLE - LR * total / (np.abs(total) + 1e-8)  # one Adam step on the sum
    np.testing.assert_allclose(model.emb.weight.data, expected, rtol=1e-10, atol=1e-15)
    assert model.head.weight.data is model.emb.weight.data
    assert opt.step_count(params[0]) == 1
    np.testing.assert_array_equal(opt.last_touched(params[0]), np.ones(5))  # dense: every row


# ---- parameter groups --------------------------------------------------------------------------
def test_parameter_groups_use_their_own_settings():
    a, b = param(P0), param(P0)
    opt = optim.SGD([{"params": [a], "lr": 0.5, "weight_decay": WD}, {"params": b}], lr=LR)
    a.grad, b.grad = G1, G1
    opt.step()
    np.testing.assert_allclose(a.data, P0 - 0.5 * (G1 + WD * P0), rtol=1e-15)
    np.testing.assert_allclose(b.data, P0 - LR * G1, rtol=1e-15)
    assert opt.param_groups[1]["lr"] == LR and opt.param_groups[1]["weight_decay"] == 0


def test_embedding_group_without_decay_beside_a_decayed_head():
    model = TiedLM(TABLE)
    model.head = nn.Linear(2, 5, dtype=np.float64)  # untie: the head gets its own weight
    opt = optim.AdamW([{"params": model.emb.parameters(), "weight_decay": 0.0},
                       {"params": model.head.parameters()}], lr=LR, weight_decay=WD, lazy=True)
    head_before = model.head.weight.data.copy()
    F.cross_entropy(model(IDS), TARGETS).backward()
    opt.step()
    np.testing.assert_array_equal(model.emb.weight.data[[1, 3]], TABLE[[1, 3]])  # unread, undecayed
    g = model.head.weight.grad
    expected = head_before * (1 - LR * WD) - LR * g / (np.abs(g) + 1e-8)
    np.testing.assert_allclose(model.head.weight.data, expected, rtol=1e-10)


def test_add_param_group_later():
    a, b = param(P0), param(P0)
    opt = optim.SGD([a], lr=LR)
    opt.add_param_group({"params": [b], "lr": 0.2})
    b.grad = G1
    opt.step()
    np.testing.assert_allclose(b.data, P0 - 0.2 * G1, rtol=1e-15)


# ---- in place, versions, zero_grad -----------------------------------------------------------
def test_step_updates_in_place_and_a_pending_backward_notices():
    w = nn.Parameter(np.ones((3, 2)))
    x = mg.tensor(np.ones((4, 3)))
    array, view = w.data, w.data[0]
    loss = (x @ w).sum()  # the matmul saved w for its backward
    w.grad = np.ones((3, 2))
    version = w._version
    optim.SGD([w], lr=LR).step()
    assert w.data is array and w._version == version + 1
    np.testing.assert_allclose(view, 1 - LR)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_zero_grad_forgets_gradients():
    p = param(P0)
    opt = optim.SGD([p])
    p.grad = G1
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: nothing happens
    np.testing.assert_array_equal(p.data, P0)


def test_step_evaluates_the_closure_with_grad_enabled():
    p = param(P0)
    opt = optim.SGD([p], lr=LR)

    def closure():
        opt.zero_grad()
        loss = (mg.Tensor(P0) * p).sum()
        loss.backward()
        return loss

    with mg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == pytest.approx(P0 @ P0)
    np.testing.assert_allclose(p.data, P0 - LR * P0, rtol=1e-15)


# ---- state_dict --------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, options", [
    (optim.SGD, dict(lr=LR, momentum=0.9, dampening=0.2, weight_decay=WD, lazy=True, decay="catch_up")),
    (optim.AdamW, dict(lr=LR, weight_decay=WD, lazy=True, decay="catch_up")),
    (optim.Adam, dict(lr=LR, weight_decay=WD)),
])
def test_state_dict_round_trip_resumes_exactly(cls, options):
    rng = np.random.default_rng(4)
    grads = [sparse(rng.choice(5, size=2, replace=False), rng.normal(size=(2, 2)), SHAPE) for _ in range(8)]
    p = param(TABLE)
    opt = cls([p], **options)
    for g in grads[:4]:
        step(opt, p, g)
    saved, values = opt.state_dict(), p.data.copy()
    for g in grads[4:]:
        step(opt, p, g)
    q = param(values)
    resumed = cls([q], **{**options, "lr": 1.0})  # the saved lr wins
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == LR
    for g in grads[4:]:
        step(resumed, q, g)
    np.testing.assert_array_equal(q.data, p.data)
    np.testing.assert_array_equal(resumed.last_touched(q), opt.last_touched(p))


def test_state_dict_is_a_snapshot():
    p = param(P0)
    opt = optim.Adam([p], lr=LR)
    step(opt, p, G1)
    saved = opt.state_dict()
    first_moment = saved["state"][0]["exp_avg"].copy()
    step(opt, p, G2)
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"], first_moment)


# ---- introspection -----------------------------------------------------------------------------
def test_last_touched_records_the_step_each_row_last_had_a_gradient():
    p = param(TABLE)
    opt = optim.AdamW([p], lazy=True)
    np.testing.assert_array_equal(opt.last_touched(p), np.zeros(5))
    run_rows(opt, p, [[1, 3], [3]])
    np.testing.assert_array_equal(opt.last_touched(p), [0, 1, 0, 2, 0])
    step(opt, p, np.zeros(SHAPE))  # a dense gradient names every row
    np.testing.assert_array_equal(opt.last_touched(p), [3, 3, 3, 3, 3])
    assert opt.step_count(p) == 3


def test_lazy_second_moment_of_a_silent_row_stays_put():
    p = param(TABLE)
    opt = optim.Adam([p], lazy=True)
    run_rows(opt, p, [[2], [0], [0], [0]], value=0.5)
    np.testing.assert_allclose(opt.second_moment(p, 2), (1 - B2) * 0.25 * np.ones(2), rtol=1e-15)
    np.testing.assert_array_equal(opt.second_moment(p)[[1, 3, 4]], 0)


def test_optimizer_repr_lists_each_group():
    text = repr(optim.AdamW([param(P0)], lr=0.5))
    assert "AdamW (" in text and "Parameter Group 0" in text and "lr: 0.5" in text


def test_a_vector_parameter_has_one_row_per_element():
    bias = param(P0)
    opt = optim.SGD([bias], lr=LR, momentum=0.5, lazy=True, decay="catch_up", weight_decay=WD)
    step(opt, bias, RowSparse([2], [1.0], (3,)))  # a row-sparse gradient of a vector
    np.testing.assert_allclose(bias.data, [P0[0], P0[1], P0[2] - LR * (1.0 + WD * P0[2])], rtol=1e-15)
    saved = opt.state_dict()
    resumed = optim.SGD([param(bias.data)], lr=LR, momentum=0.5, lazy=True, decay="catch_up",
                        weight_decay=WD)
    resumed.load_state_dict(saved)
    state = resumed.state[resumed.param_groups[0]["params"][0]]
    assert state["last_touched"].dtype == np.int64 and state["momentum_buffer"].dtype == np.float64
    np.testing.assert_array_equal(state["last_touched"], [0, 0, 1])
