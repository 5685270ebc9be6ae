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


def test_pow_takes_a_tensor_exponent():
    out = mg.tensor([2.0, 3.0]) ** mg.tensor([3.0, 2.0])
    np.testing.assert_array_equal(out.data, [8.0, 9.0])


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


# ---- numpy's __array__ protocol (numpy 2): copy=True copies, copy=False never does ----------

def test_np_array_copy_true_never_aliases_the_tensor():
    t = mg.tensor([1.0, 2.0])
    for dtype in (None, np.float32, np.float64):
        array = np.array(t, dtype=dtype, copy=True)
        assert not np.shares_memory(array, t.data)
        array[0] = 9.0
        assert t.data[0] == 1.0


def test_np_asarray_without_a_dtype_change_shares_memory():
    t = mg.tensor([1.0, 2.0])
    assert np.shares_memory(np.asarray(t), t.data)
    assert np.shares_memory(np.array(t, copy=False), t.data)
    assert np.shares_memory(np.asarray(t, dtype=np.float32), t.data)
    assert not np.shares_memory(np.asarray(t, dtype=np.float64), t.data)  # a copy is needed


def test_np_array_copy_false_refuses_a_dtype_change():
    t = mg.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="dtype float32 cannot be viewed as float64 without a copy"):
        np.array(t, dtype=np.float64, copy=False)


# ---- shape errors name both shapes --------------------------------------------------------

@pytest.mark.parametrize("a, b, message", [
    ((3, 7), (5, 2), r"matmul: shapes \(3, 7\) @ \(5, 2\) do not match: 7 != 5"),
    ((4,), (3,), r"matmul: shapes \(4,\) @ \(3,\) do not match: 4 != 3"),
    ((2, 3), (2,), r"matmul: shapes \(2, 3\) @ \(2,\) do not match: 3 != 2"),
    ((2, 3, 4), (5, 4, 2), r"batch shapes \(2,\) and \(5,\) do not broadcast"),
    ((), (3,), r"matmul: shapes \(\) @ \(3,\): both operands need at least 1 dimension"),
])
def test_matmul_mismatch_names_both_shapes(a, b, message):
    with pytest.raises(ValueError, match=message):
        mg.tensor(np.ones(a), requires_grad=True) @ mg.tensor(np.ones(b))


def test_transpose_of_a_1d_tensor_says_the_dimension_is_out_of_range():
    v = mg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match=r"dimension -2 is out of range for a tensor of shape \(3,\) "
                                         r"\(expected in \[-1, 0\]\)"):
        v.transpose()
    with pytest.raises(IndexError, match=r"dimension 2 is out of range for a tensor of shape \(2, 2\)"):
        mg.tensor(np.ones((2, 2))).transpose(0, 2)
    np.testing.assert_array_equal(v.T.data, v.data)  # .T of a vector is the vector, as in PyTorch
    np.testing.assert_array_equal(v.transpose(0, -1).data, v.data)
