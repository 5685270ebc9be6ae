"""The engine's core: its import picture, per-thread grad mode, the checks of the backward walk,
leaves freed by reference counting, and views that share their base's version counter."""

import gc
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad import nn
from minigrad.engine import Function, RowSparse
from minigrad.nn import functional as F

ENGINE = Path(mg.__file__).parent / "engine"


def leaf(values, dtype=np.float64, name=None):
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True, name=name)


# ---- the import picture -----------------------------------------------------------------------

# ---- grad mode is per thread --------------------------------------------------------------------

def test_another_thread_inside_no_grad_does_not_stop_this_thread_recording():
    inside, leave = threading.Event(), threading.Event()
    seen_there = []

    def evaluate():
        with mg.no_grad():
            seen_there.append(mg.is_grad_enabled())
            inside.set()
            leave.wait(5)

    other = threading.Thread(target=evaluate)
    other.start()
    try:
        assert inside.wait(5)
        x = leaf([1.0, 2.0])
        y = (x * 3.0).sum()  # recorded while the other thread sits in no_grad()
        assert mg.is_grad_enabled() and y.grad_fn is not None
        y.backward()
        np.testing.assert_array_equal(x.grad, [3.0, 3.0])
    finally:
        leave.set()
        other.join()
    assert seen_there == [False]


def test_a_new_thread_starts_with_grad_enabled_even_inside_no_grad_here():
    seen = []
    with mg.no_grad():
        thread = threading.Thread(target=lambda: seen.append(mg.is_grad_enabled()))
        thread.start()
        thread.join()
        assert not mg.is_grad_enabled()
    assert seen == [True]


def test_a_recorder_sees_only_its_own_threads_backward():
    seen = []
    x = leaf([1.0])
    with mg.engine.recording(lambda sender, receiver, g: seen.append(g)):
        thread = threading.Thread(target=lambda: (leaf([2.0]) * 2.0).sum().backward())
        thread.start()
        thread.join()
        assert seen == []
        (x * 5.0).sum().backward()
    assert [g[0] for g in seen] == [5.0]


# ---- every gradient is checked on its edge ------------------------------------------------------

def custom(backward_result):
    """A Function y = x * c whose backward returns `backward_result(grad, x)`."""

    class Custom(Function):
        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(x)
            return x * c

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved
            return backward_result(grad, x), None

    Custom.__name__ = "Mul"
    return Custom.apply


def test_a_gradient_of_the_wrong_shape_names_the_op_the_input_and_both_shapes():
    x = leaf([1.0, 2.0, 3.0])
    y = custom(lambda grad, x: (grad * 2.0)[None, :])(x, 2.0)
    with pytest.raises(RuntimeError) as error:
        y.sum().backward()
    assert str(error.value) == (
        "MulBackward returned a gradient of shape (1, 3) for input 0, which has shape (3,)")
    assert x.grad is None  # never stored


def test_a_wrong_shape_is_caught_between_two_ops_not_only_at_a_leaf():
    x = leaf([[1.0, 2.0]])
    hidden = x * 1.0
    y = custom(lambda grad, x: grad.reshape(-1))(hidden, 2.0)
    with pytest.raises(RuntimeError, match=r"MulBackward .* \(2,\) for input 0, which has shape \(1, 2\)"):
        y.sum().backward()


def test_a_gradient_of_an_integer_dtype_is_refused():
    x = leaf([1.0, 2.0])
    y = custom(lambda grad, x: np.ones(2, dtype=np.int64))(x, 2.0)
    with pytest.raises(RuntimeError, match="MulBackward returned a gradient of dtype int64 for input 0"):
        y.sum().backward()


def test_a_python_number_as_a_gradient_is_refused_with_the_expected_shape():
    x = leaf([1.0, 2.0])
    y = custom(lambda grad, x: 2.0)(x, 2.0)
    with pytest.raises(TypeError, match=r"MulBackward returned a float .* input 0.*shape \(2,\)"):
        y.sum().backward()


def test_a_row_sparse_gradient_is_checked_by_its_dense_shape():
    table = leaf(np.ones((4, 2)))
    wrong = custom(lambda grad, x: RowSparse([1], np.ones((1, 2)), (5, 2)))(table, 1.0)
    with pytest.raises(RuntimeError, match=r"shape \(5, 2\) for input 0, which has shape \(4, 2\)"):
        wrong.sum().backward()
    right = custom(lambda grad, x: RowSparse([1, 1], np.ones((2, 2)), (4, 2)))(table, 1.0)
    right.sum().backward()
    np.testing.assert_array_equal(mg.engine.to_dense(table.grad)[1], [2.0, 2.0])


def test_a_wrong_gradient_for_a_tensor_read_twice_names_both_positions():
    class Square(mg.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved
            return grad * b, (grad * a)[None]  # the second has one axis too many

    x = leaf([1.0, 2.0])
    read_twice = r"for input 0 or 1 \(one tensor read twice\), which has shape \(2,\)"
    with pytest.raises(RuntimeError, match=read_twice):
        Square.apply(x, x).sum().backward()


# ---- the node is its op's ctx ----------------------------------------------------------------------

def test_the_node_a_result_records_is_the_ctx_its_forward_saved_into():
    seen = {}

    class Double(mg.Function):
        @staticmethod
        def forward(ctx, a):
            seen["ctx"] = ctx
            ctx.shape = (99,)  # any name a forward likes, even one a node could have used
            ctx.save_for_backward(a)
            return a * 2.0

        @staticmethod
        def backward(ctx, grad):
            assert ctx.shape == (99,)
            return grad * 2.0

    x = leaf([1.0, 2.0, 3.0])
    y = Double.apply(x)
    assert y.grad_fn is seen["ctx"] and y.grad_fn.ctx is y.grad_fn
    assert y.grad_fn.next_nodes == (x._grad_node(),) and y.grad_fn.grad_shape == (3,)
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad, 8.0 * np.array([1.0, 2.0, 3.0]))


def test_an_op_that_records_no_node_leaves_its_ctx_unreachable():
    x = mg.tensor([1.0, 2.0])  # needs no gradient
    y = x * 2.0
    assert y.grad_fn is None and not y.requires_grad


# ---- nodes that received no gradient are released too -------------------------------------------

def test_a_node_whose_consumers_all_sent_none_frees_its_saved_arrays():
    x = leaf([1.0, 2.0])
    w = mg.tensor(np.array([3.0, 4.0]))  # needs no gradient
    product = x * w  # MulBackward saves x and w
    cut = custom(lambda grad, x: None)(product, 1.0)  # sends nothing on to product's node
    loss = cut.sum() + (x * 2.0).sum()
    node = product.grad_fn
    loss.backward()
    assert node.ctx._saved is None and node.released
    np.testing.assert_array_equal(x.grad, [2.0, 2.0])


# ---- a leaf and its AccumulateGrad ----------------------------------------------------------------

def test_a_leaf_made_per_step_and_its_graph_die_without_the_cycle_collector():
    gc.disable()
    try:
        for _ in range(3):
            w = leaf(np.ones((3, 2)))
            loss = (F.embedding(np.array([0, 2, 2]), w).tanh() * w[0]).sum()
            loss.backward()
            node, gone = weakref.ref(w._grad_node()), weakref.ref(w)
            graph_node = weakref.ref(loss.grad_fn)
            del w, loss
            assert gone() is None and node() is None and graph_node() is None
        w = leaf([1.0])
        unused = (w * 2.0).exp()  # a graph never backpropagated
        gone, node = weakref.ref(w), weakref.ref(unused.grad_fn.next_nodes[0])
        del w, unused
        assert gone() is None and node() is None
    finally:
        gc.enable()


def test_while_a_graph_is_alive_every_op_reading_the_leaf_shares_its_accumulate_grad():
    E = leaf(np.ones((4, 3)))
    lookup = F.embedding(np.array([1, 2]), E)
    del_me = E._accumulate  # a weak reference only
    assert isinstance(del_me, weakref.ref)
    head = F.linear(lookup, E)  # tied: the unembedding reads the same table
    sink = lookup.grad_fn.next_nodes[0]
    assert head.grad_fn.next_nodes[1] is sink and head.grad_fn.next_nodes[1].variable is E
    assert (E * 2.0).grad_fn.next_nodes[0] is sink
    head.sum().backward()
    dense = mg.engine.to_dense(E.grad)
    expected = np.zeros((4, 3))
    expected[[1, 2]] += 4.0  # lookup rows: each gets sum over the head's 4 outputs of E
    expected += 2.0  # the head: d/dE of sum(lookup @ E^T) = sum over the 2 rows of lookup
    np.testing.assert_allclose(dense, expected)


# ---- views share their base's version counter --------------------------------------------------

VIEWS = {
    "slice": lambda w: w[1:3],
    "transpose": lambda w: w.T,
    "permute": lambda w: w.permute(1, 0),
    "reshape": lambda w: w.reshape(6),
    "view": lambda w: w.view(3, 2),
    "detach": lambda w: w.detach(),
}


@pytest.mark.parametrize("make_view", list(VIEWS))
def test_a_view_read_then_its_base_changed_in_place_is_caught(make_view):
    w = leaf(np.arange(6.0).reshape(3, 2) + 1.0, name="w")
    scale = leaf(2.0)
    loss = (VIEWS[make_view](w) * scale).sum()  # Mul saves the view for scale's gradient
    with mg.no_grad():
        w.mul_(10.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


@pytest.mark.parametrize("make_view", ["slice", "transpose", "reshape"])
def test_a_base_read_then_changed_through_its_view_is_caught(make_view):
    w = leaf(np.arange(6.0).reshape(3, 2) + 1.0)
    base = w * 1.0  # a non-leaf, so in-place changes need no no_grad
    loss = (base * base).sum()  # MulBackward saves base
    view = VIEWS[make_view](base)
    # an in-place op with history on a view is refused at once (tests/engine/test_inplace.py); either
    # way the saved base is never used with its new values
    with pytest.raises(RuntimeError, match="MulBackward.*modified in place|shares its memory with another"):
        view.mul_(2.0) if make_view != "reshape" else view.add_(1.0)
        loss.backward()


def test_a_copy_is_not_a_view_and_keeps_its_own_counter():
    w = leaf(np.arange(6.0).reshape(3, 2))
    picked = w[np.array([0, 2])]  # advanced indexing copies
    loss = (picked * picked).sum()
    with mg.no_grad():
        w.mul_(10.0)
    loss.backward()  # nothing it saved changed
    np.testing.assert_allclose(w.grad[[0, 2]], 2 * np.arange(6.0).reshape(3, 2)[[0, 2]])


def test_an_optimizer_step_on_a_tied_weight_read_through_its_transpose_is_caught():
    emb = nn.Embedding(5, 3, rng=0, dtype=np.float64)
    optimizer = mg.optim.AdamW(emb.parameters(), lr=0.1)
    hidden = emb(np.array([1, 3])).tanh()
    loss = (hidden @ emb.weight.T).sum()  # MatMul saves the (3, 5) view E^T
    loss.backward(retain_graph=True)
    optimizer.step()  # under no_grad: changes E, and so E^T
    with pytest.raises(RuntimeError, match="MatMulBackward.*modified in place"):
        loss.backward()


TORCH_VIEWS = {"slice": lambda w: w[1:3], "transpose": lambda w: w.T, "reshape": lambda w: w.reshape(6)}


def torch_backward_through_a_changed_view(view):
    """PyTorch's error message (None if it runs) for a backward through the view after an
    optimizer-style step changed its base."""
    w = torch.ones(3, 2, dtype=torch.float64, requires_grad=True)
    loss = (TORCH_VIEWS[view](w) ** 2.0).sum()
    with torch.no_grad():
        w.mul_(10.0)
    try:
        loss.backward()
    except RuntimeError as error:
        return str(error)
    return None


def test_torch_also_refuses_a_backward_through_a_view_whose_base_changed(oracle):
    for view in TORCH_VIEWS:
        assert "modified by an inplace operation" in oracle(torch_backward_through_a_changed_view, view)


def test_a_zero_d_leaf_gets_a_zero_d_array_as_grad_also_when_accumulated():
    x = mg.tensor(2.0, requires_grad=True, dtype=np.float64)
    (x * 3).backward()
    assert type(x.grad) is np.ndarray and x.grad.shape == () and x.grad == 3.0
    (x * x).backward()  # a second backward adds into .grad
    assert type(x.grad) is np.ndarray and x.grad.shape == () and x.grad == 7.0
