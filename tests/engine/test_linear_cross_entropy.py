"""F.linear_cross_entropy: a classifier and its loss as one op (ops.LinearCrossEntropy).

It must compute what F.cross_entropy(F.linear(x, W, b).reshape(-1, C), y.reshape(-1)) computes
(bit for bit when the loss is backpropagated with G = 1), with the fast form (row blocks on two
threads, a recycled buffer) giving the same bits as the plain one, and agree with PyTorch.
"""

import weakref

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.engine import kernels
from minigrad.nn import functional as F

needs_fast = pytest.mark.skipif(not kernels.fast_enabled(),
                                reason="MINIGRAD_FAST_KERNELS=0: nothing to compare")


def problem(x_shape=(7, 5), classes=11, dtype=np.float64, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    x = mg.tensor((rng.normal(size=x_shape) * 2).astype(dtype), requires_grad=True)
    w = mg.tensor(rng.normal(size=(classes, x_shape[-1])).astype(dtype), requires_grad=True)
    b = mg.tensor(rng.normal(size=classes).astype(dtype), requires_grad=True) if bias else None
    y = rng.integers(0, classes, size=x_shape[:-1])
    return x, w, b, y


def results(loss, *leaves):
    return [loss.data] + [t.grad for t in leaves if t is not None]


def fused(x_shape, classes, dtype, bias, reduction="mean", factor=None):
    x, w, b, y = problem(x_shape, classes, dtype, bias)
    loss = F.linear_cross_entropy(x, w, y, b, reduction=reduction)
    (loss if factor is None else loss * factor).backward()
    return results(loss, x, w, b)


def two_ops(x_shape, classes, dtype, bias, reduction="mean"):
    x, w, b, y = problem(x_shape, classes, dtype, bias)
    logits = F.linear(x, w, b)  # (..., C): one row of classes per position
    loss = F.cross_entropy(logits.reshape(-1, classes), y.reshape(-1), reduction=reduction)
    loss.backward()
    return results(loss, x, w, b)


def assert_same_bits(a, b):
    for u, v in zip(a, b, strict=True):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert u.tobytes() == v.tobytes()


@pytest.mark.parametrize("x_shape", [(7, 5), (2, 3, 5), (1, 5), (41, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_the_same_bits_as_linear_then_cross_entropy(small_row_blocks, x_shape, dtype, bias, reduction):
    args = (x_shape, 40, dtype, bias, reduction)
    assert_same_bits(fused(*args), two_ops(*args))


@needs_fast
@pytest.mark.parametrize("factor", [None, 3.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_and_plain_forms_give_the_same_bits(small_row_blocks, factor, dtype):
    with_fast = fused((41, 5), 40, dtype, True, factor=factor)
    with kernels.plain_only():
        plain = fused((41, 5), 40, dtype, True, factor=factor)
    assert_same_bits(with_fast, plain)


@pytest.mark.parametrize("bias", [True, False])
def test_gradients_match_finite_differences(bias):
    x, w, b, y = problem((2, 3, 4), classes=6, bias=bias)
    leaves = [x, w] + ([b] if bias else [])

    def loss(x, w, *b):
        return F.linear_cross_entropy(x, w, y, b[0] if b else None) * 2.5  # G != 1 too

    report = mg.gradcheck(loss, leaves)
    assert report.ok, str(report)


def torch_linear_cross_entropy(x, w, b, y):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    logits = TF.linear(*leaves)
    loss = TF.cross_entropy(logits.reshape(-1, w.shape[0]), torch.tensor(y).reshape(-1), reduction="sum")
    loss.backward()
    return loss.item(), [t.grad for t in leaves]


def test_matches_pytorch(oracle):
    x, w, b, y = problem((3, 4, 5), classes=9)
    expected, grads = oracle(torch_linear_cross_entropy, x.data, w.data, b.data, y)
    loss = F.linear_cross_entropy(x, w, y, b, reduction="sum")
    loss.backward()
    np.testing.assert_allclose(loss.data, expected, rtol=1e-12)
    for ours, theirs in zip((x, w, b), grads, strict=True):
        np.testing.assert_allclose(ours.grad, theirs, rtol=1e-10, atol=1e-14)


def test_backward_twice_with_retain_graph_adds_the_same_gradient_again():
    x, w, b, y = problem()
    loss = F.linear_cross_entropy(x, w, y, b)
    loss.backward(retain_graph=True)
    first = w.grad.copy()
    loss.backward()
    np.testing.assert_allclose(w.grad, 2 * first, rtol=1e-12)


def test_only_the_inputs_that_need_a_gradient_get_one():
    x, w, _, y = problem(bias=False)
    frozen = mg.tensor(x.data)  # no grad
    F.linear_cross_entropy(frozen, w, y).backward()
    assert frozen.grad is None and w.grad is not None


def test_a_tied_table_gets_the_lookup_rows_and_the_head_gradient_summed():
    rng = np.random.default_rng(1)
    table = mg.tensor(rng.normal(size=(10, 4)), requires_grad=True)
    ids, targets = np.array([1, 3, 3, 7]), np.array([0, 3, 9, 3])
    F.linear_cross_entropy(F.embedding(ids, table) * 2.0, table, targets).backward()
    fused_grad = mg.engine.to_dense(table.grad)
    table.grad = None
    F.cross_entropy(F.linear(F.embedding(ids, table) * 2.0, table), targets).backward()
    np.testing.assert_array_equal(fused_grad, mg.engine.to_dense(table.grad))


def logits_buffer(loss):
    return loss.grad_fn.ctx.saved[2]


@needs_fast
def test_the_logits_buffer_is_reused_once_the_last_graph_is_gone():
    x, w, b, y = problem()
    first = F.linear_cross_entropy(x, w, y, b)
    kept = weakref.ref(logits_buffer(first))
    first.backward()
    del first
    assert logits_buffer(F.linear_cross_entropy(x, w, y, b)) is kept()


def test_a_pending_graph_keeps_its_own_logits_buffer():
    x, w, b, y = problem()
    pending = F.linear_cross_entropy(x, w, y, b)
    other = F.linear_cross_entropy(x, w, y, b)
    assert logits_buffer(other) is not logits_buffer(pending)
    other.backward()
    once = w.grad.copy()
    pending.backward()
    np.testing.assert_allclose(w.grad, 2 * once, rtol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda x, w, b, y: F.linear_cross_entropy(x, w.reshape(-1), y), "weight has shape"),
    (lambda x, w, b, y: F.linear_cross_entropy(x[:, :3], w, y), "last dim must be in_features=5"),
    (lambda x, w, b, y: F.linear_cross_entropy(x, w, y, b[:4]), r"expected \(11,\)"),
    (lambda x, w, b, y: F.linear_cross_entropy(x, w, y[:3]), r"expected \(7,\)"),
    (lambda x, w, b, y: F.linear_cross_entropy(x, w, y * 1.0), "integer class ids"),
    (lambda x, w, b, y: F.linear_cross_entropy(x, w, y + 11), "target"),
    (lambda x, w, b, y: F.linear_cross_entropy(x, w, y, reduction="max"), "'mean' or 'sum'"),
])
def test_errors_name_the_op_and_the_argument(call, message):
    x, w, b, y = problem()
    with pytest.raises((ValueError, TypeError, IndexError), match=message) as error:
        call(x, w, b, y)
    assert "linear_cross_entropy" in str(error.value)

