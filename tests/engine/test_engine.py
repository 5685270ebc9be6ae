"""The backward engine: ordering, accumulation, freeing, versions, anomalies."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import AccumulateGrad


def leaf(values, dtype=np.float64):
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_reused_node_accumulates_exactly():
    a = leaf(1.0)
    b = a + a
    c = b + b
    c.backward()
    assert a.grad == 4.0


def test_diamond_is_exact():
    a = leaf(3.0)
    left, right = a * 2.0, a * a
    (left * right).backward()  # d(2a * a^2) = 6 a^2
    assert a.grad == pytest.approx(54.0)


def test_long_chain_has_no_recursion_limit():
    a = leaf(1.0)
    x = a
    for _ in range(100_000):
        x = x + 1.0
    x.backward()
    assert a.grad == 1.0


def test_gradients_accumulate_across_calls_until_zeroed():
    a = leaf([1.0, 2.0])
    (a * 3.0).sum().backward()
    (a * 3.0).sum().backward()
    np.testing.assert_array_equal(a.grad, [6.0, 6.0])
    a.grad = None
    (a * 3.0).sum().backward()
    np.testing.assert_array_equal(a.grad, [3.0, 3.0])


def test_one_accumulate_grad_node_per_leaf_shared_by_every_op():
    w = leaf([[1.0, 2.0], [3.0, 4.0]])
    y1, y2 = w * 2.0, w.sum()
    assert isinstance(y1.grad_fn.next_nodes[0], AccumulateGrad)
    assert y1.grad_fn.next_nodes[0] is y2.grad_fn.next_nodes[0]


def test_leaf_grads_do_not_alias_each_other():
    a, b = leaf([1.0]), leaf([2.0])
    (a + b).sum().backward()
    a.grad *= 10
    assert b.grad[0] == 1.0


def test_no_grad_records_nothing():
    a = leaf([1.0])
    with mg.no_grad():
        b = a * 2.0
    assert b.grad_fn is None and not b.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        b.sum().backward()


def test_second_backward_through_freed_graph_says_retain_graph():
    a = leaf([1.0, 2.0])
    loss = (a * a).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def test_retain_graph_allows_a_second_backward():
    a = leaf([1.0, 2.0])
    loss = (a * a).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_array_equal(a.grad, [4.0, 8.0])


def test_backward_needs_grad_for_non_scalar_output():
    a = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"shape \(2,\)"):
        (a * 2.0).backward()
    (a * 2.0).backward(grad=np.array([1.0, 10.0]))
    np.testing.assert_array_equal(a.grad, [2.0, 20.0])
    with pytest.raises(ValueError, match=r"grad has shape \(3,\)"):
        (a * 2.0).backward(grad=np.ones(3))


def test_in_place_change_of_a_saved_tensor_is_caught():
    a = leaf([1.0, 2.0])
    b = a * 1.0
    loss = (b * b).sum()  # Mul saves b
    with mg.no_grad():
        b.add_(1.0)
    with pytest.raises(RuntimeError, match=r"MulBackward.*version 1.*version 0"):
        loss.backward()


def test_in_place_on_leaf_requiring_grad_needs_no_grad():
    a = leaf([1.0])
    with pytest.raises(RuntimeError, match="no_grad"):
        a.add_(1.0)
    with mg.no_grad():
        a.add_(1.0)
    assert a.data[0] == 2.0 and a._version == 1


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0) on purpose
def test_detect_anomaly_names_op_and_forward_location():
    a = leaf([0.0, 1.0])
    with mg.detect_anomaly():
        loss = a.log().sum()  # d log a / da = 1/a is inf at 0
        with pytest.raises(RuntimeError, match=r"LogBackward.*NaN or Inf(.|\n)*test_engine.py"):
            loss.backward()


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_without_anomaly_mode_inf_flows_silently():
    a = leaf([0.0, 1.0])
    a.log().sum().backward()
    assert np.isinf(a.grad[0])


def test_custom_function_subclass():
    class Square(mg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved
            return 2 * x * grad

    a = leaf([3.0])
    Square.apply(a).sum().backward()
    assert a.grad[0] == 6.0
    assert mg.gradcheck(Square.apply, [leaf([0.3, -1.2])]).ok


def test_custom_function_returning_wrong_number_of_grads():
    class Bad(mg.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(RuntimeError, match="returned 1 gradients but forward had 2 inputs"):
        Bad.apply(leaf([1.0]), leaf([2.0])).sum().backward()


def test_branch_that_sends_no_gradient_does_not_stall_the_rest():
    a = leaf([1.0, 2.0])
    x = a * 2.0
    unused_target = x * 1.0  # noqa: F841  (a branch never used by the loss)
    loss = mg.nn.functional.cross_entropy(x.reshape(1, 2), np.array([1])) + x.sum()
    loss.backward()
    assert a.grad is not None and np.all(np.isfinite(a.grad))


def test_integer_inputs_get_no_edge():
    a = leaf([1.0, 2.0])
    (a * np.array([3, 4])).sum().backward()
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
