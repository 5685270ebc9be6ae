"""The engine's core: its import picture, per-thread grad mode, the checks of the backward walk,
leaves freed by reference counting, and views that share their base's version counter."""

import gc
import os
import select
import signal
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad import nn
from minigrad.engine import Function, RowSparse, fast
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


# ---- the fast paths give the same bits as the plain forms -----------------------------------------

def both_ways(program):
    """Run `program()` with the fast paths on and then off; return both results."""
    assert fast.enabled(), "run with MINIGRAD_FAST_PATHS unset to compare both ways"
    with_fast = program()
    with fast.disabled():
        assert not fast.enabled()
        plain = program()
    assert fast.enabled()
    return with_fast, plain


def assert_same_bits(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = mg.engine.to_dense(x), mg.engine.to_dense(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


needs_fast = pytest.mark.skipif(not fast.enabled(), reason="MINIGRAD_FAST_PATHS=0: nothing to compare")


@needs_fast
def test_tied_language_model_steps_with_adamw_are_bit_identical():
    from minigrad.models import TinyLM

    def program():
        rng = np.random.default_rng(0)
        model = TinyLM(vocab_size=50, embedding_dim=8, hidden=16, context=2, tied=True, rng=1)
        optimizer = mg.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
        out = []
        for _ in range(4):
            contexts = rng.integers(0, 50, size=(64, 2))
            contexts[:16] = 7  # one id very frequent: a long run when coalescing
            targets = rng.integers(0, 50, size=64)
            model.zero_grad()
            loss = model.loss(contexts, targets)
            loss.backward()
            optimizer.step()
            out.append(loss.data)
        return out + [p.data for p in model.parameters()]

    assert_same_bits(*both_ways(program))


@needs_fast
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_is_bit_identical_with_and_without_its_buffer(dtype):
    def program():
        rng = np.random.default_rng(3)
        z = leaf(rng.normal(size=(6, 11)) * 5, dtype=dtype)
        targets = rng.integers(0, 11, size=6)
        loss = F.cross_entropy(z * 2.0, targets)
        loss.backward(retain_graph=True)
        loss.backward()  # the second copies the buffer instead of reusing it
        summed = F.cross_entropy(z, targets, reduction="sum")
        summed.backward()
        return [loss.data, summed.data, z.grad]

    assert_same_bits(*both_ways(program))


def test_row_blocks_cover_every_row_once_on_two_threads(small_row_blocks):
    seen, threads = [], set()

    def work(lo, hi):
        seen.extend(range(lo, hi))
        threads.add(threading.get_ident())
        assert hi - lo <= 3

    fast.in_row_blocks(20, 5 * 8, work)
    assert sorted(seen) == list(range(20))
    assert len(threads) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_row_blocks_on_a_helper_of_its_own(small_row_blocks):
    fast.in_row_blocks(20, 5 * 8, lambda lo, hi: None)  # the parent's helper thread exists now
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: would wait forever on the parent's (absent) helper thread
        covered = []
        fast.in_row_blocks(20, 5 * 8, lambda lo, hi: covered.extend(range(lo, hi)))
        os.write(write, bytes([sorted(covered) == list(range(20))]))
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 20)
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    answer = os.read(read, 1) if ready else b""
    os.close(read)
    assert ready, "the forked child did not finish its row blocks"
    assert answer == b"\x01"


def test_row_blocks_stay_on_one_thread_below_the_parallel_size(monkeypatch):
    monkeypatch.setattr(fast, "_THREADS", 2)
    threads = set()
    fast.in_row_blocks(8, 64, lambda lo, hi: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_an_error_in_the_helper_threads_half_reaches_the_caller(small_row_blocks):
    def work(lo, hi):
        if lo >= 10:
            raise ValueError(f"row {lo}")

    with pytest.raises(ValueError, match="row 1"):
        fast.in_row_blocks(20, 5 * 8, work)


@needs_fast
@pytest.mark.parametrize("shape", [(20, 40), (3, 7, 40), (1, 40), (41, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_in_threaded_row_blocks_is_bit_identical(small_row_blocks, shape, dtype):
    def program():
        rng = np.random.default_rng(6)
        z = leaf(rng.normal(size=shape) * 8, dtype=dtype)
        targets = rng.integers(0, shape[-1], size=shape[:-1])
        loss = F.cross_entropy(z * 1.0, targets)
        loss.backward()
        return [loss.data, z.grad]

    assert_same_bits(*both_ways(program))


@needs_fast
@pytest.mark.parametrize("shape", [(20, 7), (3, 7, 5), (41,)])
def test_tanh_on_two_threads_gives_the_same_bits(small_row_blocks, shape):
    def program():
        a = leaf(np.random.default_rng(2).normal(size=shape) * 3)
        out = F.tanh(a * 1.0)
        out.sum().backward()
        return [out.data, a.grad]

    assert_same_bits(*both_ways(program))


@needs_fast
def test_cross_entropy_of_non_contiguous_logits_takes_the_plain_form(small_row_blocks):
    z = np.random.default_rng(7).normal(size=(40, 20)).T  # (20, 40), Fortran order
    assert fast.cross_entropy_exp(z, np.zeros((20, 1), dtype=np.int64)) is None
    assert fast.scale_rows(z, np.ones((20, 1)), None) is None


@needs_fast
@pytest.mark.parametrize("row_shape", [(), (1,), (2,), (5,), (3, 2), (128,)])
def test_coalescing_duplicate_ids_is_bit_identical(row_shape):
    rng = np.random.default_rng(4)
    ids = np.concatenate([rng.integers(0, 30, 300), np.full(200, 3), np.full(17, 9)])
    rng.shuffle(ids)
    values = rng.normal(size=(ids.size, *row_shape)).astype(np.float32)

    def program():
        c = RowSparse(ids, values, (30, *row_shape)).coalesce()
        return [c.indices, c.values]

    fast_result, plain = both_ways(program)
    assert_same_bits(fast_result, plain)
    expected = np.zeros((30, *row_shape))
    np.add.at(expected, ids, values.astype(np.float64))
    np.testing.assert_allclose(mg.engine.to_dense(RowSparse(*plain, (30, *row_shape))),
                               expected, rtol=1e-4, atol=1e-4)


@needs_fast
def test_diamonds_and_accumulation_are_bit_identical():
    def program():
        rng = np.random.default_rng(5)
        a = leaf(rng.normal(size=(4, 3)))
        table = leaf(rng.normal(size=(6, 3)))
        for _ in range(2):  # accumulate across calls
            left, right = a * 2.0, a.tanh()
            b = left * right + a  # a diamond with a third edge
            rows = F.embedding(np.array([1, 1, 5, 0]), table)
            head = F.linear(b + rows, table)  # the tied table: sparse rows meet a dense path
            (F.cross_entropy(head, np.array([0, 5, 5, 2])) + (b * b).sum()).backward()
        c = a + a
        (c + c).sum().backward()
        return [a.grad, table.grad]

    assert_same_bits(*both_ways(program))


def test_the_environment_variable_turns_the_fast_paths_off(tmp_path):
    import os
    import subprocess
    import sys

    code = "import minigrad.engine as e; print(e.fast.enabled())"
    env = dict(os.environ)
    for value, expected in (("0", "False"), ("1", "True")):
        env["MINIGRAD_FAST_PATHS"] = value
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True)
        assert done.stdout.strip() == expected


def test_with_the_fast_paths_off_every_gradient_is_copied_into_grad():
    class Double(Function):
        made = []

        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            out = 2 * grad
            Double.made.append(out)
            return out

    x = leaf([1.0, 2.0])
    with fast.disabled():
        Double.apply(x).sum().backward()
    assert x.grad is not Double.made[0]
    np.testing.assert_array_equal(x.grad, Double.made[0])


def test_a_zero_d_leaf_gets_a_zero_d_array_as_grad_also_when_accumulated():
    x = mg.tensor(2.0, requires_grad=True, dtype=np.float64)
    (x * 3).backward()
    assert type(x.grad) is np.ndarray and x.grad.shape == () and x.grad == 3.0
    (x * x).backward()  # a second backward adds into .grad
    assert type(x.grad) is np.ndarray and x.grad.shape == () and x.grad == 7.0
