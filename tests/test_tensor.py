"""Tensor creation, dtypes (as PyTorch infers them), and basic methods."""

import numpy as np
import pytest

import minigrad as mg


def test_dtype_inference_follows_pytorch():
    assert mg.tensor([1.0, 2.0]).dtype == np.float32
    assert mg.tensor(1.5).dtype == np.float32
    assert mg.tensor([1, 2]).dtype == np.int64
    assert mg.tensor(np.zeros(3)).dtype == np.float64
    assert mg.tensor(np.zeros(3, dtype=np.float32)).dtype == np.float32
    assert mg.tensor([True]).dtype == np.bool_
    assert mg.tensor([1, 2], dtype=np.float64).dtype == np.float64


def test_tensor_copies_its_data():
    source = np.ones(3)
    t = mg.tensor(source)
    source[0] = 5
    assert t.data[0] == 1


def test_scalars_keep_float32_float32():
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (a * 2.5 + 1 - 0.5) / 3.0
    assert y.dtype == np.float32
    y.sum().backward()
    assert a.grad.dtype == np.float32


def test_float64_supported_everywhere():
    a = mg.tensor(np.array([[0.3, -0.2]]), requires_grad=True)
    y = mg.nn.functional.cross_entropy((a @ a.T).tanh().exp() * a, np.array([1]))
    y.backward()
    assert y.dtype == np.float64 and a.grad.dtype == np.float64


def test_only_float_tensors_can_require_grad():
    with pytest.raises(TypeError, match="only floating-point tensors can require grad.*int64"):
        mg.tensor([1, 2], requires_grad=True)


def test_factories():
    assert mg.zeros(2, 3).shape == (2, 3) and mg.zeros((2, 3)).data.sum() == 0
    assert mg.ones(4).data.sum() == 4 and mg.ones(4).dtype == np.float32
    np.testing.assert_array_equal(mg.randn(3, rng=5).data, mg.randn(3, rng=5).data)
    assert not np.array_equal(mg.randn(3, rng=5).data, mg.randn(3, rng=6).data)
    np.testing.assert_array_equal(mg.arange(4).data, [0, 1, 2, 3])
    assert mg.arange(4).dtype == np.int64 and mg.arange(0.0, 1.0, 0.5).dtype == np.float32
    assert mg.randn(2, 2, dtype=np.float64, requires_grad=True).requires_grad


def test_item_numpy_detach_properties():
    a = mg.tensor([[1.0, 2.0]], requires_grad=True)
    b = a * 2.0
    assert b.grad_fn is not None and not b.is_leaf and a.is_leaf
    assert b.shape == (1, 2) and b.ndim == 2 and b.size == 2
    d = b.detach()
    assert d.grad_fn is None and not d.requires_grad and d.data is b.data
    assert b.sum().item() == 6.0
    assert isinstance(a.numpy(), np.ndarray)
    assert "grad_fn=<MulBackward>" in repr(b)


def test_reshape_accepts_ints_or_tuple():
    a = mg.arange(6.0, dtype=np.float32)
    a = mg.tensor(np.arange(6.0))
    assert a.reshape(2, 3).shape == (2, 3) and a.reshape((3, 2)).shape == (3, 2)
    with pytest.raises(ValueError, match=r"cannot reshape shape \(6,\).*\(4, 2\)"):
        a.reshape(4, 2)


def test_pow_needs_scalar_exponent():
    with pytest.raises(TypeError, match="scalar exponent"):
        mg.tensor([1.0]) ** mg.tensor([2.0])


def test_numpy_on_the_left_uses_tensor_ops():
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    y = np.array([1.0, 1.0]) + a
    assert isinstance(y, mg.Tensor) and y.requires_grad


def test_permute_rejects_non_permutation():
    with pytest.raises(ValueError, match="not a permutation"):
        mg.zeros(2, 3).permute(0, 0)


def test_concatenate_and_stack_are_top_level_too():
    a = mg.tensor(np.ones((2, 3)), requires_grad=True)
    assert mg.concatenate([a, a], axis=0).shape == (4, 3)
    mg.stack([a, a * 2.0], axis=0).sum().backward()
    np.testing.assert_array_equal(a.grad, np.full((2, 3), 3.0))
