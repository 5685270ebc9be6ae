"""Edges where an op used to give a wrong number or crash where PyTorch answers: integer inputs
to var, std and leaky_relu (promoted to float32, as mean is); NaN inputs to max, min, maximum,
minimum, clamp and sign; empty inputs to logsumexp and cross_entropy; bool inputs to sign.
Each compared with torch, live or recorded (on the float32 version of an integer input, which
torch refuses)."""

import contextlib

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

NAN = np.nan


# ---- integer inputs are promoted, not truncated -----------------------------------------------------

def torch_spread(op, values):
    return getattr(torch.tensor(values), op)()  # torch refuses ints: their float32 version


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_of_an_int_tensor_are_float32_as_mean(op, oracle):
    ours = getattr(mg.tensor([1, 2, 4]), op)()
    theirs = oracle(torch_spread, op, np.array([1.0, 2.0, 4.0], np.float32))
    assert ours.dtype == np.float32
    assert ours.item() == pytest.approx({"var": 7 / 3, "std": (7 / 3) ** 0.5}[op], rel=1e-6)
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-6)


def test_var_of_an_int_tensor_along_an_axis():
    ours = mg.tensor(np.array([[1, 2, 4], [0, 0, 3]], np.int32)).var(1, correction=0)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.data, [14 / 9, 2.0], rtol=1e-6)


def torch_leaky_relu(x, slope):
    return TF.leaky_relu(torch.tensor(x), slope)


def test_leaky_relu_of_an_int_tensor_keeps_its_slope(oracle):
    ours = F.leaky_relu(mg.tensor([-300, 2]), 0.01)
    theirs = oracle(torch_leaky_relu, np.array([-300.0, 2.0], np.float32), 0.01)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-6)
    np.testing.assert_allclose(ours.data, [-3.0, 2.0], rtol=1e-6)


# ---- NaN inputs: PyTorch's gradients ---------------------------------------------------------------

def _grads(lib, fn, *arrays):
    """fn's output and the gradient of its sum, for each input, in minigrad or torch."""
    leaves = [lib.tensor(np.asarray(a, np.float64), requires_grad=True) for a in arrays]
    out = fn(*leaves)
    out.sum().backward()
    grads = [np.zeros(np.shape(a)) if t.grad is None else t.grad for t, a in zip(leaves, arrays)]
    return out, grads


def torch_nan_case(name, arrays):
    return _grads(torch, NAN_CASES[name][0], *arrays)


def _values(result):
    """torch's max(dim) gives (values, indices); minigrad's the values."""
    return getattr(result, "values", result)


NAN_CASES = {
    "max_all": (lambda x: x.max(), [[1.0, NAN, 3.0]]),
    "max_all_two_nans": (lambda x: x.max(), [[NAN, 2.0, NAN]]),
    "min_all": (lambda x: x.min(), [[1.0, NAN, -3.0]]),
    "max_dim": (lambda x: _values(x.max(1)), [[[1.0, NAN, 3.0], [4.0, 5.0, 6.0]]]),
    "min_dim": (lambda x: _values(x.min(0)), [[[1.0, NAN, 3.0], [4.0, -5.0, 6.0]]]),
    "maximum": (lambda a, b: a.maximum(b), [[1.0, NAN, 3.0, NAN, 2.0], [2.0, 2.0, NAN, NAN, 2.0]]),
    "minimum": (lambda a, b: a.minimum(b), [[1.0, NAN, 3.0, NAN, 2.0], [2.0, 2.0, NAN, NAN, 2.0]]),
    "clamp_numbers": (lambda x: x.clamp(0, 1), [[0.5, NAN, 3.0, -1.0]]),
    "clamp_min_only": (lambda x: x.clamp(min=0), [[0.5, NAN, 3.0, -1.0]]),
    "clamp_max_only": (lambda x: x.clamp(max=1), [[0.5, NAN, 3.0, -1.0]]),
    "clamp_tensor_bounds": (lambda x, lo, hi: x.clamp(lo, hi),
                            [[0.5, NAN, 3.0, -1.0, 0.5], [0.0, 0.0, 0.0, 0.0, NAN],
                             [1.0, 1.0, 1.0, 1.0, 1.0]]),
    "sign": (lambda x: x.sign() * x, [[NAN, -2.0, 0.0, 3.0]]),
    "relu": (lambda x: x.relu(), [[NAN, -2.0, 0.0, 3.0]]),
    "abs": (lambda x: x.abs(), [[NAN, -2.0, 0.0, 3.0]]),
}


@pytest.mark.parametrize("name", list(NAN_CASES))
def test_nan_inputs_give_torchs_values_and_gradients(name, oracle):
    fn, arrays = NAN_CASES[name]
    ours, our_grads = _grads(mg, fn, *arrays)
    theirs, their_grads = oracle(torch_nan_case, name, [np.asarray(a, np.float64) for a in arrays])
    np.testing.assert_array_equal(ours.data, theirs)  # NaN where torch has NaN
    for ours_g, theirs_g in zip(our_grads, their_grads, strict=True):
        np.testing.assert_array_equal(np.asarray(ours_g), theirs_g)


def test_the_issues_nan_cases():
    x = mg.tensor([1.0, NAN, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])
    a, b = mg.tensor([NAN], requires_grad=True), mg.tensor([2.0], requires_grad=True)
    a.maximum(b).sum().backward()
    assert a.grad[0] == 1.0 and b.grad[0] == 1.0
    c = mg.tensor([NAN], requires_grad=True)
    c.clamp(0, 1).sum().backward()
    assert c.grad[0] == 0.0
    assert mg.tensor([NAN]).sign().item() == 0.0


# ---- empty and bool inputs: an answer, not a crash -----------------------------------------------

def torch_logsumexp(x, dim):
    return torch.logsumexp(torch.tensor(x), dim)


def test_logsumexp_over_an_empty_axis_is_minus_infinity(oracle):
    empty = np.zeros((3, 0), np.float32)
    ours = mg.tensor(empty).logsumexp(1)
    np.testing.assert_array_equal(ours.data, oracle(torch_logsumexp, empty, 1))
    assert ours.shape == (3,) and (ours.data == -np.inf).all()
    assert mg.tensor(np.zeros((3, 0))).logsumexp(0).shape == (0,)


def test_logsumexp_over_an_empty_axis_has_a_zero_gradient():
    x = mg.tensor(np.zeros((3, 0)), requires_grad=True)
    x.logsumexp(1).sum().backward()
    assert x.grad.shape == (3, 0)


def torch_cross_entropy(logits, targets, reduction):
    return TF.cross_entropy(torch.tensor(logits), torch.tensor(targets), reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("plain_kernels", [False, True])
def test_cross_entropy_of_an_empty_batch_is_nan_for_the_mean_and_zero_for_the_sum(reduction, plain_kernels,
                                                                                   oracle):
    empty, no_targets = np.zeros((0, 5), np.float32), np.zeros(0, np.int64)
    logits = mg.tensor(empty, requires_grad=True)
    with mg.kernels.plain_only() if plain_kernels else contextlib.nullcontext():
        loss = F.cross_entropy(logits, no_targets, reduction=reduction)
        loss.backward()
    np.testing.assert_array_equal(loss.data, oracle(torch_cross_entropy, empty, no_targets, reduction))
    assert logits.grad.shape == (0, 5)


def test_linear_cross_entropy_of_an_empty_batch_is_nan():
    x = mg.tensor(np.zeros((0, 3), np.float32), requires_grad=True)
    w = mg.tensor(np.ones((5, 3), np.float32), requires_grad=True)
    loss = F.linear_cross_entropy(x, w, np.zeros(0, np.int64))
    loss.backward()
    assert np.isnan(loss.item()) and x.grad.shape == (0, 3)


def torch_sign(x):
    return torch.sign(torch.tensor(x))


def test_sign_of_a_bool_tensor_is_itself(oracle):
    ours = mg.tensor([True, False]).sign()
    theirs = oracle(torch_sign, np.array([True, False]))
    assert ours.dtype == theirs.dtype == np.bool_
    np.testing.assert_array_equal(ours.data, theirs)


# name: (the op, for either library, the empty input's shape)
EMPTY_CASES = {
    "softmax_over_no_classes": (lambda x: x.softmax(-1), (3, 0)),
    "log_softmax_over_no_rows": (lambda x: x.log_softmax(0), (0, 3)),
    "softmin_over_no_classes": (lambda x: (-x).softmax(-1), (3, 0)),
    "gelu_of_no_columns": (lambda x: x * x.sigmoid(), (3, 0)),
    "tanh_of_no_columns": (lambda x: x.tanh(), (3, 0)),
}


def torch_empty_case(name):
    fn, shape = EMPTY_CASES[name]
    return _grads(torch, fn, np.zeros(shape))


@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_ops_over_an_empty_axis_give_an_empty_answer(name, oracle):
    fn, shape = EMPTY_CASES[name]
    ours, (grad,) = _grads(mg, fn, np.zeros(shape))
    theirs, (their_grad,) = oracle(torch_empty_case, name)
    assert ours.shape == theirs.shape == shape and grad.shape == their_grad.shape


@pytest.mark.parametrize("kernels", ["fast", "plain"])
def test_the_fast_elementwise_kernels_take_an_empty_array(kernels):
    x = mg.tensor(np.zeros((3, 0), np.float32), requires_grad=True)
    with mg.kernels.plain_only() if kernels == "plain" else contextlib.nullcontext():
        (F.gelu(x) + F.silu(x) + x.tanh()).sum().backward()
    assert x.grad.shape == (3, 0)


def torch_prod(x):
    return torch.tensor(x).prod()


def test_the_product_of_small_ints_is_int64_as_torch(oracle):
    x = np.array([3, 200, 7], np.uint8)
    ours = mg.tensor(x).prod()
    theirs = oracle(torch_prod, x)
    assert ours.dtype == theirs.dtype == np.int64 and ours.item() == theirs == 4200


def torch_cat(a, b):
    return torch.cat([torch.tensor(a), torch.tensor(b)])


def test_cat_of_mixed_dtypes_promotes_as_torch(oracle):
    a, b = np.array([0.5, 1.5], np.float32), np.array([3, 4], np.int64)
    ours = mg.cat([mg.tensor(a), mg.tensor(b)])
    theirs = oracle(torch_cat, a, b)
    assert ours.dtype == theirs.dtype == np.float32  # numpy would give float64
    np.testing.assert_array_equal(ours.data, theirs)
    w = mg.tensor(a, requires_grad=True)
    (mg.cat([w, mg.tensor(b)]) * 2.0).sum().backward()
    np.testing.assert_array_equal(w.grad, [2.0, 2.0])



def torch_linear(x, w):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = TF.linear(tx, tw)
    out.sum().backward()
    return out, tx.grad, tw.grad


@pytest.mark.parametrize("kernels", ["fast", "plain"])
def test_linear_with_no_input_features_gives_zeros(kernels, oracle):
    x, w = np.zeros((2, 0)), np.zeros((3, 0))
    ours_x, ours_w = mg.tensor(x, requires_grad=True), mg.tensor(w, requires_grad=True)
    with mg.kernels.plain_only() if kernels == "plain" else contextlib.nullcontext():
        out = F.linear(ours_x, ours_w)
        out.sum().backward()
    theirs, grad_x, grad_w = oracle(torch_linear, x, w)
    np.testing.assert_array_equal(out.data, theirs)
    assert ours_x.grad.shape == grad_x.shape and ours_w.grad.shape == grad_w.shape


def torch_attention_with_no_keys(q, k, v):
    return TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v))


@pytest.mark.parametrize("kernels", ["fast", "plain"])
def test_attention_with_no_keys_gives_zeros(kernels, oracle):
    q, kv = np.ones((2, 3, 4)), np.ones((2, 0, 4))
    leaves = [mg.tensor(a, requires_grad=True) for a in (q, kv, kv)]
    with mg.kernels.plain_only() if kernels == "plain" else contextlib.nullcontext():
        out = F.scaled_dot_product_attention(*leaves)
        out.sum().backward()
    np.testing.assert_array_equal(out.data, oracle(torch_attention_with_no_keys, q, kv, kv))
    assert leaves[0].grad.shape == q.shape and leaves[1].grad.shape == kv.shape
