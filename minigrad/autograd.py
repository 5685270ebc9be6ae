"""The backward graph and the engine that walks it.

A forward op records a `Node` that knows how to send a gradient back to its inputs. A leaf
tensor that requires grad owns exactly one `AccumulateGrad` node; every op that reads that
tensor points an edge at that same node, so a shared (tied) parameter is one node with
several incoming edges, by construction.

`backward` orders nodes by dependency counting (no recursion, so a 100,000-op chain is
fine), sums every gradient that reaches a node before running it, and frees saved arrays
unless `retain_graph=True`.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.sparse import add_grads

if TYPE_CHECKING:
    from minigrad.tensor import Tensor

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

    def apply(self, grad: Any) -> tuple[Any, ...]:
        var = self.variable
        # A leaf's .grad owns its memory: the same array may have been sent to two edges.
        grad = _own(grad, var.data.dtype)
        var.grad = grad if var.grad is None else add_grads(var.grad, grad)
        return ()


def _own(grad: Any, dtype: np.dtype) -> Any:
    if isinstance(grad, np.ndarray):
        return np.array(grad, dtype=dtype, copy=True)
    return grad.astype(dtype)  # RowSparse: astype returns a fresh copy


class FunctionNode(Node):
    """The backward of one call of a `Function`: holds its ctx and edges to the inputs."""

    def __init__(self, function: type[Function], ctx: Context, next_nodes: tuple):
        self.function = function
        self.ctx = ctx
        self.next_nodes = next_nodes
        self.released = False
        self.forward_trace: list[str] | None = None  # set in anomaly mode
        self.output_shape: tuple[int, ...] | None = None  # the forward's result shape, for drawing

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

    def __init__(self) -> None:
        self._saved: tuple[np.ndarray, ...] | None = ()
        self._versions: list[tuple[Tensor, int, int]] = []  # (tensor, index in saved, version)
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved(self) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError("saved arrays were freed (pass retain_graph=True to keep them)")
        return self._saved

    def watch_versions(self, tensors: list[Tensor]) -> None:
        """Remember the version of every tensor whose array the forward saved."""
        for i, arr in enumerate(self._saved or ()):
            for t in tensors:
                if arr is t.data:
                    self._versions.append((t, i, t._version))

    def check_versions(self, op: str) -> None:
        for t, i, version in self._versions:
            if t._version != version:
                label = f"'{t.name}'" if t.name else f"of shape {t.shape}"
                raise RuntimeError(
                    f"{op}: a tensor {label} that this op saved for backward (saved input "
                    f"{i}) was modified in place: it is at version {t._version}, but the op "
                    f"saved it at version {version}. Clone it before modifying, or modify it "
                    "after backward."
                )

    def release(self) -> None:
        self._saved = None
        self._versions = []


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
        from minigrad.tensor import Tensor

        tensors = [a for a in args if isinstance(a, Tensor)]
        arrays = [a.data if isinstance(a, Tensor) else a for a in args]
        ctx = Context()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        out = cls.forward(ctx, *arrays, **kwargs)
        requires_grad = _grad_enabled and any(ctx.needs_input_grad)
        result = Tensor._wrap(out, requires_grad=requires_grad)
        if requires_grad:
            edges = tuple(
                a._grad_node() if isinstance(a, Tensor) and a.requires_grad else None
                for a in args
            )
            node = FunctionNode(cls, ctx, edges)
            node.output_shape = result.shape
            ctx.watch_versions(tensors + [result])
            if _anomaly_enabled:
                node.forward_trace = traceback.format_stack()[:-2]
            result.grad_fn = node
        return result


# ---------------------------------------------------------------------------------------------
# The engine


def backward(root: Tensor, grad: Any = None, retain_graph: bool = False) -> None:
    """Send d(root)=grad back through the graph into the leaves' `.grad`."""
    from minigrad.tensor import as_array

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
    dependencies = _count_dependencies(start)
    pending: dict[Node, Any] = {start: grad}
    ready = [start]
    while ready:
        node = ready.pop()
        node_grad = pending.pop(node, None)
        if node_grad is None:
            # every consumer sent None: nothing flows through, but its inputs stop waiting
            grads: tuple = (None,) * len(node.next_nodes)
        else:
            grads = node.apply(node_grad)
            if _anomaly_enabled:
                _check_finite(node, grads)
        for next_node, g in zip(node.next_nodes, grads):
            if next_node is None:
                continue
            if g is not None:
                if _recorders and isinstance(next_node, AccumulateGrad):
                    for recorder in _recorders:
                        recorder(node, next_node, g)
                pending[next_node] = add_grads(pending[next_node], g) if next_node in pending else g
            dependencies[next_node] -= 1
            if dependencies[next_node] == 0:  # all consumers have sent theirs: run it next
                ready.append(next_node)
        if not retain_graph and node_grad is not None:
            node.release()


def _count_dependencies(start: Node) -> dict[Node, int]:
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
