"""In-place ops on tensors with history: rebased as in PyTorch, or refused; never a wrong number.

Each adversarial program runs twice, once on minigrad and once on PyTorch (live where it is
installed, recorded where not), and must give the same gradients, or both must refuse with the
"modified in place" error.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from oracle import torch

import minigrad as mg

X = [1.0, 2.0, -0.5]
W = [0.5, -1.5, 3.0]

OURS = SimpleNamespace(
    tensor=lambda v, grad=False: mg.tensor(np.asarray(v, dtype=np.float64), requires_grad=grad),
    zeros=lambda *shape: mg.zeros(*shape, dtype=np.float64),
    no_grad=mg.no_grad,
)


TORCH = SimpleNamespace(
    tensor=lambda v, grad=False: torch.tensor(v, dtype=torch.float64, requires_grad=grad),
    zeros=lambda *shape: torch.zeros(*shape, dtype=torch.float64),
    no_grad=lambda: torch.no_grad(),
)


def chain(lib):
    x, w = lib.tensor(X, True), lib.tensor(W, True)
    y = x * 2
    y.mul_(3)
    y.add_(x)
    y.sub_(w, alpha=0.5)
    y.div_(w * w + 1.0)
    y.mul_(w)
    (y * y).sum().backward()
    return x, w


def mul_by_a_tensor_that_requires_grad(lib):
    x, w = lib.tensor(X, True), lib.tensor(W, True)
    y = x.tanh()
    y = y * 1.0  # an op output whose saved-by-tanh twin is not the one changed
    y.mul_(w)
    y.sum().backward()
    return x, w


def broadcast_operand(lib):
    x, w = lib.tensor([X, W], True), lib.tensor(W, True)
    y = x * x
    y.mul_(w)
    y.add_(w)
    y.sum().backward()
    return x, w


def in_place_on_output_then_new_ops_read_it(lib):
    x = lib.tensor(X, True)
    y = x * 2
    y.mul_(3)
    (y * y).sum().backward()
    return (x,)


def non_saving_consumer_before_the_change(lib):
    x = lib.tensor(X, True)
    y = x * 2
    z = y + 1.0  # Add saves no values, so changing y afterwards leaves z's backward right
    y.mul_(3)
    (z + y).sum().backward()
    return (x,)


def saving_consumer_never_backwarded(lib):
    x = lib.tensor(X, True)
    y = x * 2
    unused = (y * y).sum()
    y.mul_(3)
    y.sum().backward()
    del unused
    return (x,)


def zero_then_add(lib):
    x = lib.tensor(X, True)
    y = x * 2
    y.zero_()
    y.add_(x * x)
    y.sum().backward()
    return (x,)


def copy_into_a_buffer(lib):
    x = lib.tensor(X, True)
    buffer = lib.zeros(3)
    buffer.copy_(x * x)
    (buffer * 3.0).sum().backward()
    return (x,)


def copy_over_history(lib):
    x, w = lib.tensor(X, True), lib.tensor(W, True)
    y = x * 2
    y.copy_(w)
    (y * y).sum().backward()
    return x, w


def setitem_value_requires_grad(lib):
    x = lib.tensor(X[:2], True)
    buffer = lib.zeros(3)
    buffer[1:] = x * 3
    (buffer * buffer).sum().backward()
    return (x,)


def setitem_over_history(lib):
    x, w = lib.tensor([X, W], True), lib.tensor(1.5, True)
    y = x * x
    y[0, 1] = w
    y[1] = w * 2
    (y * lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    return x, w


def setitem_broadcast_row(lib):
    x, v = lib.tensor([X, W], True), lib.tensor([[0.25, 0.5, 0.75]], True)
    y = x * 1.0
    y[0] = v  # a (1, 3) value into a (3,) slot: numpy and torch drop the leading 1
    (y * y).sum().backward()
    return x, v


def base_changed_while_views_read_it(lib):
    x = lib.tensor(X, True)
    y = x * 2
    row, column = y[0:2], y.reshape(3, 1)  # views made before the change read the new values
    y.mul_(3)
    (row.sum() + (column * column).sum()).backward()
    return (x,)


def view_of_a_view_after_the_base_changed(lib):
    x = lib.tensor([X[:2], W[:2]], True)
    y = x * 2
    first_column = y.T[0]
    y.add_(x * x)
    (first_column * first_column).sum().backward()
    return (x,)


def buffer_view_then_setitem_with_grad(lib):
    x = lib.tensor(X[:2], True)
    buffer = lib.zeros(3)
    tail = buffer[1:]  # a view of a buffer that has no history yet
    buffer[1:] = x * 3
    (tail * tail).sum().backward()
    return (x,)


def no_grad_change_keeps_the_history(lib):
    x = lib.tensor(X, True)
    y = x * 2
    with lib.no_grad():
        y.mul_(3)  # not recorded: the gradient still says dy/dx = 2
    y.sum().backward()
    return (x,)


def output_saved_by_its_own_op(lib):
    x = lib.tensor(X, True)
    y = x.exp()  # exp saved y itself
    y.add_(1.0)
    y.sum().backward()
    return (x,)


def input_saved_by_a_later_op(lib):
    x = lib.tensor(X, True)
    y = x * 2
    z = y * y  # saved y
    y.add_(1.0)
    z.sum().backward()
    return (x,)


def tanh_output_scaled(lib):
    x = lib.tensor(X, True)
    y = x.tanh()
    y.mul_(2.0)
    y.sum().backward()
    return (x,)


def multiplied_by_itself(lib):
    x = lib.tensor(X, True)
    y = x * 2
    y.mul_(y)  # Mul saved y as its right operand, and then y changed
    y.sum().backward()
    return (x,)


def log_input_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], True)
    y = x * 2
    z = y.log()
    y.div_(2.0)
    z.sum().backward()
    return (x,)


def max_output_changed(lib):
    x = lib.tensor(X, True)
    m = x.max() if isinstance(x, mg.Tensor) else x.amax()
    with lib.no_grad():
        m.mul_(0.0)  # backward compares x with the (saved) max: it must notice
    m.backward()
    return (x,)


RIGHT = [chain, mul_by_a_tensor_that_requires_grad, broadcast_operand,
         in_place_on_output_then_new_ops_read_it, non_saving_consumer_before_the_change,
         saving_consumer_never_backwarded, zero_then_add, copy_into_a_buffer, copy_over_history,
         setitem_value_requires_grad, setitem_over_history, setitem_broadcast_row,
         base_changed_while_views_read_it, view_of_a_view_after_the_base_changed,
         buffer_view_then_setitem_with_grad, no_grad_change_keeps_the_history]
REFUSED = [output_saved_by_its_own_op, input_saved_by_a_later_op, tanh_output_scaled,
           multiplied_by_itself, log_input_changed, max_output_changed]


def grads(leaves):
    return [np.asarray(leaf.grad.detach().numpy() if hasattr(leaf.grad, "detach") else leaf.grad)
            for leaf in leaves]


def torch_grads(program):
    return grads(program(TORCH))


def torch_refusal(program):
    """PyTorch's error message for the program (None if it runs)."""
    try:
        program(TORCH)
    except RuntimeError as error:
        return str(error)
    return None


@pytest.mark.parametrize("program", RIGHT, ids=lambda p: p.__name__)
def test_in_place_program_gives_pytorchs_gradients(program, oracle):
    ours = grads(program(OURS))
    theirs = oracle(torch_grads, program)
    assert len(ours) == len(theirs)
    for got, expected in zip(ours, theirs):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("program", REFUSED, ids=lambda p: p.__name__)
def test_in_place_change_of_a_saved_value_is_refused_as_in_pytorch(program, oracle):
    with pytest.raises(RuntimeError, match="modified in place"):
        program(OURS)
    assert "modified by an inplace operation" in oracle(torch_refusal, program)


# ---- without torch: the mechanism itself -------------------------------------------------------

def test_issue_example_rebases_the_history():
    x = OURS.tensor([1.0, 2.0], True)
    y = x * 2
    y.mul_(3)
    assert y.grad_fn.name == "MulBackward" and y.grad_fn.next_nodes[0].name == "MulBackward"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 6.0])


def test_in_place_write_is_seen_by_aliases_and_bumps_the_version():
    x = OURS.tensor([1.0, 2.0], True)
    y = x * 2
    alias = y.detach()  # shares y's memory
    version = y._version
    y.mul_(3)
    np.testing.assert_array_equal(alias.data, [6.0, 12.0])
    assert y._version == version + 1


def test_every_in_place_op_is_recorded():
    x = OURS.tensor([1.0, 2.0], True)
    ops = {"add_": lambda y: y.add_(1.0), "sub_": lambda y: y.sub_(1.0), "mul_": lambda y: y.mul_(2.0),
           "div_": lambda y: y.div_(2.0), "zero_": lambda y: y.zero_(), "copy_": lambda y: y.copy_(x),
           "__setitem__": lambda y: y.__setitem__(0, 5.0)}
    for name, op in ops.items():
        y = x * 1.0
        node = y.grad_fn
        op(y)
        assert y.grad_fn is not node and node in y.grad_fn.next_nodes, name


def test_buffer_without_grad_takes_history_from_what_is_written_into_it():
    x = OURS.tensor([1.0, 2.0], True)
    buffer = OURS.zeros(2)
    assert buffer.is_leaf
    buffer[0] = x[1] * 4
    assert buffer.requires_grad and not buffer.is_leaf
    buffer.sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 4.0])


def test_in_place_without_a_graph_records_nothing():
    plain = OURS.zeros(2)
    plain.add_(OURS.tensor([1.0, 2.0]))
    assert plain.is_leaf and not plain.requires_grad and plain._version == 1
    x = OURS.tensor([1.0, 2.0], True)
    with mg.no_grad():
        x.mul_(2.0)  # an optimizer step: allowed on a leaf, not recorded
    assert x.is_leaf and x.grad_fn is None


def test_leaf_that_requires_grad_is_still_refused():
    x = OURS.tensor([1.0, 2.0], True)
    with pytest.raises(RuntimeError, match="mul_: a leaf tensor that requires grad"):
        x.mul_(2.0)
    with pytest.raises(RuntimeError, match="__setitem__: a leaf tensor that requires grad"):
        x[0] = 1.0


def test_in_place_on_a_view_with_history_is_refused_with_a_reason():
    # PyTorch writes the change back into the base's graph; minigrad refuses rather than
    # leave the base's graph silently wrong
    x = OURS.tensor([1.0, 2.0, 3.0], True)
    y = x * 2
    for view in (y[0:2], y.reshape(3, 1), y.reshape(1, 3).T):
        with pytest.raises(RuntimeError, match=r"shares its memory with another tensor .* clone\(\)"):
            view.mul_(3.0)
    np.testing.assert_array_equal(y.data, [2.0, 4.0, 6.0])  # nothing was written


def test_in_place_cannot_change_the_shape():
    y = OURS.tensor([1.0, 2.0], True) * 1.0
    with pytest.raises(ValueError, match=r"add_: the result has shape \(3, 2\), but an in-place op "
                                         r"cannot change this tensor's shape \(2,\)"):
        y.add_(OURS.tensor(np.ones((3, 2)), True))


def test_max_saves_its_output_so_an_in_place_change_is_caught():
    with pytest.raises(RuntimeError, match=r"MaxBackward: .* modified in place"):
        max_output_changed(OURS)


def test_views_remade_after_the_base_changed_without_torch():
    x = OURS.tensor([1.0, 2.0, 3.0], True)
    y = x * 2
    head = y[0:2]
    y.mul_(3)
    assert head.grad_fn.next_nodes[0] is y.grad_fn  # the view now reads the rebased history
    head.sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 6.0, 0.0])


def test_views_made_every_step_do_not_pile_up_on_their_base():
    weight = OURS.tensor(np.ones((4, 3)), True)
    for _ in range(50):
        (weight.T * 2.0).sum().backward()  # a tied model reads E.T every step
    assert len(weight._live_views()) == 0 and len(weight._views) <= 9


def view_program(lib, make_view):
    x = lib.tensor(X, True)
    y = x * 2
    view = eval("y." + make_view)  # the view is made before y changes in place
    y.mul_(3)
    (view * view).sum().backward()
    return grads([x])[0]


def torch_view_program(make_view):
    return view_program(TORCH, make_view)


@pytest.mark.parametrize("make_view", ["unsqueeze(0)", "flatten()", "view(3)", "narrow(0, 0, 2)",
                                       "squeeze()"])
def test_pytorch_spelled_views_are_remade_after_the_base_changed(make_view, oracle):
    np.testing.assert_allclose(view_program(OURS, make_view), oracle(torch_view_program, make_view),
                               rtol=1e-12)
