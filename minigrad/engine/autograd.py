"""The backward graph and the engine that walks it.

A forward op records a `Node` that knows how to send a gradient back to its inputs. A leaf
tensor that requires grad owns exactly one `AccumulateGrad` node; every op that reads that
tensor points an edge at that same node, so a shared (tied) parameter is one node with
several incoming edges, by construction.

`backward` orders nodes by dependency counting (no recursion, so a 100,000-op chain is
fine), sums every gradient that reaches a node before running it, and frees saved arrays
unless `retain_graph=True`. It copies a gradient only when something besides the engine
holds it (docs/performance.md says why and how that is known).
"""

from __future__ import annotations

import contextlib
import sys
import traceback
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine.sparse import add_grads, add_into

if TYPE_CHECKING:
    from minigrad.engine.tensor import Tensor

# ---------------------------------------------------------------------------------------------
# Global switches: grad mode, anomaly mode, gradient recorders (the ledger hooks here).

_grad_enabled = True
_anomaly_enabled = False
_recorders: list[Any] = []


def is_grad_enabled() -> bool:
    return _grad_enabled


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Run ops without recording a graph (evaluation, optimizer steps)."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, True
    try:
        yield
    finally:
        _grad_enabled = previous


@contextlib.contextmanager
def detect_anomaly() -> Iterator[None]:
    """Remember where each op was created; raise when backward produces NaN or Inf."""
    global _anomaly_enabled
    previous, _anomaly_enabled = _anomaly_enabled, True
    try:
        yield
    finally:
        _anomaly_enabled = previous


@contextlib.contextmanager
def recording(recorder: Any) -> Iterator[Any]:
    """Call `recorder(sender, receiver, grad)` for every gradient sent into a leaf's node."""
    _recorders.append(recorder)
    try:
        yield recorder
    finally:
        _recorders.remove(recorder)


# ---------------------------------------------------------------------------------------------
# Nodes


class Node:
    """One vertex of the backward graph: takes d(out) and returns d(inputs)."""

    next_nodes: tuple[Node | None, ...] = ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def apply(self, grad: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    def release(self) -> None:
        """Drop what the forward saved; called after backward unless retain_graph."""

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad(Node):
    """The sink for one leaf tensor: adds every gradient that reaches it into `.grad`."""

    def __init__(self, variable: Tensor):
        self.variable = variable

    @property
    def name(self) -> str:
        return "AccumulateGrad"

    def apply(self, grad: Any, owned: bool = False) -> tuple[Any, ...]:
        """`owned`: the engine vouches that nothing else references `grad` (see `backward`)."""
        var = self.variable
        # A leaf's .grad owns its memory: the same array may have been sent to two edges, or be
        # kept by whoever made it. An array nobody else holds is stored as it is (no copy).
        if not (owned and grad.dtype == var.data.dtype):
            grad = _own(grad, var.data.dtype)
        var.grad = grad if var.grad is None else add_grads(var.grad, grad)
        return ()


def _own(grad: Any, dtype: np.dtype) -> Any:
    if isinstance(grad, np.ndarray):
        return np.array(grad, dtype=dtype, copy=True)
    return grad.astype(dtype)  # RowSparse: astype returns a fresh copy


class FunctionNode(Node):
    """The backward of one call of a `Function`: holds its ctx and edges to the inputs."""

    # class-level defaults, overridden per node only when set: one op costs a few microseconds
    released = False
    forward_trace: list[str] | None = None  # set in anomaly mode
    output_shape: tuple[int, ...] | None = None  # the forward's result shape, for drawing

    def __init__(self, function: type[Function], ctx: Context, next_nodes: tuple):
        self.function = function
        self.ctx = ctx
        self.next_nodes = next_nodes

    @property
    def name(self) -> str:
        return self.function.__name__ + "Backward"

    def apply(self, grad: Any) -> tuple[Any, ...]:
        if self.released:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time, but its "
                "saved arrays were already freed. Pass retain_graph=True to the first "
                "backward() if you need to backward twice."
            )
        if self.ctx._versions:
            self.ctx.check_versions(self.name)
        grads = self.function.backward(self.ctx, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.next_nodes):
            raise RuntimeError(
                f"{self.name}: backward returned {len(grads)} gradients but forward had "
                f"{len(self.next_nodes)} inputs (return None for inputs that need none)."
            )
        return grads

    def release(self) -> None:
        self.ctx.release()
        self.released = True


# ---------------------------------------------------------------------------------------------
# Function: forward and backward side by side


class Context:
    """What a forward keeps for its backward."""

    # class-level defaults, overridden per context only when set (most ops save nothing)
    _saved: tuple[np.ndarray, ...] | None = ()
    _versions: Sequence[tuple[weakref.ref, int, int]] = ()  # (tensor, index in saved, version)
    needs_input_grad: tuple[bool, ...] = ()
    # True while the engine runs this backward for the last time (no retain_graph): the saved
    # arrays are freed right after, so a backward may reuse a private saved buffer as its result.
    last_backward = False

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved(self) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError("saved arrays were freed (pass retain_graph=True to keep them)")
        return self._saved

    def watch_versions(self, tensors: list[Tensor]) -> None:
        """Remember the version of every tensor whose array the forward saved.

        By weak reference: an op that saves its own output (exp, tanh) would otherwise make a
        cycle (output -> node -> ctx -> output) that only the cycle collector frees, keeping
        the arrays of an unused graph alive. A tensor that is gone cannot change in place.
        """
        self._versions = [(weakref.ref(t), i, t._version) for i, arr in enumerate(self._saved or ())
                          for t in tensors if arr is t.data]

    def check_versions(self, op: str) -> None:
        for ref, i, version in self._versions:
            t = ref()
            if t is not None and t._version != version:
                label = f"'{t.name}'" if t.name else f"of shape {t.shape}"
                raise RuntimeError(
                    f"{op}: a tensor {label} that this op saved for backward (saved input "
                    f"{i}) was modified in place: it is at version {t._version}, but the op "
                    f"saved it at version {version}. Clone it before modifying, or modify it "
                    "after backward."
                )

    def release(self) -> None:
        self._saved = None
        self._versions = ()


class Function:
    """Subclass with `forward(ctx, *arrays, **kw)` and `backward(ctx, grad)`.

    `forward` receives numpy arrays (tensors are unwrapped) and returns one array.
    `backward` receives d(loss)/d(output) and returns one gradient per positional input,
    or None where an input needs none.
    """

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        Tensor = _tensor_class()
        # one pass over the inputs: unwrap tensors, note which need a gradient
        arrays, needs = [], []
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a.data)
                needs.append(a.requires_grad)
            else:
                arrays.append(a)
                needs.append(False)
        ctx = Context()
        ctx.needs_input_grad = tuple(needs)
        out = cls.forward(ctx, *arrays, **kwargs)
        requires_grad = _grad_enabled and True in needs
        result = Tensor._wrap(out, requires_grad=requires_grad)
        if requires_grad:
            edges = tuple([a._grad_node() if need else None for a, need in zip(args, needs)])
            node = FunctionNode(cls, ctx, edges)
            node.output_shape = result.shape
            if ctx._saved:
                ctx.watch_versions([a for a in args if isinstance(a, Tensor)] + [result])
            if _anomaly_enabled:
                node.forward_trace = traceback.format_stack()[:-2]
            result.grad_fn = node
        return result


_Tensor: Any = None


def _tensor_class() -> type[Tensor]:
    """minigrad.engine.tensor imports this module, so Tensor is looked up on first use (and kept:
    an import statement inside `apply` would cost more than the rest of a small op)."""
    global _Tensor
    if _Tensor is None:
        from minigrad.engine.tensor import Tensor

        _Tensor = Tensor
    return _Tensor


# ---------------------------------------------------------------------------------------------
# The engine


def backward(root: Tensor, grad: Any = None, retain_graph: bool = False) -> None:
    """Send d(root)=grad back through the graph into the leaves' `.grad`."""
    from minigrad.engine.tensor import as_array

    if not root.requires_grad:
        raise RuntimeError(
            "backward(): this tensor does not require grad and has no grad_fn; did you create "
            "it under no_grad(), or forget requires_grad=True on a leaf?"
        )
    if grad is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward(): grad can be implicitly created only for a single-element "
                f"output, but the output has shape {root.shape}; pass grad= of that shape."
            )
        grad = np.ones_like(root.data)
    else:
        grad = np.array(as_array(grad), dtype=root.data.dtype)
        if grad.shape != root.shape:
            raise ValueError(
                f"backward(): grad has shape {grad.shape} but the output has shape {root.shape}"
            )

    start = root._grad_node()
    dependencies = count_dependencies(start)
    pending: dict[Node, Any] = {start: grad}
    owned: set[Node] = {start}  # nodes whose pending gradient no one but the engine holds
    ready = [start]
    while ready:
        node = ready.pop()
        node_grad = pending.pop(node, None)
        ran = node_grad is not None
        if not ran:
            # every consumer sent None: nothing flows through, but its inputs stop waiting
            grads: list = [None] * len(node.next_nodes)
        elif isinstance(node, AccumulateGrad):
            grads = [*node.apply(node_grad, owned=node in owned)]
        else:
            if isinstance(node, FunctionNode):
                node.ctx.last_backward = not retain_graph
            # a list of our own: a backward that kept its returned tuple still shows in the counts
            grads = [*node.apply(node_grad)]
            if _anomaly_enabled:
                _check_finite(node, grads)
        # Drop our reference: a backward that passes its G straight on (Add, Clone) must leave
        # that array referenced by `grads` alone, or the ownership check below would miss it.
        del node_grad
        for i, next_node in enumerate(node.next_nodes):
            if next_node is None:
                continue
            g = grads[i]
            if g is not None:
                if _recorders and isinstance(next_node, AccumulateGrad):
                    for recorder in _recorders:
                        recorder(node, next_node, g)
                # Checked here, where the list `grads` and `g` are the engine's only references;
                # the recorders ran first, so one that kept `g` makes it shared.
                unshared = (type(g) is np.ndarray and g.base is None and g.flags.writeable
                            and _references(g) <= _UNSHARED_REFERENCES)
                _send(pending, owned, next_node, g, unshared)
            dependencies[next_node] -= 1
            if dependencies[next_node] == 0:  # all consumers have sent theirs: run it next
                ready.append(next_node)
        if not retain_graph and ran:
            node.release()


def _send(pending: dict[Node, Any], owned: set[Node], node: Node, g: Any, unshared: bool) -> None:
    """Add gradient `g` to what `node` has received so far, in place when the engine may.

    Summing into a buffer the engine owns saves a copy of the whole array per extra consumer;
    for a tied table that is a (V, d) copy when the lookup's rows meet the classifier's dense part.
    """
    if node not in pending:
        pending[node] = g
        if unshared:
            owned.add(node)
        return
    total = pending[node]
    if node in owned and _adds_in_place(total, g):
        add_into(total, g)
    elif unshared and _adds_in_place(g, total):  # g is ours: add what came before into it
        add_into(g, total)
        pending[node] = g
        owned.add(node)
    else:
        summed = add_grads(total, g)
        pending[node] = summed
        if type(summed) is np.ndarray and summed is not total and summed is not g:
            owned.add(node)  # a sum we just made: nobody else has it


def _adds_in_place(total: Any, g: Any) -> bool:
    """Whether `total += g` gives exactly what add_grads(total, g) would: same shape and dtype."""
    return (type(total) is np.ndarray and getattr(g, "shape", None) == total.shape
            and np.result_type(total, getattr(g, "values", g)) == total.dtype)


_HAS_REFERENCE_COUNTS = hasattr(sys, "getrefcount")  # False on PyPy: every gradient is copied


def _references(array: np.ndarray) -> int:
    return sys.getrefcount(array) if _HAS_REFERENCE_COUNTS else sys.maxsize


def _references_of_an_unshared_gradient() -> int:
    """What `_references` says in `backward` for an array that no one else holds.

    Like PyTorch's AccumulateGrad, which steals a gradient whose use count is 1, the engine keeps
    an array without copying it when nothing but the engine references it. The count depends on
    the interpreter (some borrow references), so it is measured here, in the engine's own setting:
    held by the engine's list of a backward's results and by the loop's local variable.
    """
    grads = [np.empty(1)]
    g = grads[0]
    return _references(g)


_UNSHARED_REFERENCES = _references_of_an_unshared_gradient()


def count_dependencies(start: Node) -> dict[Node, int]:
    """For each reachable node, how many edges point at it (iterative DFS)."""
    counts: dict[Node, int] = {start: 0}
    stack = [start]
    while stack:
        node = stack.pop()
        for child in node.next_nodes:
            if child is None:
                continue
            if child not in counts:
                counts[child] = 0
                stack.append(child)
            counts[child] += 1
    return counts


def _check_finite(node: Node, grads: tuple) -> None:
    for i, g in enumerate(grads):
        values = getattr(g, "values", g)
        if values is not None and not np.all(np.isfinite(values)):
            where = ""
            if isinstance(node, FunctionNode) and node.forward_trace:
                where = "\nThe op was created in the forward at:\n" + "".join(
                    node.forward_trace[-4:]
                )
            raise RuntimeError(
                f"detect_anomaly: {node.name} returned a gradient with NaN or Inf for its "
                f"input {i}.{where}"
            )
