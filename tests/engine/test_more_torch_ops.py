"""More of the ops PyTorch users reach for (issue 33): binary_cross_entropy and its logits form,
softmin, full / full_like (zeros_like, ones_like), Tensor.repeat, neg, numpy's axis= for the
reductions that took only dim=, x ** 0 at 0, indexing with ints and arrays together read as
PyTorch reads it, and cumsum, gather, tril, triu, isnan / isinf / isfinite and F.one_hot. Each
differentiable one gradchecked in float64 (0-d included) and compared with torch (live or
recorded) forward and backward; bad arguments refused with a message naming them."""

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

rng = np.random.default_rng(0)


def _check(fn, *values):
    leaves = [mg.tensor(np.asarray(v, np.float64), requires_grad=True) for v in values]
    report = mg.gradcheck(fn, leaves)
    assert report.ok, str(report)


# name: fn(lib, F, *inputs) for minigrad or torch; comparisons below name their case
CASES = {}


def case(name, fn):
    CASES[name] = fn
    return name


def _leaf(lib, value):
    """A float array as a tensor that requires grad; an int array (an index) as a plain one."""
    value = np.asarray(value)
    return lib.tensor(value, requires_grad=True) if value.dtype.kind == "f" else lib.tensor(value)


def _run(lib, functional, name, values):
    """CASES[name]'s value and the gradient of sum(w * value) for each input (w seeded)."""
    leaves = [_leaf(lib, v) for v in values]
    out = CASES[name](lib, functional, *leaves)
    weights = np.random.default_rng(2).normal(size=tuple(out.shape))
    (out * lib.tensor(weights)).sum().backward()
    return out, [getattr(t, "grad", None) for t in leaves]


def torch_case(name, values):
    return _run(torch, TF, name, values)


def _against_torch(oracle, name, *values, rtol=1e-10, atol=1e-12):
    values = [np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v) for v in values]
    out_t, grads_t = oracle(torch_case, name, values)
    out_m, grads_m = _run(mg, F, name, values)
    assert out_m.shape == out_t.shape
    np.testing.assert_allclose(out_m.data, out_t, rtol=rtol, atol=atol)
    for mine, theirs, value in zip(grads_m, grads_t, values, strict=True):
        if value.dtype.kind != "f":
            continue
        expected = np.zeros(value.shape) if theirs is None else theirs
        got = np.zeros(value.shape) if mine is None else mg.engine.to_dense(mine)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


PROBS = rng.uniform(0.05, 0.95, size=(4, 3))
TARGETS = rng.uniform(0, 1, size=(4, 3))
LOGITS = rng.normal(size=(4, 3)) * 3
WEIGHT = np.array([0.5, 1.0, 2.0])
POS_WEIGHT = np.array([0.25, 1.0, 4.0])


# ---- binary cross-entropy --------------------------------------------------------------------------

def _bce(reduction, weighted):
    def fn(lib, TF, p, y, weight):
        return TF.binary_cross_entropy(p, y, weight=weight.detach() if weighted else None,
                                       reduction=reduction)
    return fn


def _bce_logits(reduction, options):
    def fn(lib, TF, x, y, weight, pos_weight):
        return TF.binary_cross_entropy_with_logits(
            x, y, weight=weight.detach() if options in ("weight", "both") else None, reduction=reduction,
            pos_weight=pos_weight.detach() if options in ("pos_weight", "both") else None)
    return fn


REDUCTIONS = ["mean", "sum", "none"]
BCE_CASES = [case(f"bce_{r}_{w}", _bce(r, w)) for r in REDUCTIONS for w in (False, True)]
BCE_LOGITS_CASES = [case(f"bce_logits_{r}_{o}", _bce_logits(r, o)) for r in REDUCTIONS
                    for o in ("plain", "weight", "pos_weight", "both")]


@pytest.mark.parametrize("name", BCE_CASES)
def test_binary_cross_entropy_matches_torch_for_both_inputs(name, oracle):
    _against_torch(oracle, name, PROBS, TARGETS, WEIGHT)


@pytest.mark.parametrize("name", BCE_LOGITS_CASES)
def test_binary_cross_entropy_with_logits_matches_torch_for_both_inputs(name, oracle):
    _against_torch(oracle, name, LOGITS, TARGETS, WEIGHT, POS_WEIGHT)


CERTAIN = case("bce_certain", lambda lib, TF, p, y: TF.binary_cross_entropy(p, y, reduction="none"))
FAR_OUT = case("bce_logits_far_out",
               lambda lib, TF, x, y: TF.binary_cross_entropy_with_logits(x, y, reduction="none"))


def test_binary_cross_entropy_at_certain_probabilities_is_clamped_as_torch(oracle):
    p, y = np.array([0.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 1.0])
    _against_torch(oracle, CERTAIN, p, y, rtol=1e-7)
    loss = F.binary_cross_entropy(mg.tensor(p), y, reduction="none")
    np.testing.assert_array_equal(loss.data, [100.0, 100.0, 0.0, 0.0])


def test_binary_cross_entropy_with_logits_is_finite_far_out(oracle):
    x, y = np.array([-800.0, 800.0, -30.0, 30.0]), np.array([1.0, 0.0, 0.5, 0.5])
    _against_torch(oracle, FAR_OUT, x, y)
    loss = F.binary_cross_entropy_with_logits(mg.tensor(x), y, reduction="none")
    assert np.isfinite(loss.data).all()


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_binary_losses_gradcheck_in_float64_zero_d_too(shape):
    p, y, x = rng.uniform(0.1, 0.9, shape), rng.uniform(0, 1, shape), rng.normal(size=shape)
    _check(lambda p, y: F.binary_cross_entropy(p, y), p, y)
    _check(lambda p, y: F.binary_cross_entropy(p, y, reduction="none") * 1.5, p, y)
    _check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=2.0), x, y)
    _check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"), x, y)


ZERO_D_BCE = case("bce_zero_d", lambda lib, TF, p, y: TF.binary_cross_entropy(p, y))
ZERO_D_BCE_LOGITS = case("bce_logits_zero_d", lambda lib, TF, x, y: TF.binary_cross_entropy_with_logits(x, y))


def test_binary_losses_of_zero_d_inputs_match_torch(oracle):
    _against_torch(oracle, ZERO_D_BCE, 0.3, 0.8)
    _against_torch(oracle, ZERO_D_BCE_LOGITS, -1.2, 0.8)


def torch_binary_loss(logits, x, y, reduction):
    loss = TF.binary_cross_entropy_with_logits if logits else TF.binary_cross_entropy
    return loss(torch.tensor(x), torch.tensor(y), reduction=reduction)


@pytest.mark.parametrize("logits", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_binary_losses_of_an_empty_batch_are_nan_for_the_mean(logits, reduction, oracle):
    empty = np.zeros((0, 3))
    loss = F.binary_cross_entropy_with_logits if logits else F.binary_cross_entropy
    ours = loss(mg.tensor(empty), empty, reduction=reduction)
    np.testing.assert_array_equal(ours.data, oracle(torch_binary_loss, logits, empty, empty, reduction))


def test_binary_losses_compute_half_in_float32(oracle):
    x = np.array([-12.0, 0.5, 11.0], np.float16)
    y = np.array([0.0, 1.0, 1.0], np.float16)
    ours = F.binary_cross_entropy_with_logits(mg.tensor(x), y)
    assert ours.dtype == np.float16
    theirs = oracle(torch_binary_loss, True, x, y, "mean")
    np.testing.assert_allclose(float(ours.item()), float(theirs), rtol=1e-3)


def torch_binary_loss_dtypes(x, y):
    return TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y))


def test_binary_losses_promote_their_input_and_target_as_torch(oracle):
    x, y = np.array([0.5, -1.0], np.float32), np.array([1.0, 0.25], np.float64)
    ours = F.binary_cross_entropy_with_logits(mg.tensor(x), y)
    theirs = oracle(torch_binary_loss_dtypes, x, y)
    assert ours.dtype == theirs.dtype == np.float64
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-6)


BINARY_ERRORS = [
    (lambda: F.binary_cross_entropy(mg.tensor(PROBS), TARGETS[:2]), mg.ShapeError,
     r"binary_cross_entropy: target has shape \(2, 3\), expected the input's shape \(4, 3\)"),
    (lambda: F.binary_cross_entropy(mg.tensor(PROBS * 2), TARGETS), ValueError,
     r"every entry of input must be a probability in \[0, 1\]"),
    (lambda: F.binary_cross_entropy(mg.tensor(PROBS), TARGETS, reduction="avg"), ValueError,
     r"reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda: F.binary_cross_entropy(mg.tensor(PROBS), TARGETS, weight=np.ones(4)), mg.ShapeError,
     r"weight has shape \(4,\), which does not broadcast to the input's shape \(4, 3\)"),
    (lambda: F.binary_cross_entropy_with_logits(mg.tensor(LOGITS), TARGETS, pos_weight=np.ones(2)),
     mg.ShapeError, r"pos_weight has shape \(2,\), which does not broadcast"),
    (lambda: F.binary_cross_entropy_with_logits(mg.tensor([1, 2]), np.array([0.0, 1.0])), TypeError,
     r"input must be a float tensor, got Tensor of dtype int64"),
]


@pytest.mark.parametrize("call, error, message", BINARY_ERRORS)
def test_binary_losses_name_a_bad_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- softmin -------------------------------------------------------------------------------------------

SOFTMIN = {dim: case(f"softmin_{dim}", lambda lib, TF, x, dim=dim: TF.softmin(x, dim=dim))
           for dim in (0, 1, -1)}


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin_matches_torch(dim, oracle):
    _against_torch(oracle, SOFTMIN[dim], LOGITS)


def test_softmin_gradchecks_zero_d_too(oracle):
    _check(lambda x: F.softmin(x, dim=1), LOGITS)
    _check(lambda x: F.softmin(x, dim=0), np.array(0.7))
    _against_torch(oracle, SOFTMIN[0], 0.7)


def test_softmin_puts_the_most_weight_on_the_smallest_entry():
    p = F.softmin(mg.tensor([3.0, -1.0, 2.0]), dim=0).data
    assert p.argmax() == 1 and p.sum() == pytest.approx(1.0)


# ---- full, full_like, zeros_like, ones_like --------------------------------------------------------------

def torch_full(size, value):
    return torch.full(size, value)


@pytest.mark.parametrize("value", [4, 2.5, True, -3])
def test_full_infers_its_dtype_from_the_value_as_torch(value, oracle):
    ours, theirs = mg.full((2, 3), value), oracle(torch_full, (2, 3), value)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.data, theirs)


def torch_full_like(base, fill):
    return torch.full_like(torch.tensor(base), fill)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float16])
def test_full_like_keeps_the_dtype_and_shape_and_truncates_as_torch(dtype, oracle):
    base = np.arange(6).reshape(2, 3).astype(dtype)
    for fill in (2.7, 4, -1):
        ours, theirs = mg.full_like(mg.tensor(base), fill), oracle(torch_full_like, base, fill)
        assert ours.dtype == theirs.dtype and ours.shape == (2, 3)
        np.testing.assert_array_equal(ours.data, theirs)
    assert mg.zeros_like(mg.tensor(base)).dtype == dtype and (mg.ones_like(base).data == 1).all()


def test_full_takes_a_dtype_a_zero_d_size_and_requires_grad():
    t = mg.full((), 1.5, dtype=np.float64, requires_grad=True)
    assert t.shape == () and t.dtype == np.float64 and t.requires_grad
    assert mg.full(3, 0).shape == (3,)
    assert mg.full_like(mg.zeros(2), 7, dtype=np.int64).dtype == np.int64


def test_full_names_a_bad_argument():
    with pytest.raises(mg.ShapeError, match=r"full: size \(2, -3\) has a negative dimension"):
        mg.full((2, -3), 1.0)
    with pytest.raises(RuntimeError, match="negative dimension"):  # as PyTorch users catch it
        mg.zeros(-1, 2)
    with pytest.raises(TypeError, match="full: fill_value must be a number, got list"):
        mg.full((2,), [1, 2])


# ---- Tensor.repeat ---------------------------------------------------------------------------------------

REPEATS = [((2, 3), (2, 1)), ((2, 3), (1, 1)), ((2, 3), (3, 2, 2)), ((4,), (2, 1, 3)), ((), (3,)),
           ((), (2, 2)), ((2, 3), (0, 2))]


REPEAT = case("repeat", lambda lib, TF, x, repeats: x.repeat(*repeats.tolist()))


@pytest.mark.parametrize("shape, repeats", REPEATS)
def test_repeat_matches_torch(shape, repeats, oracle):
    x = np.random.default_rng(1).normal(size=shape)
    _against_torch(oracle, REPEAT, x, np.array(repeats))


@pytest.mark.parametrize("shape, repeats", REPEATS[:-1])
def test_repeat_gradchecks_zero_d_too(shape, repeats):
    _check(lambda x: x.repeat(repeats), rng.normal(size=shape))


def test_repeat_names_a_bad_argument():
    with pytest.raises(mg.ShapeError, match=r"repeat\(\): 1 sizes \(2,\) are fewer than the tensor's 2 axes"):
        mg.zeros(2, 3).repeat(2)
    with pytest.raises(ValueError, match=r"repeat\(\): sizes \(2, -1\) must not be negative"):
        mg.zeros(2, 3).repeat(2, -1)


# ---- neg, axis=, x ** 0 --------------------------------------------------------------------------------

NEG = case("neg", lambda lib, TF, x: x.neg())
POW_ZERO = case("pow_zero", lambda lib, TF, x: x ** 0)
POW_ZERO_FLOAT = case("pow_zero_float", lambda lib, TF, x: x ** 0.0)


def test_neg_is_minus(oracle):
    _against_torch(oracle, NEG, LOGITS)
    _check(lambda x: x.neg(), np.array(0.5))


@pytest.mark.parametrize("op", ["var", "std", "prod", "logsumexp"])
def test_numpys_axis_spelling_works_where_dim_did(op):
    x = mg.tensor(LOGITS)
    by_axis = getattr(x, op)(axis=1, keepdims=True)
    by_dim = getattr(x, op)(dim=1, keepdim=True)
    np.testing.assert_array_equal(by_axis.data, by_dim.data)
    assert by_axis.shape == (4, 1)
    with pytest.raises(TypeError, match=f"{op}\\(\\): got both axis=1 and dim=1"):
        getattr(x, op)(1, axis=1)


def test_all_and_any_take_axis_too():
    x = mg.tensor(np.array([[True, False], [True, True]]))
    np.testing.assert_array_equal(x.all(axis=1).data, [False, True])
    np.testing.assert_array_equal(x.any(axis=0, keepdims=True).data, [[True, True]])


def test_the_power_zero_is_flat_at_zero_as_torch(oracle):
    _against_torch(oracle, POW_ZERO, np.array([0.0, 2.0, -1.0]))
    _against_torch(oracle, POW_ZERO_FLOAT, np.array([0.0]))


# ---- indexing with ints and arrays together ------------------------------------------------------------

X6 = rng.normal(size=(2, 5, 6, 5, 3, 4))
IDS = rng.integers(0, 4, (2, 1, 1, 5, 1, 1))
FEW_IDS = rng.integers(0, 2, (1, 3, 1, 1, 1, 1))
INDEXES = {
    "int_then_array_apart": lambda lib, TF, x, ids, few: x[1, :, 3:6:2, ids, 0:2],
    "int_array_int_array": lambda lib, TF, x, ids, few: x[1, few, 2, ids, 2],
    "ellipsis_int_array": lambda lib, TF, x, ids, few: x[..., 1, ids],
    "int_next_to_array": lambda lib, TF, x, ids, few: x[1, ids],
    "none_int_array": lambda lib, TF, x, ids, few: x[None, 1, :, ids],
}
CASES.update(INDEXES)


@pytest.mark.parametrize("name", list(INDEXES))
def test_ints_among_array_indices_place_axes_as_torch(name, oracle):
    _against_torch(oracle, name, X6, IDS, FEW_IDS)


def test_an_int_and_an_array_apart_is_where_numpy_differs():
    ours = mg.tensor(X6)[1, :, 3:6:2, IDS, 0:2]
    assert ours.shape == (5, 2, 2, 1, 1, 5, 1, 1, 2, 4)
    assert X6[1, :, 3:6:2, IDS, 0:2].shape == (2, 1, 1, 5, 1, 1, 5, 2, 2, 4)  # numpy's reading


# ---- cumsum, gather, tril, triu, isnan / isinf / isfinite, one_hot -----------------------------------

SCAN = {dim: case(f"cumsum_{dim}", lambda lib, TF, x, dim=dim: x.cumsum(dim)) for dim in (0, 1, -1)}


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_matches_torch(dim, oracle):
    _against_torch(oracle, SCAN[dim], LOGITS)


def test_cumsum_gradchecks_zero_d_too_and_keeps_ints_as_int64():
    _check(lambda x: x.cumsum(1) * x, LOGITS)
    _check(lambda x: x.cumsum(0), np.array(0.4))
    assert mg.tensor(np.array([200, 100], np.uint8)).cumsum(0).data.tolist() == [200, 300]
    with pytest.raises(IndexError, match=r"cumsum\(\): dim 2 is out of range"):
        mg.zeros(3).cumsum(2)


GATHER = {dim: case(f"gather_{dim}", lambda lib, TF, x, index, dim=dim: x.gather(dim, index))
          for dim in (0, 1, 2, -1)}


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_matches_torch(dim, oracle):
    rng_ = np.random.default_rng(3)
    x, index = rng_.normal(size=(4, 5, 6)), rng_.integers(0, 3, (3, 4, 5))  # a repeated read adds
    _against_torch(oracle, GATHER[dim], x, index)


def test_gather_gradchecks_and_names_a_bad_index():
    index = np.array([[2, 0, 2], [1, 1, 0]])
    _check(lambda x: x.gather(1, index), LOGITS[:2])
    _check(lambda x: x.gather(0, np.array(0)), np.array(1.5))
    with pytest.raises(mg.ShapeError, match=r"gather\(\): index has shape \(5, 3\), which does not fit"):
        mg.zeros(4, 3).gather(1, np.zeros((5, 3), np.int64))
    with pytest.raises(IndexError, match=r"gather: index 3 at index\[0, 1\] is out of range for dim 1"):
        mg.zeros(4, 3).gather(1, np.array([[0, 3]]))
    with pytest.raises(TypeError, match="index must hold integers"):
        mg.zeros(4, 3).gather(1, np.zeros((1, 1)))


TRIANGLES = {(which, k): case(f"{which}_{k}", lambda lib, TF, x, which=which, k=k: getattr(x, which)(k))
             for which in ("tril", "triu") for k in (-2, 0, 1, 4)}


@pytest.mark.parametrize("which, k", list(TRIANGLES))
def test_tril_and_triu_match_torch(which, k, oracle):
    _against_torch(oracle, TRIANGLES[which, k], np.random.default_rng(4).normal(size=(2, 3, 4)))


def test_tril_needs_a_matrix():
    _check(lambda x: x.tril(1) + x.triu(), LOGITS)
    with pytest.raises(mg.ShapeError, match=r"tril\(\): the tensor has shape \(3,\); it needs at least 2"):
        mg.zeros(3).tril()


def torch_tests_of_values(x):
    t = torch.tensor(x)
    return t.isnan(), t.isinf(), t.isfinite()


def test_isnan_isinf_isfinite_match_torch(oracle):
    x = np.array([-np.inf, 0.0, np.inf, np.nan, 1.1])
    t = mg.tensor(x)
    theirs_all = oracle(torch_tests_of_values, x)
    for ours, theirs in zip((t.isnan(), t.isinf(), t.isfinite()), theirs_all, strict=True):
        assert ours.dtype == np.bool_
        np.testing.assert_array_equal(ours.data, theirs)


def torch_one_hot(ids, num_classes):
    return TF.one_hot(torch.tensor(ids), num_classes)


@pytest.mark.parametrize("num_classes", [-1, 6])
def test_one_hot_matches_torch(num_classes, oracle):
    ids = np.array([[1, 2, 4], [0, 3, 5]])
    ours = F.one_hot(ids, num_classes)
    theirs = oracle(torch_one_hot, ids, num_classes)
    assert ours.dtype == theirs.dtype == np.int64
    np.testing.assert_array_equal(ours.data, theirs)


def test_one_hot_names_a_bad_id():
    with pytest.raises(IndexError, match=r"one_hot: class id 6 at tensor\[1\] is out of range for num_cl"):
        F.one_hot(np.array([1, 6]), 6)
    with pytest.raises(TypeError, match="one_hot: ids must be integers"):
        F.one_hot(np.array([1.0]), 3)

