"""PyTorch's spellings beside numpy's: the same meaning under either name (issue 15)."""

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad.nn import functional as F

rng = np.random.default_rng(0)
A = rng.standard_normal((2, 3, 4))


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_reductions_take_dim_and_keepdim(op):
    t = mg.tensor(A)
    np.testing.assert_array_equal(getattr(t, op)(dim=1, keepdim=True).data,
                                  getattr(t, op)(axis=1, keepdims=True).data)
    np.testing.assert_array_equal(getattr(t, op)(dim=(0, 2)).data, getattr(A, op)(axis=(0, 2)))
    with pytest.raises(TypeError, match=f"{op}\\(\\): got both axis=1 and dim=1; they are one argument"):
        getattr(t, op)(axis=1, dim=1)
    with pytest.raises(TypeError, match="got both keepdims= and keepdim="):
        getattr(t, op)(dim=1, keepdims=True, keepdim=True)


def test_softmax_and_log_softmax_take_dim():
    t = mg.tensor(A)
    for f in (F.softmax, F.log_softmax):
        np.testing.assert_array_equal(f(t, dim=1).data, f(t, 1).data)
        assert not np.array_equal(f(t, dim=1).data, f(t).data)  # the default is the last axis
    np.testing.assert_array_equal(t.softmax(dim=0).data, t.softmax(0).data)
    with pytest.raises(TypeError, match="softmax\\(\\): got both axis=0 and dim=1"):
        t.softmax(0, dim=1)


def test_concatenate_stack_and_cat_take_dim():
    a, b = mg.tensor(A), mg.tensor(A + 1)
    np.testing.assert_array_equal(mg.cat([a, b], dim=2).data, np.concatenate([A, A + 1], axis=2))
    np.testing.assert_array_equal(mg.concatenate([a, b], dim=1).data, np.concatenate([A, A + 1], axis=1))
    np.testing.assert_array_equal(mg.stack([a, b], dim=1).data, np.stack([A, A + 1], axis=1))
    np.testing.assert_array_equal(mg.stack([a, b]).data, np.stack([A, A + 1]))
    with pytest.raises(TypeError, match="concatenate\\(\\): got both axis=0 and dim=1"):
        mg.concatenate([a, b], axis=0, dim=1)


def test_backward_takes_gradient():
    x = mg.tensor(A, requires_grad=True)
    g = rng.standard_normal(A.shape)
    (x * 2.0).backward(gradient=g)
    np.testing.assert_allclose(x.grad, 2 * g)
    x.grad = None
    (x * 2.0).backward(grad=g)  # the old name still works
    np.testing.assert_allclose(x.grad, 2 * g)
    with pytest.raises(TypeError, match="got both gradient= and grad="):
        (x * 2.0).backward(gradient=g, grad=g)


def test_size_dim_numel_tolist():
    t = mg.tensor(A)
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.size == 24 and t.size * 2 == 48  # numpy's meaning is kept
    assert t.dim() == 3 and t.numel() == 24
    assert t.tolist() == A.tolist()
    with pytest.raises(IndexError, match=r"size\(\): dim 3 is out of range for shape \(2, 3, 4\)"):
        t.size(3)


SHAPE_CASES = [lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(2),
               lambda x: x.squeeze(), lambda x: x.squeeze(1), lambda x: x.squeeze(0),
               lambda x: x.squeeze(-1), lambda x: x.flatten(), lambda x: x.flatten(1),
               lambda x: x.flatten(1, 2), lambda x: x.view(2, 3)]


def torch_shapes(shape):
    return [tuple(case(torch.zeros(shape)).shape) for case in SHAPE_CASES]


def test_unsqueeze_squeeze_flatten_match_torch(oracle):
    a = rng.standard_normal((2, 1, 3, 1))
    t = mg.tensor(a)
    assert [case(t).shape for case in SHAPE_CASES] == oracle(torch_shapes, a.shape)
    with pytest.raises(IndexError, match="unsqueeze\\(\\): dim 6 is out of range"):
        t.unsqueeze(6)
    with pytest.raises(ValueError, match="start_dim=2 comes after end_dim=1"):
        t.flatten(2, 1)


def argmax_sqrt_abs(lib, a):
    t = lib.tensor(a)
    return t.argmax().item(), t.argmax(dim=1), t.argmax(1, keepdim=True), t.abs(), t.abs().sqrt()


def torch_argmax_sqrt_abs(a):
    return argmax_sqrt_abs(torch, a)


def test_argmax_sqrt_abs_match_torch(oracle):
    ours, theirs = argmax_sqrt_abs(mg, A), oracle(torch_argmax_sqrt_abs, A)
    assert ours[0] == theirs[0]
    np.testing.assert_array_equal(ours[1].data, theirs[1])
    np.testing.assert_array_equal(ours[2].data, theirs[2])
    assert ours[1].dtype == theirs[1].dtype == np.int64
    np.testing.assert_allclose(ours[3].data, theirs[3])
    np.testing.assert_allclose(ours[4].data, theirs[4])


def test_comparison_operators():
    t, other = mg.tensor(A), mg.tensor(np.zeros_like(A))
    for ours, numpys in ((t != other, A != 0), (t < 0.0, A < 0), (t <= other, A <= 0), (t > 0.0, A > 0),
                         (t >= other, A >= 0), (t == other, A == 0)):
        np.testing.assert_array_equal(ours, numpys)
    assert (t != t).sum() == 0
