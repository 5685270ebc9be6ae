"""`+=`, `-=`, `*=`, `/=` update a tensor in place, as in PyTorch (issue 22, item 9), and an
in-place op is refused only for a tensor that really shares memory with another (item 18)."""

import operator

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad import nn

AUGMENTED = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv}
EXPECTED = {"+=": [1.5, 2.5], "-=": [0.5, 1.5], "*=": [0.5, 1.0], "/=": [2.0, 4.0]}


def test_the_manual_sgd_step_updates_the_parameter_itself():
    w = nn.Parameter(np.array([1.0, 2.0], dtype=np.float32))
    (w * w).sum().backward()
    original, version = w, w._version
    with mg.no_grad():
        w -= 0.1 * w.grad
    assert w is original and isinstance(w, nn.Parameter)
    assert w.requires_grad and w.is_leaf and w.grad_fn is None and w._version == version + 1
    np.testing.assert_allclose(w.data, [0.8, 1.6], rtol=1e-6)
    w.grad = None
    (w * w).sum().backward()  # the next step works: w still requires grad
    np.testing.assert_allclose(w.grad, [1.6, 3.2], rtol=1e-6)


@pytest.mark.parametrize("op", list(AUGMENTED))
def test_each_operator_under_no_grad_writes_into_the_same_array(op):
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    array = w.data
    with mg.no_grad():
        result = AUGMENTED[op](w, 0.5)
    assert result is w and w.data is array and w._version == 1
    np.testing.assert_allclose(w.data, EXPECTED[op])


@pytest.mark.parametrize("op", list(AUGMENTED))
def test_a_leaf_that_requires_grad_is_refused_outside_no_grad(op):
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"{re_escape(op)}: a leaf tensor that requires grad is used "
                                           r"in an in-place operation; wrap the update in `with "
                                           r"minigrad.no_grad\(\):`"):
        AUGMENTED[op](w, 0.5)
    assert w.is_leaf and w._version == 0 and w.data.tolist() == [1.0, 2.0]


def re_escape(op):
    return "\\" + op[0] + "="


def augmented_on_a_non_leaf(lib, op):
    """(x, c) gradients after y = x * 3; y op= c; backward of sum(y * y), in `lib` (mg or torch)."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = lib.tensor([2.0, 4.0, 8.0], requires_grad=True)
    y = x * 3.0
    same = y
    y = AUGMENTED[op](y, c)
    assert y is same
    (y * y).sum().backward()
    return [x.grad, c.grad]


def torch_augmented_on_a_non_leaf(op):
    return augmented_on_a_non_leaf(torch, op)


@pytest.mark.parametrize("op", list(AUGMENTED))
def test_on_a_non_leaf_the_graph_is_recorded_as_pytorch_does(op, oracle):
    theirs = oracle(torch_augmented_on_a_non_leaf, op)
    for ours, expected in zip(augmented_on_a_non_leaf(mg, op), theirs, strict=True):
        np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_a_tensor_without_grad_is_updated_in_place_with_grad_enabled():
    buffer = mg.zeros(3)
    alias = buffer
    buffer += mg.tensor([1.0, 2.0, 3.0])
    buffer *= 2
    assert buffer is alias and buffer.data.tolist() == [2.0, 4.0, 6.0] and buffer._version == 2


# ---- item 18: refuse only what really shares memory --------------------------------------------

def in_place_on_a_copy(lib, make):
    x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x * 1.0
    z = y.T.reshape(-1) if make == "transpose then reshape" else y[:, [0, 2]]
    z.mul_(3.0)
    (z * y.sum()).sum().backward()
    return x.grad


def torch_in_place_on_a_copy(make):
    return in_place_on_a_copy(torch, make)


@pytest.mark.parametrize("make", ["transpose then reshape", "fancy index"])
def test_a_copy_that_numpy_gives_a_base_is_not_refused(make, oracle):
    """numpy gives these results a .base of their own (a temporary that nothing else holds), but
    they share no memory with y: in place on them is safe, and PyTorch allows it."""
    theirs = oracle(torch_in_place_on_a_copy, make)
    np.testing.assert_allclose(in_place_on_a_copy(mg, make), theirs, rtol=1e-6)


@pytest.mark.parametrize("make", ["slice", "reshape", "transpose"])
def test_a_real_view_is_still_refused_when_a_gradient_must_be_recorded(make):
    y = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 1.0
    view = {"slice": lambda: y[0], "reshape": lambda: y.reshape(4), "transpose": lambda: y.T}[make]()
    with pytest.raises(RuntimeError, match="shares its memory with another tensor"):
        view.mul_(3.0)
    assert y.data.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_item_augmented_assignment_with_history_names_the_out_of_place_form():
    """`y[0] += 1` runs y[0].__iadd__ on a view (a row): refused with the spelling that works."""
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1.0
    with pytest.raises(RuntimeError, match=r"for y\[i\] \+= v, y\[i\] = y\[i\] \+ v"):
        y[0] += 1.0
    y[0] = y[0] + 1.0  # Add keeps nothing, so changing y after it is fine
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad, [[4.0, 6.0], [6.0, 8.0]])


def test_item_augmented_assignment_of_one_element_is_recorded_as_pytorch_does():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    y[0] *= 5.0  # y[0] is a new 0-d tensor (numpy gives a scalar), then written back into y
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [5.0, 1.0])


def test_item_augmented_assignment_without_history_writes_once_through():
    y = mg.tensor([1, 2, 3])
    y[1] += 5
    y[np.array([0, 2])] *= 2
    assert y.data.tolist() == [2, 7, 6]
