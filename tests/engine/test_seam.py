"""The seam: minigrad.use(...) runs a learner's Function in place of an op, names whose ran,
takes out exactly what each block put in whatever order blocks end (per thread), refuses what
cannot be an op, and refuses a forward that writes over a name the node keeps for itself."""

import gc
import os
import threading
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.engine import RowSparse, ops, seam


class MyEmbedding(mg.Function):
    """A learner's lookup: the same numbers as minigrad's, written differently."""

    @staticmethod
    def forward(ctx, weight, ids, sparse=True, padding_idx=None):
        ctx.shape, ctx.ids = weight.shape, ids.copy()
        return weight[ids]

    @staticmethod
    def backward(ctx, grad):
        ids = ctx.ids.reshape(-1)
        rows = grad.reshape(ids.size, -1)
        unique, where = np.unique(ids, return_inverse=True)
        sums = np.zeros((unique.size, rows.shape[1]), rows.dtype)
        np.add.at(sums, where, rows)
        return RowSparse(unique, sums, ctx.shape), None


class DropsRepeats(MyEmbedding):
    """The classic mistake: `grad[ids] = rows` keeps only one of a repeated id's rows."""

    @staticmethod
    def backward(ctx, grad):
        dense = np.zeros(ctx.shape, grad.dtype)
        dense[ctx.ids.reshape(-1)] = grad.reshape(ctx.ids.size, -1)
        return dense, None


def lookup_loss(weight, ids):
    return (F.embedding(ids, weight) ** 2).sum()


def test_a_learners_function_runs_in_place_of_the_op_and_the_node_says_whose():
    weight = mg.tensor(np.random.default_rng(0).standard_normal((5, 3)), requires_grad=True)
    ids = mg.tensor([[1, 3, 1]])
    with mg.use(Embedding=MyEmbedding):
        out = F.embedding(ids, weight)
        assert out.grad_fn.function is MyEmbedding
        assert out.grad_fn.name == "EmbeddingBackward (yours)"
        assert seam.whose("Embedding") == "yours"
        (out ** 2).sum().backward()
    mine = weight.grad.to_dense()
    weight.grad = None
    lookup_loss(weight, ids).backward()
    np.testing.assert_allclose(mine, weight.grad.to_dense(), rtol=1e-12)
    assert seam.whose("Embedding") == "minigrad"  # restored after the block


def test_gradcheck_passes_through_a_right_one_and_catches_a_wrong_one():
    weight = mg.tensor(np.random.default_rng(1).standard_normal((4, 2)), requires_grad=True)
    ids = mg.tensor([0, 2, 2, 3])
    with mg.use(Embedding=MyEmbedding):
        mg.gradcheck(lambda w: lookup_loss(w, ids), [weight])  # raises if it does not pass
    with mg.use(Embedding=DropsRepeats), pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda w: lookup_loss(w, ids), [weight])


def test_the_drawing_and_the_ledger_name_the_learners_op():
    weight = mg.nn.Parameter(np.random.default_rng(2).standard_normal((4, 2)))
    ids = mg.tensor([1, 1, 2])
    with mg.use(Embedding=MyEmbedding):
        loss = lookup_loss(weight, ids)
        drawing = mg.draw(loss)
        with mg.ledger({"table": weight}) as led:
            loss.backward()
    assert "EmbeddingBackward (yours)" in drawing.source
    assert any("EmbeddingBackward (yours)" in path for path in led.record(weight).paths())


def test_nesting_adds_to_the_outer_set_and_an_exception_restores_it():
    class MyCrossEntropy(ops.CrossEntropy):
        pass

    with mg.use(Embedding=MyEmbedding):
        with pytest.raises(KeyError), mg.use(CrossEntropy=MyCrossEntropy):
            assert seam.whose("Embedding") == seam.whose("CrossEntropy") == "yours"
            raise KeyError("boom")
        assert seam.whose("Embedding") == "yours" and seam.whose("CrossEntropy") != "yours"
    assert seam.whose("Embedding") != "yours"


def test_use_outside_a_with_block_does_nothing_and_says_so():
    with pytest.warns(RuntimeWarning, match="did nothing: it replaces ops only inside a `with` block"):
        mg.use(Embedding=MyEmbedding)
        gc.collect()
    assert seam.whose("Embedding") == "minigrad"


def test_none_means_minigrads_own_inside_an_outer_replacement():
    with mg.use(Embedding=MyEmbedding):
        with mg.use(Embedding=None):
            assert seam.whose("Embedding") == "minigrad"
        assert seam.whose("Embedding") == "yours"


def test_a_block_cannot_be_entered_twice():
    block = mg.use(Embedding=MyEmbedding)
    with block, pytest.raises(RuntimeError, match="open already"):
        with block:
            pass
    assert seam.whose("Embedding") == "minigrad"


class Zeros(mg.Function):
    """A wrong lookup that the red-team test would leave installed if blocks restored snapshots."""

    @staticmethod
    def forward(ctx, weight, ids, sparse=True, padding_idx=None):
        return np.zeros((*ids.shape, weight.shape[1]), weight.dtype)

    @staticmethod
    def backward(ctx, grad):
        return None, None


def lookup_is_minigrads():
    out = F.embedding(mg.tensor([1]), mg.tensor(np.ones((3, 2))))
    return seam.whose("Embedding") == "minigrad" and out.data.tolist() == [[1.0, 1.0]]


def running_lookup():
    w = mg.tensor(np.ones((3, 2)), requires_grad=True)
    return F.embedding(mg.tensor([1]), w).grad_fn.function


@pytest.mark.parametrize("order", ["inner first", "outer first"])
def test_blocks_ending_in_either_order_in_one_thread_leave_nothing_behind(order):
    class MyCrossEntropy(ops.CrossEntropy):
        pass

    outer, inner = mg.use(Embedding=Zeros), mg.use(CrossEntropy=MyCrossEntropy, Embedding=MyEmbedding)
    outer.__enter__()
    inner.__enter__()
    assert seam.whose("Embedding") == seam.whose("CrossEntropy") == "yours"
    assert running_lookup() is MyEmbedding  # the innermost block's
    first, second = (inner, outer) if order == "inner first" else (outer, inner)
    first.__exit__(None, None, None)
    # what is left is exactly what the block still open put in
    assert (seam.whose("CrossEntropy") == "yours") == (second is inner)
    assert running_lookup() is (MyEmbedding if second is inner else Zeros)
    second.__exit__(None, None, None)
    assert lookup_is_minigrads() and seam.whose("CrossEntropy") == "minigrad"


@pytest.mark.parametrize("order", ["a leaves first", "b leaves first"])
def test_blocks_of_two_threads_ending_in_either_order_leave_nothing_behind(order):
    # the red-team case: A enters use(Embedding=Zeros), B enters a block of its own, they leave
    a_in, b_in, a_go, b_go = (threading.Event() for _ in range(4))
    seen = {}

    def thread_a():
        with mg.use(Embedding=Zeros):
            seen["a inside"] = seam.whose("Embedding")
            a_in.set()
            a_go.wait(10)
        seen["a after"] = lookup_is_minigrads()

    def thread_b():
        with mg.use(CrossEntropy=None):
            seen["b inside"] = seam.whose("Embedding")  # A's block is A's alone
            b_in.set()
            b_go.wait(10)
        seen["b after"] = lookup_is_minigrads()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    threads[0].start()
    a_in.wait(10)
    threads[1].start()
    b_in.wait(10)
    leaving = [(a_go, threads[0]), (b_go, threads[1])]
    for go, thread in leaving if order == "a leaves first" else leaving[::-1]:
        go.set()
        thread.join(10)
    assert seen == {"a inside": "yours", "b inside": "minigrad", "a after": True, "b after": True}
    assert lookup_is_minigrads()
    from minigrad.engine import function

    assert function.open_blocks == 0


def test_a_block_in_one_thread_does_not_change_another_threads_ops():
    inside, leave = threading.Event(), threading.Event()

    def other():
        with mg.use(Embedding=Zeros):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    try:
        assert lookup_is_minigrads()  # this thread still runs minigrad's lookup
    finally:
        leave.set()
        thread.join(10)


@pytest.mark.parametrize("name", ["op", "function", "next_nodes", "grad_shape", "needs_input_grad",
                                  "forward_trace"])
def test_a_forward_that_sets_a_reserved_name_is_refused_naming_it(name):
    class Clobbers(mg.Function):
        @staticmethod
        def forward(ctx, x):
            setattr(ctx, name, "mine")
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(AttributeError, match=rf"Clobbers.forward set ctx.{name}, a name the backward "
                                             rf"node keeps for itself .*ctx.my_{name}"):
        Clobbers.apply(x)
    with mg.use(Tanh=Clobbers), pytest.raises(AttributeError, match=f"ctx.{name}"):
        x.tanh()


def test_a_forward_may_save_shape_and_other_names():
    class SavesShape(mg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape, ctx.ids, ctx.axis = x.shape, None, 0
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    SavesShape.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_use_fast_is_a_deprecated_spelling_of_the_kernels_switch():
    from minigrad.engine import kernels

    with pytest.warns(DeprecationWarning, match="plain_only"):
        block = mg.use(fast=False)
    with block:
        assert not kernels.fast_enabled()
    assert kernels.fast_enabled() == (os.environ.get("MINIGRAD_FAST_KERNELS", "1") != "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(TypeError, match="fast"):
            mg.use(fast="no")


@pytest.mark.parametrize("bad", [
    {"Embeding": MyEmbedding},  # a typo: not an op
    {"Embedding": object},
    {"Embedding": lambda ctx, w, i: w[i]},
    {"Embedding": MyEmbedding()},
])
def test_a_name_that_is_not_an_op_or_a_value_that_is_not_a_function_is_refused(bad):
    with pytest.raises((ValueError, TypeError)) as info:
        mg.use(**bad)
    message = str(info.value)
    assert "Embedding" in message or "Embeding" in message
    if "Embeding" in bad:
        assert "CrossEntropy" in message  # the known ops are listed
    assert seam.whose("Embedding") != "yours"  # nothing half-applied
