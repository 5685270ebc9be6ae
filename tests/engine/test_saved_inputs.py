"""What an op keeps for its backward cannot be changed behind its back (issue 22, items 2 and 3).

Two ways to be safe, chosen per op (docs/engine.md, "What an op keeps"): integer and bool inputs
(targets, masks, conditions, index arrays, token ids) are copied at forward, so a change after
the forward, through minigrad's item assignment or by refilling a numpy buffer, cannot reach the
gradient; float tensors an op saves, as they are or as a numpy view (`x.reshape(-1, n)`), are
version-watched, so a change in place makes backward refuse, as PyTorch does.
"""

import contextlib

import numpy as np
import pytest

import minigrad as mg
from minigrad import Function
from minigrad.nn import functional as F

FAST = pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])


def kernels(fast):
    """The kernels chosen by default (fast), or the plain ones."""
    return contextlib.nullcontext() if fast else mg.kernels.plain_only()


def leaf(shape, seed):
    return mg.tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True)


def grads_after(build, change, fast):
    """The leaves' gradients of build()'s loss when `change()` runs between forward and backward."""
    with kernels(fast):
        loss, leaves, kept = build()
        change(kept)
        loss.backward()
    return [t.grad.to_dense() if hasattr(t.grad, "to_dense") else t.grad for t in leaves]


def assert_immune(build, changes, fast):
    reference = grads_after(build, lambda kept: None, fast)
    for change in changes:
        changed = grads_after(build, change, fast)
        for ours, expected in zip(changed, reference, strict=True):
            np.testing.assert_array_equal(ours, expected)


def set_first(kept, value):
    kept[(0,) * kept.ndim] = value


# ---- integer and bool inputs: copied at forward ------------------------------------------------

@FAST
@pytest.mark.parametrize("kind", ["tensor", "array"])
def test_cross_entropy_targets(fast, kind):
    def build():
        z = leaf((2, 3), 0)
        y = mg.tensor([0, 1]) if kind == "tensor" else np.array([0, 1])
        return F.cross_entropy(z, y), [z], y
    assert_immune(build, [lambda y: set_first(y, 2)], fast)


@FAST
def test_linear_cross_entropy_targets(fast):
    def build():
        x, w = leaf((2, 4), 0), leaf((3, 4), 1)
        y = mg.tensor([0, 1])
        return F.linear_cross_entropy(x, w, y), [x, w], y
    assert_immune(build, [lambda y: set_first(y, 2)], fast)


@FAST
@pytest.mark.parametrize("kind", ["tensor", "array"])
def test_masked_fill_mask(fast, kind):
    def build():
        a = leaf((2, 3), 0)
        mask = np.array([[True, False, False], [False, True, False]])
        mask = mg.tensor(mask) if kind == "tensor" else mask
        return (a.masked_fill(mask, 0.0) * a).sum(), [a], mask
    assert_immune(build, [lambda m: set_first(m, False)], fast)


@FAST
@pytest.mark.parametrize("kind", ["tensor", "array"])
def test_where_condition(fast, kind):
    def build():
        a, b = leaf((3,), 0), leaf((3,), 1)
        condition = np.array([True, False, True])
        condition = mg.tensor(condition) if kind == "tensor" else condition
        return (F.where(condition, a, b) * 2.0).sum(), [a, b], condition
    assert_immune(build, [lambda c: set_first(c, False)], fast)


@FAST
@pytest.mark.parametrize("kind", ["tensor", "array", "tuple"])
def test_getitem_index(fast, kind):
    def build():
        a = leaf((4, 2), 0)
        index = np.array([0, 2])
        index_of = {"tensor": mg.tensor(index), "array": index}.get(kind, index)
        picked = a[index_of] if kind != "tuple" else a[(index_of, slice(None))]
        return (picked * picked).sum(), [a], index_of
    assert_immune(build, [lambda i: set_first(i, 3)], fast)


@FAST
def test_setitem_index(fast):
    def build():
        a, value = leaf((4,), 0), leaf((2,), 1)
        index = mg.tensor([0, 2])
        y = a * 1.0
        y[index] = value * 3.0
        return (y * y).sum(), [a, value], index
    assert_immune(build, [lambda i: set_first(i, 3)], fast)


@FAST
def test_embedding_ids(fast):
    def build():
        table = leaf((5, 2), 0)
        ids = mg.tensor([[0, 1], [1, 4]])
        return (F.embedding(ids, table) ** 2).sum(), [table], ids
    assert_immune(build, [lambda i: set_first(i, 3)], fast)


# ---- float tensors: version-watched, as saved or as a view -------------------------------------

IN_PLACE_CHANGE = r"modified in place: it is at version \d+, but the op saved it at version \d+"


@FAST
def test_linear_cross_entropy_refuses_a_changed_input(fast):
    """It saves x.reshape(-1, in), a view of x's array: a change of x is seen (the reported case)."""
    with kernels(fast):
        x, w = leaf((2, 3, 4), 0), leaf((5, 4), 1)
        y = np.array([[0, 1, 2], [3, 4, 0]])
        h = x * 1.0
        loss = F.linear_cross_entropy(h, w, y)
        h.mul_(2.0)
        with pytest.raises(RuntimeError, match="LinearCrossEntropyBackward.*" + IN_PLACE_CHANGE):
            loss.backward()


@FAST
@pytest.mark.parametrize("changed", ["x", "weight"])
def test_linear_cross_entropy_refuses_a_no_grad_change_of_a_leaf(fast, changed):
    with kernels(fast):
        x, w = leaf((6, 4), 0), leaf((5, 4), 1)
        loss = F.linear_cross_entropy(x, w, np.array([0, 1, 2, 3, 4, 0]))
        with mg.no_grad():
            (x if changed == "x" else w).mul_(2.0)
        with pytest.raises(RuntimeError, match=IN_PLACE_CHANGE):
            loss.backward()


class SavesAView(Function):
    """A learner's op that keeps a view of its input: y = 2 a, saving a.reshape(-1) for no reason."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a.reshape(-1), a.T)
        return 2 * a

    @staticmethod
    def backward(ctx, grad):
        flat, _ = ctx.saved
        return grad * 2 + 0 * flat.reshape(grad.shape)


@pytest.mark.parametrize("changed", ["input", "view of the input", "base of the input"])
def test_any_op_that_saves_a_view_of_an_input_is_watched(changed):
    base = leaf((3, 4), 0) * 1.0
    a = base[1:]  # a view: it shares base's array and version counter
    out = SavesAView.apply(a)
    target = {"input": a, "view of the input": a[0], "base of the input": base}[changed]
    with mg.no_grad():
        target.add_(1.0)
    with pytest.raises(RuntimeError, match="SavesAViewBackward.*" + IN_PLACE_CHANGE):
        out.sum().backward()


# every op that saves a float input or output, each input changed in place between forward and
# backward: backward refuses (as PyTorch would) or its gradients are exactly the unchanged ones
SAVING_OPS = {
    "mul": (lambda a, b: a * b, [(2, 3), (2, 3)]),
    "div": (lambda a, b: a / (b * b + 1.0), [(2, 3), (2, 3)]),
    "pow": (lambda a: a ** 3, [(3,)]),
    "log": (lambda a: (a * a + 1.0).log(), [(3,)]),
    "exp": (lambda a: a.exp(), [(3,)]),
    "tanh": (lambda a: a.tanh(), [(3,)]),
    "sigmoid": (lambda a: a.sigmoid(), [(3,)]),
    "relu": (lambda a: a.relu(), [(3,)]),
    "max": (lambda a: a.max(axis=1), [(2, 3)]),
    "softmax": (lambda a: a.softmax(-1), [(2, 3)]),
    "log_softmax": (lambda a: a.log_softmax(-1), [(2, 3)]),
    "matmul": (lambda a, b: a @ b, [(2, 3), (3, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 3, w, b), [(2, 3), (3,), (3,)]),
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  [(1, 3, 2), (1, 3, 2), (1, 3, 2)]),
    "linear_cross_entropy": (lambda x, w: F.linear_cross_entropy(x, w, np.array([0, 2])),
                             [(2, 3), (4, 3)]),
}


@FAST
@pytest.mark.parametrize("name", list(SAVING_OPS))
def test_changing_any_saved_float_input_is_refused_or_harmless(name, fast):
    fn, shapes = SAVING_OPS[name]

    def run(change_input):
        with kernels(fast):
            leaves = [leaf(s, seed) for seed, s in enumerate(shapes)]
            inputs = [t * 1.0 for t in leaves]  # non-leaves, so in-place changes need no no_grad
            out = fn(*inputs)
            if change_input is not None:
                inputs[change_input].mul_(1.5)
            (out * out).sum().backward()
            return [t.grad for t in leaves]

    reference = run(None)
    for i in range(len(shapes)):
        try:
            changed = run(i)
        except RuntimeError as error:
            assert "modified in place" in str(error), error
            continue
        for ours, expected in zip(changed, reference, strict=True):
            np.testing.assert_array_equal(ours, expected, err_msg=f"{name}: input {i} changed")
