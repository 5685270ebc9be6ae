"""Every differentiable op against central finite differences, in float64.

Hypothesis draws shapes (including broadcasting pairs) and values kept away from kinks.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

small_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def leaf(array):
    return mg.tensor(np.asarray(array, dtype=np.float64), requires_grad=True)


def values(shape, low=-3.0, high=3.0):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False))


@st.composite
def broadcast_pair(draw, low=-3.0, high=3.0):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    a = draw(values(shapes.input_shapes[0], low, high))
    b = draw(values(shapes.input_shapes[1], low, high))
    return a, b


def check(fn, *arrays, **kw):
    report = mg.gradcheck(fn, [leaf(a) for a in arrays], **kw)
    assert report.ok, str(report)


@given(broadcast_pair())
def test_add_broadcasts(pair):
    check(lambda a, b: a + b, *pair)


@given(broadcast_pair())
def test_sub_broadcasts(pair):
    check(lambda a, b: a - b, *pair)


@given(broadcast_pair())
def test_mul_broadcasts(pair):
    check(lambda a, b: a * b, *pair)


@given(broadcast_pair())
def test_div_broadcasts(pair):
    a, b = pair
    # keep the divisor away from 0, where 1/b has a pole
    check(lambda a, b: a / b, a, np.sign(b + 1e-9) * (np.abs(b) + 0.5))


@given(small_shapes.flatmap(lambda s: values(s, 0.5, 3.0)), st.sampled_from([2.0, 3.0, 0.5, -1.5]))
def test_pow_scalar_exponent(x, n):
    check(lambda a: a**n, x)


@given(small_shapes.flatmap(values))
def test_neg(x):
    check(lambda a: -a, x)


@st.composite
def matmul_pair(draw):
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,), (3, 1)]))
    a_shape = draw(st.sampled_from([(k,), (m, k), (*batch, m, k)]))
    b_shape = draw(st.sampled_from([(k,), (k, n), (*batch[-1:], k, n)]))
    return draw(values(a_shape)), draw(values(b_shape))


@given(matmul_pair())
def test_matmul_batched_and_vectors(pair):
    check(lambda a, b: a @ b, *pair)


axes = st.sampled_from([None, 0, -1, (0, -1)])


@given(hnp.array_shapes(min_dims=2, max_dims=3, max_side=4).flatmap(values), axes, st.booleans())
def test_sum(x, axis, keepdims):
    check(lambda a: a.sum(axis=axis, keepdims=keepdims), x)


@given(hnp.array_shapes(min_dims=2, max_dims=3, max_side=4).flatmap(values), axes, st.booleans())
def test_mean(x, axis, keepdims):
    check(lambda a: a.mean(axis=axis, keepdims=keepdims), x)


@given(hnp.array_shapes(min_dims=2, max_dims=3, max_side=4), axes, st.booleans())
def test_max_with_distinct_values(shape, axis, keepdims):
    # distinct values spaced far apart: finite differences never cross a tie (a kink)
    x = np.random.default_rng(len(shape)).permutation(np.prod(shape)).reshape(shape) * 0.1
    check(lambda a: a.max(axis=axis, keepdims=keepdims), x)


def test_max_splits_gradient_between_ties():
    a = leaf([1.0, 3.0, 3.0])
    a.max().backward()
    np.testing.assert_array_equal(a.grad, [0.0, 0.5, 0.5])


unary = {
    "exp": (lambda a: a.exp(), -3, 3),
    "log": (lambda a: a.log(), 0.2, 5),
    "tanh": (lambda a: a.tanh(), -3, 3),
    "sigmoid": (lambda a: a.sigmoid(), -6, 6),
    "relu": (lambda a: (a + 5.5).relu() + (a - 5.5).relu(), -3, 3),  # shifted off the kink
    "gelu": (lambda a: a.gelu(), -3, 3),
    "gelu_tanh": (lambda a: a.gelu(approximate="tanh"), -3, 3),
    "F.relu": (lambda a: F.relu(a * 1.0 + 4.0), -3, 3),
    "F.tanh": (F.tanh, -3, 3),
    "F.sigmoid": (F.sigmoid, -3, 3),
    "F.exp": (F.exp, -3, 3),
    "F.log": (F.log, 0.2, 5),
    "F.gelu": (F.gelu, -3, 3),
    "F.logsigmoid": (F.logsigmoid, -30, 30),  # both tails: -x + tiny on the left, tiny on the right
}


@pytest.mark.parametrize("name", list(unary))
@given(shape=small_shapes, data=st.data())
def test_unary(name, shape, data):
    fn, low, high = unary[name]
    check(fn, data.draw(values(shape, low, high)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsigmoid_is_finite_far_in_the_tails(dtype):
    """log(sigmoid(x)) gives -inf where sigmoid rounds to 0; the op stays exact there."""
    x = mg.tensor(np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=dtype), requires_grad=True)
    out = F.logsigmoid(x)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.data, [-1000.0, -50.0, -np.log(2.0), -np.exp(-50.0), 0.0], rtol=1e-6)
    with np.errstate(divide="ignore"):  # the naive composition, for contrast
        assert np.isneginf(np.log(x.sigmoid().data[0]))
    out.sum().backward()
    np.testing.assert_allclose(x.grad, [1.0, 1.0, 0.5, np.exp(-50.0), 0.0], rtol=1e-6)


def test_relu_gradient_is_zero_left_of_kink_and_one_right():
    a = leaf([-2.0, -0.5, 0.5, 2.0])
    a.relu().sum().backward()
    np.testing.assert_array_equal(a.grad, [0, 0, 1, 1])


@given(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4).flatmap(values))
def test_reshape_transpose_permute_swapaxes(x):
    check(lambda a: a.reshape(-1), x)
    check(lambda a: a.reshape(x.shape[::-1]) * 1.0, x)
    check(lambda a: a.T * np.arange(a.size).reshape(a.T.shape), x)
    check(lambda a: a.transpose(0, -1) * np.arange(a.size).reshape(a.transpose(0, -1).shape), x)
    check(lambda a: a.swapaxes(0, 1), x)
    perm = tuple(reversed(range(x.ndim)))
    check(lambda a: a.permute(*perm) * np.arange(a.size).reshape(x.transpose(perm).shape), x)


def test_getitem_slices_and_integer_arrays_with_duplicates():
    x = np.arange(12.0).reshape(3, 4)
    check(lambda a: a[1:, ::2], x)
    check(lambda a: a[np.array([0, 2, 0, 0])], x)
    check(lambda a: a[:, np.array([3, 3])], x)
    a = leaf(x)
    a[np.array([0, 2, 0, 0])].sum().backward()
    np.testing.assert_array_equal(a.grad[:, 0], [3, 0, 1])  # row 0 picked three times


@given(st.integers(0, 1), st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_concatenate_and_stack(axis, sizes):
    rng = np.random.default_rng(sum(sizes))
    parts = [rng.normal(size=(s, 2)) if axis == 0 else rng.normal(size=(2, s)) for s in sizes]
    check(lambda *ts: F.concatenate(list(ts), axis=axis) * np.arange(1, 2 * sum(sizes) + 1).reshape(
        (sum(sizes), 2) if axis == 0 else (2, sum(sizes))), *parts)
    same = [rng.normal(size=(2, 3)) for _ in sizes]
    check(lambda *ts: F.stack(list(ts), axis=axis) * 1.5, *same)


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5).flatmap(values),
       st.sampled_from([-1, 0]))
def test_softmax_and_log_softmax(x, axis):
    check(lambda a: a.softmax(axis=axis), x)
    check(lambda a: a.log_softmax(axis=axis), x)
    check(lambda a: F.softmax(a, axis=axis), x)
    check(lambda a: F.log_softmax(a, axis=axis), x)


@given(st.integers(1, 5), st.integers(2, 6), st.sampled_from(["mean", "sum"]), st.data())
def test_cross_entropy(n, classes, reduction, data):
    logits = data.draw(values((n, classes)))
    targets = np.array(data.draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n)))
    check(lambda z: F.cross_entropy(z, targets, reduction=reduction), logits)


def test_cross_entropy_with_classes_on_axis_1():
    logits = np.random.default_rng(1).normal(size=(2, 5, 3))
    targets = np.array([[0, 4, 2], [1, 1, 3]])
    check(lambda z: F.cross_entropy(z, mg.tensor(targets)), logits)


def test_linear_function():
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4)), rng.normal(size=5)
    check(lambda x, w, b: F.linear(x, w, b), x, w, b)
    check(lambda x, w: F.linear(x, w), x, w)


def test_embedding_function_touched_and_untouched_rows():
    table = np.random.default_rng(3).normal(size=(6, 3))
    ids = np.array([[1, 4, 1], [0, 1, 4]])
    check(lambda w: F.embedding(ids, w), table)
    check(lambda w: F.embedding(ids, w, sparse=False), table)


# ---- 0-d tensors: every op that accepts a scalar input works on one, forward and backward ----
# Each fn takes minigrad or torch tensors (the torch spelling where they differ); values are
# drawn away from kinks and poles (relu's 0, log's 0, ties of max).

def _ours(a):
    return isinstance(a, mg.Tensor)


def _vector(like, values):
    """A constant vector in the library of `like` (numpy for minigrad, torch for torch)."""
    if _ours(like):
        return np.asarray(values, dtype=np.float64)
    return torch.tensor(values, dtype=torch.float64)


def _gelu(a, approximate):
    return a.gelu(approximate=approximate) if _ours(a) else TF.gelu(a, approximate=approximate)


def _stack(a, b):
    return F.stack([a, b]) if _ours(a) else torch.stack([a, b])


ZERO_D_OPS = {  # name: (fn, number of 0-d inputs)
    "add": (lambda a, b: a + b, 2),
    "sub": (lambda a, b: a - b, 2),
    "mul": (lambda a, b: a * b, 2),
    "div": (lambda a, b: a / (b * b + 1.0), 2),
    "mul broadcast to a vector": (lambda a, b: a * b * _vector(a, [1.0, 2.0, 3.0]), 2),
    "pow": (lambda a: (a * a + 1.0) ** 1.5, 1),
    "neg": (lambda a: -a, 1),
    "clone": (lambda a: a.clone() * 2.0, 1),
    "sum": (lambda a: a.sum(), 1),
    "sum axis 0": (lambda a: a.sum(axis=0) if _ours(a) else a.sum(0), 1),
    "sum keepdims": (lambda a: a.sum(keepdims=True) if _ours(a) else a.sum(0, keepdim=True), 1),
    "mean": (lambda a: a.mean(), 1),
    "mean axis -1": (lambda a: a.mean(axis=-1) if _ours(a) else a.mean(-1), 1),
    "max": (lambda a: a.max() if _ours(a) else a.amax(), 1),
    "max axis -1": (lambda a: a.max(axis=-1) if _ours(a) else a.amax(-1), 1),
    "exp": (lambda a: a.exp(), 1),
    "log": (lambda a: (a * a + 0.5).log(), 1),
    "tanh": (lambda a: a.tanh(), 1),
    "tanh of a sum": (lambda a: (a * _vector(a, [1.0, 2.0, 3.0])).sum().tanh(), 1),
    "sigmoid": (lambda a: a.sigmoid(), 1),
    "relu": (lambda a: (a + 5.5).relu(), 1),
    "gelu": (lambda a: _gelu(a, "none"), 1),
    "gelu tanh": (lambda a: _gelu(a, "tanh"), 1),
    "reshape to (1, 1)": (lambda a: a.reshape(1, 1) * 3.0, 1),
    "reshape back to ()": (lambda a: a.reshape(1).reshape(()) * 3.0, 1),
    "transpose(0, -1)": (lambda a: a.transpose(0, -1) * 3.0, 1),
    "permute()": (lambda a: a.permute(()) * 3.0, 1),
    "getitem ()": (lambda a: a[()] * 3.0, 1),
    "getitem ...": (lambda a: a[...] * 3.0, 1),
    "getitem None": (lambda a: a[None] * 3.0, 1),
    "stack": (lambda a, b: _stack(a, b) * _vector(a, [1.0, 2.0]), 2),
    "softmax": (lambda a: a.softmax(-1) * a, 1),
    "log_softmax": (lambda a: a.log_softmax(-1) * a, 1),
}


def zero_d_values(count):
    signs = [1.0, -1.0][:count]
    return [np.asarray(v) for v in np.random.default_rng(count).uniform(0.3, 1.7, size=count) * signs]


@pytest.mark.parametrize("name", list(ZERO_D_OPS))
def test_op_on_0d_inputs_passes_gradcheck(name):
    fn, count = ZERO_D_OPS[name]
    inputs = [leaf(v) for v in zero_d_values(count)]
    assert all(x.shape == () for x in inputs)
    report = mg.gradcheck(fn, inputs)
    assert report.ok, str(report)
    fn(*inputs).sum().backward()
    for x in inputs:  # a 0-d input gets a 0-d gradient, never one of shape (1,)
        assert np.shape(x.grad) == ()


def torch_zero_d(name, values):
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    out = ZERO_D_OPS[name][0](*theirs)
    out.sum().backward()
    return out, [t.grad for t in theirs]


@pytest.mark.parametrize("name", list(ZERO_D_OPS))
def test_op_on_0d_inputs_matches_pytorch(name, oracle):
    fn, count = ZERO_D_OPS[name]
    values = zero_d_values(count)
    out_t, grads_t = oracle(torch_zero_d, name, values)
    ours = [leaf(v) for v in values]
    out_m = fn(*ours)
    assert out_m.shape == out_t.shape
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-12)
    out_m.sum().backward()
    for m, t in zip(ours, grads_t, strict=True):
        np.testing.assert_allclose(np.asarray(m.grad), t, rtol=1e-10, atol=1e-14)


def test_T_of_a_0d_tensor_is_itself():
    check(lambda a: a.T * 3.0, np.asarray(0.4))


def test_reducing_a_0d_tensor_over_another_axis_names_it():
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of range for a 0-d tensor"):
        leaf(np.asarray(1.0)).mean(axis=1)


def test_cross_entropy_and_embedding_with_0d_targets_and_ids():
    # one sample: logits (C,) with a 0-d target, and a 0-d token id looking up one row
    logits = np.random.default_rng(4).normal(size=5)
    check(lambda z: F.cross_entropy(z, np.int64(3)), logits)
    table = np.random.default_rng(5).normal(size=(4, 3))
    check(lambda w: F.embedding(np.int64(2), w, sparse=False) * np.arange(3.0), table)
