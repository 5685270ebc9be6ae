"""What the engine copies and what it may keep: no shortcut may change a gradient.

The backward walk adds into a sum in place, and hands a sum to `.grad` without copying it, only
when the walk made that sum itself (graph.add_gradient): nothing else can hold it. An array an
op returned is always copied into `.grad`. These tests build every way something else can hold one.
"""

import weakref

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import graph, kernels, recording
from minigrad.nn import functional as F


def leaf(values, dtype=np.float64):
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def doubling(keep=None):
    """A Function whose backward returns a fresh 2*G, optionally also keeping it in `keep`."""
    made = []

    class Double(mg.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            out = 2 * grad
            made.append(weakref.ref(out))
            if keep is not None:
                keep.append(out)
            return out

    return Double, made


fast_kernels_only = pytest.mark.skipif(not kernels.fast_enabled(),
                                       reason="a fast kernel, off (MINIGRAD_FAST_KERNELS=0)")


def test_an_array_an_op_returned_is_copied_into_grad():
    Double, made = doubling()
    x = leaf([1.0, 2.0])
    Double.apply(x).sum().backward()
    assert made[0]() is None or x.grad is not made[0]()  # the op's array is not the .grad


def test_a_sum_the_walk_made_becomes_grad_without_a_copy_and_later_ones_add_into_it(monkeypatch):
    sums = []
    real_add_grads = graph.add_grads

    def watched(total, g):
        sums.append(real_add_grads(total, g))
        return sums[-1]

    monkeypatch.setattr(graph, "add_grads", watched)
    x = leaf([1.0, 2.0])
    seen = []
    with recording(lambda sender, receiver, g: seen.append(g)):
        ((x * 2.0).sum() + (x * 3.0).sum() + (x * 4.0).sum()).backward()
    assert len(sums) == 1, "three gradients meet: one new array, the third added into it"
    assert x.grad is sums[0]
    np.testing.assert_array_equal(x.grad, [9.0, 9.0])
    assert sorted(g[0] for g in seen) == [2.0, 3.0, 4.0]  # each contribution unchanged


def test_a_gradient_its_backward_kept_is_copied():
    kept = []
    Double, _ = doubling(keep=kept)
    x = leaf([1.0, 2.0])
    Double.apply(x).sum().backward()
    assert x.grad is not kept[0]
    x.grad *= 10
    np.testing.assert_array_equal(kept[0], [2.0, 2.0])


def test_a_backward_returning_a_forward_array_does_not_alias_it():
    class PassSaved(mg.Function):  # d(x * c)/dx for G = 1 is c itself: returned as it is
        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(c)
            return x * c

        @staticmethod
        def backward(ctx, grad):
            (c,) = ctx.saved
            return c, None

    c = np.array([3.0, 4.0])
    x = leaf([1.0, 2.0])
    PassSaved.apply(x, c).sum().backward()
    x.grad *= 10
    np.testing.assert_array_equal(c, [3.0, 4.0])


def test_gradients_a_recorder_keeps_are_not_summed_into():
    w = leaf([1.0, 2.0])
    seen = []
    with recording(lambda sender, receiver, g: seen.append(g)):
        ((w * 2.0).sum() + (w * 3.0).sum()).backward()
    np.testing.assert_array_equal(w.grad, [5.0, 5.0])
    assert sorted(g[0] for g in seen) == [2.0, 3.0]  # each contribution as it was sent


@pytest.mark.parametrize("add_path_first", [True, False])
def test_one_array_sent_along_two_edges_is_summed_into_neither(add_path_first):
    p, q = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    w, v = np.array([1.0, 10.0]), np.array([100.0, 1000.0])
    through_add = ((p + q) * w).sum()  # Add sends its one G array to both p and q
    through_p = (p * v).sum()  # p also gets a second contribution
    (through_add + through_p if add_path_first else through_p + through_add).backward()
    np.testing.assert_array_equal(p.grad, w + v)
    np.testing.assert_array_equal(q.grad, w)


@pytest.mark.parametrize("lookup_first", [True, False])
def test_tied_table_sums_lookup_rows_and_classifier_exactly(lookup_first):
    # ids repeat (row 1 twice) and leave row 3 untouched by the lookup
    ids, targets = np.array([1, 0, 1]), np.array([2, 3, 0])
    table = leaf(np.random.default_rng(0).normal(size=(4, 3)))

    def loss(w):
        lookup = F.embedding(ids, w).tanh()
        head = F.linear(lookup, w)  # the same table as the unembedding
        parts = [lookup.sum() * 0.1, F.cross_entropy(head, targets)]
        first, second = parts if lookup_first else parts[::-1]
        return first + second

    assert mg.gradcheck(loss, [table]).ok


def test_cross_entropy_backward_twice_with_retain_graph():
    z = leaf(np.random.default_rng(1).normal(size=(3, 5)))
    loss = F.cross_entropy(z, np.array([0, 4, 4]))
    loss.backward(retain_graph=True)
    once = z.grad.copy()
    loss.backward()  # the saved softmax buffer must have survived the first backward
    np.testing.assert_allclose(z.grad, 2 * once)


def test_cross_entropy_gradient_is_p_minus_y_over_n():
    logits = np.random.default_rng(2).normal(size=(4, 6))
    targets = np.array([5, 0, 0, 3])
    z = leaf(logits)
    F.cross_entropy(z, targets).backward()
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    p[np.arange(4), targets] -= 1
    np.testing.assert_allclose(z.grad, p / 4, rtol=1e-12, atol=1e-15)


FLOAT32_CASES = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0), "matmul": lambda a, b: a @ b.T,
    "pow": lambda a, b: (a * a + 1.0) ** 1.5 + b, "neg": lambda a, b: -a + b,
    "exp_log": lambda a, b: (a.exp() + 1.0).log() * b, "tanh": lambda a, b: a.tanh() * b,
    "sigmoid": lambda a, b: a.sigmoid() * b, "relu": lambda a, b: a.relu() * b,
    "gelu": lambda a, b: a.gelu() * b, "gelu_tanh": lambda a, b: a.gelu("tanh") * b,
    "softmax": lambda a, b: a.softmax(-1) * b, "log_softmax": lambda a, b: a.log_softmax(-1) * b,
    "sum_mean_max": lambda a, b: a.sum(0) + a.mean(0) + a.max(0) + b,
    "shape": lambda a, b: a.reshape(3, 2).T.transpose(0, 1)[1:] * b[:, :2],
    "concat_stack": lambda a, b: F.concatenate([a, b], 0) + F.stack([a, b], 0).sum(0).sum(0),
    "linear": lambda a, b: F.linear(a, b, b[:, 0]),
    "cross_entropy": lambda a, b: F.cross_entropy(a * b, np.array([0, 2])),
    "embedding": lambda a, b: F.embedding(np.array([1, 0, 1]), a) * b[0],
}


@pytest.mark.parametrize("name", list(FLOAT32_CASES))
def test_float32_stays_float32_forward_and_backward(name):
    rng = np.random.default_rng(3)
    a, b = (leaf(rng.normal(size=(2, 3)), dtype=np.float32) for _ in range(2))
    out = FLOAT32_CASES[name](a, b)
    assert out.dtype == np.float32
    out.sum().backward()
    for x in (a, b):
        if x.grad is not None:
            assert x.grad.dtype == np.float32


# ---- the cross-entropy's recycled buffer --------------------------------------------------------

def cross_entropy_buffer(loss):
    """The (N, C) array a cross-entropy node saved: its recycled softmax buffer."""
    return loss.grad_fn.ctx.saved[0]


@fast_kernels_only
def test_cross_entropy_reuses_its_buffer_once_the_last_graph_is_gone():
    z = mg.tensor(np.random.default_rng(4).normal(size=(3, 5)))  # no grad: only the buffer matters
    w = leaf(np.ones(5))
    first = F.cross_entropy(z * w, np.array([0, 1, 2]))
    kept = weakref.ref(cross_entropy_buffer(first))
    first.backward()
    del first
    second = F.cross_entropy(z * w, np.array([0, 1, 2]))
    assert cross_entropy_buffer(second) is kept()


def test_cross_entropy_never_reuses_a_buffer_a_pending_graph_holds():
    rng = np.random.default_rng(5)
    a, b = leaf(rng.normal(size=(3, 5))), leaf(rng.normal(size=(3, 5)))
    targets = np.array([4, 0, 4])
    pending = F.cross_entropy(a * 1.0, targets)  # not backwarded yet: its buffer is in use
    other = F.cross_entropy(b * 1.0, targets)
    assert cross_entropy_buffer(other) is not cross_entropy_buffer(pending)
    other.backward()
    pending.backward()
    fresh = leaf(a.data)
    F.cross_entropy(fresh, targets).backward()
    np.testing.assert_allclose(a.grad, fresh.grad, rtol=1e-12)


def test_a_leaf_grad_from_cross_entropy_survives_the_next_call():
    rng = np.random.default_rng(6)
    z, targets = leaf(rng.normal(size=(2, 4))), np.array([1, 3])
    F.cross_entropy(z, targets).backward()
    before = z.grad.copy()
    F.cross_entropy(leaf(rng.normal(size=(2, 4))), targets).backward()  # may reuse the buffer
    np.testing.assert_array_equal(z.grad, before)


def test_a_graph_never_backpropagated_is_freed_without_the_cycle_collector():
    import gc

    x = leaf([1.0, 2.0])
    gc.disable()
    try:
        y = x.tanh().exp()  # both ops save their own output
        gone = weakref.ref(y)
        del y
        assert gone() is None
    finally:
        gc.enable()


def test_an_op_output_changed_in_place_is_still_caught():
    x = leaf([1.0, 2.0])
    y = x.exp()  # Exp saves its output for the backward
    loss = y.sum()
    with mg.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"ExpBackward.*modified in place"):
        loss.backward()
