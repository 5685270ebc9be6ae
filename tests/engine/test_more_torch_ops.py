"""More of the ops PyTorch users reach for (issue 33): binary_cross_entropy and its logits form,
softmin, full / full_like (zeros_like, ones_like), Tensor.repeat, neg, numpy's axis= for the
reductions that took only dim=, x ** 0 at 0, and indexing with ints and arrays together read as
PyTorch reads it. Each differentiable one gradchecked in float64 (0-d included) and compared with
torch forward and backward; bad arguments refused with a message naming them."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F

rng = np.random.default_rng(0)


def _torch():
    return pytest.importorskip("torch")


def _check(fn, *values):
    leaves = [mg.tensor(np.asarray(v, np.float64), requires_grad=True) for v in values]
    report = mg.gradcheck(fn, leaves)
    assert report.ok, str(report)


def _against_torch(fn, *values, rtol=1e-10, atol=1e-12):
    """fn's value and the gradient of sum(w * fn) for every input, minigrad's against torch's."""
    torch = _torch()
    ours = [mg.tensor(np.asarray(v, np.float64), requires_grad=True) for v in values]
    theirs = [torch.tensor(np.asarray(v, np.float64), requires_grad=True) for v in values]
    out_m, out_t = fn(mg, F, *ours), fn(torch, torch.nn.functional, *theirs)
    assert out_m.shape == tuple(out_t.shape)
    np.testing.assert_allclose(out_m.data, out_t.detach().numpy(), rtol=rtol, atol=atol)
    w = rng.normal(size=out_m.shape)
    (out_m * w).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    for m, t in zip(ours, theirs, strict=True):
        expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(mg.engine.to_dense(m.grad) if m.grad is not None else 0 * expected,
                                   expected, rtol=rtol, atol=atol)


PROBS = rng.uniform(0.05, 0.95, size=(4, 3))
TARGETS = rng.uniform(0, 1, size=(4, 3))
LOGITS = rng.normal(size=(4, 3)) * 3
WEIGHT = np.array([0.5, 1.0, 2.0])
POS_WEIGHT = np.array([0.25, 1.0, 4.0])


# ---- binary cross-entropy --------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch_for_both_inputs(reduction, weighted):
    def fn(lib, TF, p, y):
        weight = lib.tensor(WEIGHT) if weighted else None
        return TF.binary_cross_entropy(p, y, weight=weight, reduction=reduction)

    _against_torch(fn, PROBS, TARGETS)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits_matches_torch_for_both_inputs(reduction, options):
    def fn(lib, TF, x, y):
        weight = lib.tensor(WEIGHT) if options in ("weight", "both") else None
        pos_weight = lib.tensor(POS_WEIGHT) if options in ("pos_weight", "both") else None
        return TF.binary_cross_entropy_with_logits(x, y, weight=weight, reduction=reduction,
                                                   pos_weight=pos_weight)

    _against_torch(fn, LOGITS, TARGETS)


def test_binary_cross_entropy_at_certain_probabilities_is_clamped_as_torch():
    p, y = np.array([0.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 1.0])
    _against_torch(lambda lib, TF, p, y: TF.binary_cross_entropy(p, y, reduction="none"), p, y, rtol=1e-7)
    loss = F.binary_cross_entropy(mg.tensor(p), y, reduction="none")
    np.testing.assert_array_equal(loss.data, [100.0, 100.0, 0.0, 0.0])


def test_binary_cross_entropy_with_logits_is_finite_far_out():
    x, y = np.array([-800.0, 800.0, -30.0, 30.0]), np.array([1.0, 0.0, 0.5, 0.5])
    _against_torch(lambda lib, TF, x: TF.binary_cross_entropy_with_logits(x, lib.tensor(y), reduction="none"),
                   x)
    loss = F.binary_cross_entropy_with_logits(mg.tensor(x), y, reduction="none")
    assert np.isfinite(loss.data).all()


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_binary_losses_gradcheck_in_float64_zero_d_too(shape):
    p, y, x = rng.uniform(0.1, 0.9, shape), rng.uniform(0, 1, shape), rng.normal(size=shape)
    _check(lambda p, y: F.binary_cross_entropy(p, y), p, y)
    _check(lambda p, y: F.binary_cross_entropy(p, y, reduction="none") * 1.5, p, y)
    _check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=2.0), x, y)
    _check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"), x, y)


def test_binary_losses_of_zero_d_inputs_match_torch():
    _against_torch(lambda lib, TF, p, y: TF.binary_cross_entropy(p, y), 0.3, 0.8)
    _against_torch(lambda lib, TF, x, y: TF.binary_cross_entropy_with_logits(x, y), -1.2, 0.8)


def test_binary_losses_of_an_empty_batch_are_nan_for_the_mean():
    torch = _torch()
    empty = np.zeros((0, 3))
    TF = torch.nn.functional
    for ours, theirs in ((F.binary_cross_entropy, TF.binary_cross_entropy),
                         (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits)):
        for reduction in ("mean", "sum"):
            mine = ours(mg.tensor(empty), empty, reduction=reduction)
            np.testing.assert_array_equal(mine.data, theirs(torch.tensor(empty), torch.tensor(empty),
                                                            reduction=reduction).numpy())


def test_binary_losses_compute_half_in_float32():
    torch = _torch()
    x = np.array([-12.0, 0.5, 11.0], np.float16)
    y = np.array([0.0, 1.0, 1.0], np.float16)
    ours = F.binary_cross_entropy_with_logits(mg.tensor(x), y)
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(y))
    assert ours.dtype == np.float16
    np.testing.assert_allclose(float(ours.item()), float(theirs.item()), rtol=1e-3)


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

@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin_matches_torch(dim):
    _against_torch(lambda lib, TF, x: TF.softmin(x, dim=dim), LOGITS)


def test_softmin_gradchecks_zero_d_too():
    _check(lambda x: F.softmin(x, dim=1), LOGITS)
    _check(lambda x: F.softmin(x, dim=0), np.array(0.7))
    _against_torch(lambda lib, TF, x: TF.softmin(x, dim=0), 0.7)


def test_softmin_puts_the_most_weight_on_the_smallest_entry():
    p = F.softmin(mg.tensor([3.0, -1.0, 2.0]), dim=0).data
    assert p.argmax() == 1 and p.sum() == pytest.approx(1.0)


# ---- full, full_like, zeros_like, ones_like --------------------------------------------------------------

@pytest.mark.parametrize("value", [4, 2.5, True, -3])
def test_full_infers_its_dtype_from_the_value_as_torch(value):
    torch = _torch()
    ours, theirs = mg.full((2, 3), value), torch.full((2, 3), value)
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.data, theirs.numpy())


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float16])
def test_full_like_keeps_the_dtype_and_shape_and_truncates_as_torch(dtype):
    torch = _torch()
    base = np.arange(6).reshape(2, 3).astype(dtype)
    for fill in (2.7, 4, -1):
        ours, theirs = mg.full_like(mg.tensor(base), fill), torch.full_like(torch.tensor(base), fill)
        assert ours.dtype == theirs.numpy().dtype and ours.shape == (2, 3)
        np.testing.assert_array_equal(ours.data, theirs.numpy())
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


@pytest.mark.parametrize("shape, repeats", REPEATS)
def test_repeat_matches_torch(shape, repeats):
    _against_torch(lambda lib, TF, x: x.repeat(*repeats), rng.normal(size=shape))


@pytest.mark.parametrize("shape, repeats", REPEATS[:-1])
def test_repeat_gradchecks_zero_d_too(shape, repeats):
    _check(lambda x: x.repeat(repeats), rng.normal(size=shape))


def test_repeat_names_a_bad_argument():
    with pytest.raises(mg.ShapeError, match=r"repeat\(\): 1 sizes \(2,\) are fewer than the tensor's 2 axes"):
        mg.zeros(2, 3).repeat(2)
    with pytest.raises(ValueError, match=r"repeat\(\): sizes \(2, -1\) must not be negative"):
        mg.zeros(2, 3).repeat(2, -1)


# ---- neg, axis=, x ** 0 --------------------------------------------------------------------------------

def test_neg_is_minus():
    _against_torch(lambda lib, TF, x: x.neg(), LOGITS)
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


def test_the_power_zero_is_flat_at_zero_as_torch():
    _against_torch(lambda lib, TF, x: x ** 0, np.array([0.0, 2.0, -1.0]))
    _against_torch(lambda lib, TF, x: x ** 0.0, np.array([0.0]))


# ---- indexing with ints and arrays together ------------------------------------------------------------

X6 = rng.normal(size=(2, 5, 6, 5, 3, 4))
IDS = rng.integers(0, 4, (2, 1, 1, 5, 1, 1))
INDEXES = {
    "int_then_array_apart": lambda x, ids: x[1, :, 3:6:2, ids, 0:2],
    "int_array_int_array": lambda x, ids: x[1, ids % 2, 2, ids, 2],
    "ellipsis_int_array": lambda x, ids: x[..., 1, ids],
    "int_next_to_array": lambda x, ids: x[1, ids],
    "none_int_array": lambda x, ids: x[None, 1, :, ids],
}


@pytest.mark.parametrize("name", list(INDEXES))
def test_ints_among_array_indices_place_axes_as_torch(name):
    index = INDEXES[name]
    torch = _torch()

    def fn(lib, TF, x):
        return index(x, IDS if lib is mg else torch.tensor(IDS))

    _against_torch(fn, X6)


def test_an_int_and_an_array_apart_is_where_numpy_differs():
    ours = mg.tensor(X6)[1, :, 3:6:2, IDS, 0:2]
    assert ours.shape == (5, 2, 2, 1, 1, 5, 1, 1, 2, 4)
    assert X6[1, :, 3:6:2, IDS, 0:2].shape == (2, 1, 1, 5, 1, 1, 5, 2, 2, 4)  # numpy's reading
