"""The per-op path: Python numbers lifted to the tensor's dtype, an op's one gradient passed on
without the summing machinery, and the view rule of Function.forward."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import Function, kernels

NUMBERS = [0.5, 1.0001, -3, 1, True, 0.0, -0.0, float("nan"), float("inf"), 1e-45, 2**40]


def chain(x, numbers):
    """x + c, x * c, c - x, c / x over the numbers, and the leaf's gradient."""
    outs = []
    for c in numbers:
        outs += [x + c, x * c, c - x, x / c if c else x]
    total = sum(o.sum() for o in outs)
    total.backward()
    return [o.data for o in outs] + [x.grad]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lifted_numbers_give_the_same_bits_with_either_kernels(dtype):
    def run():
        x = mg.tensor(np.array([-1.5, -0.0, 0.0, 2.0], dtype=dtype), requires_grad=True)
        with np.errstate(all="ignore"):
            return chain(x, NUMBERS)

    fast_bits = run()
    with kernels.plain_only():
        plain_bits = run()
    for a, b in zip(fast_bits, plain_bits, strict=True):
        assert a.dtype == b.dtype == dtype and a.tobytes() == b.tobytes()


def test_an_int_tensor_keeps_its_dtype_for_an_int_and_promotes_for_a_float():
    x = mg.tensor(np.array([1, 2, 3]))
    assert (x + 2).dtype == np.int64 and (x + 2).data.tolist() == [3, 4, 5]
    assert (x * 0.5).dtype == np.float32 and (x * 0.5).data.tolist() == [0.5, 1.0, 1.5]  # as PyTorch


def test_gradients_that_meet_are_summed_and_a_lone_one_passes_on():
    x = mg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3.0  # one consumer: its gradient is passed on as it is
    z = y * y + y  # y has three consumers: their gradients are summed
    z.sum().backward()
    np.testing.assert_allclose(x.grad, 3.0 * (2 * 3.0 * np.array([1.0, 2.0]) + 1.0))


class ViewOfInput(Function):
    @staticmethod
    def forward(ctx, a):
        return a.view()  # the rule: a view, never the input array itself

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_function_returning_a_view_of_its_input_shares_its_version():
    w = mg.tensor(np.ones(3), requires_grad=True)
    base = w * 1.0
    loss = (base * 2.0).sum() + ViewOfInput.apply(base).sum()
    alias = ViewOfInput.apply(base)
    assert alias._version_counter is base._version_counter
    alias.data[0] = 5.0
    alias._version += 1  # an in-place write through the alias, as add_ would record it
    with pytest.raises(RuntimeError, match="MulBackward.*modified in place"):
        loss.backward()
