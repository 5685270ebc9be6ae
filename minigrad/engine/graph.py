"""The backward graph and the walk over it. This module sees nodes and arrays, never tensors.

A forward op records a `FunctionNode` that knows how to send a gradient back to its inputs. A
leaf tensor that requires grad has one `AccumulateGrad` node while a graph reads it; every op
that reads that tensor points an edge at that same node, so a shared (tied) parameter is one
node with several incoming edges, by construction.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from minigrad.engine import fast, grad_mode
from minigrad.engine.function import Context, Function
from minigrad.engine.sparse import add_grads, add_into


class Node:
    """One vertex of the backward graph: takes d(out) and returns d(inputs).

    `shape`: the shape of the tensor whose gradient this node receives.
    """

    next_nodes: tuple[Node | None, ...] = ()
    shape: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def apply(self, grad: Any, ours: bool = False, last: bool = False) -> list[Any]:
        """One gradient per edge in `next_nodes`.

        `ours`: nothing but the engine holds `grad`. `last`: the node is released right after.
        """
        raise NotImplementedError

    def release(self) -> None:
        """Drop what the forward saved; called after backward unless retain_graph."""

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad(Node):
    """The sink for one leaf tensor: adds every gradient that reaches it into `.grad`.

    It holds its tensor strongly and the tensor holds it weakly, so a leaf lives as long as a
    graph reads it or its owner keeps it, and is freed by reference counting alone.
    """

    def __init__(self, variable: Any):  # variable: the leaf Tensor
        self.variable = variable

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.variable.data.shape

    def apply(self, grad: Any, ours: bool = False, last: bool = False) -> list[Any]:
        var = self.variable
        # .grad owns its memory: an array someone else may hold (or of another dtype) is copied
        if grad.dtype != var.data.dtype or not (ours or var.grad is not None):
            grad = _copy(grad, var.data.dtype)
        var.grad = grad if var.grad is None else add_grads(var.grad, grad)  # a sum is a new array
        return []


def _copy(grad: Any, dtype: np.dtype) -> Any:
    if isinstance(grad, (np.ndarray, np.generic)):  # a 0-d op may return a numpy scalar
        return np.array(grad, dtype=dtype, copy=True)
    return grad.astype(dtype)  # RowSparse: astype returns a fresh copy


class FunctionNode(Node):
    """The backward of one call of a `Function`: holds its ctx and edges to the inputs."""

    forward_trace: list[str] | None = None  # set in anomaly mode

    def __init__(self, function: type[Function], ctx: Context, next_nodes: tuple,
                 shape: tuple[int, ...]):
        self.function = function
        self.ctx = ctx
        self.next_nodes = next_nodes
        self.shape = shape  # the forward's result shape

    @property
    def name(self) -> str:
        return self.function.__name__ + "Backward"

    def apply(self, grad: Any, ours: bool = False, last: bool = False) -> list[Any]:
        ctx = self.ctx
        if ctx._saved is None:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time, but its "
                "saved arrays were already freed. Pass retain_graph=True to the first "
                "backward() if you need to backward twice."
            )
        if ctx._versions:
            ctx.check_versions(self)
        ctx.last_backward = last
        grads = self.function.backward(ctx, grad)
        grads = [*grads] if isinstance(grads, tuple) else [grads]  # a list of the engine's own
        if len(grads) != len(self.next_nodes):
            raise RuntimeError(
                f"{self.name}: backward returned {len(grads)} gradients but forward had "
                f"{len(self.next_nodes)} inputs (return None for inputs that need none)."
            )
        return grads

    def release(self) -> None:
        self.ctx.release()

    @property
    def released(self) -> bool:
        return self.ctx._saved is None


def count_dependencies(start: Node) -> dict[Node, int]:
    """For each node reachable from `start`, how many edges point at it (iterative DFS)."""
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


def backward(start: Node, grad: Any, retain_graph: bool = False) -> None:
    """Send d(output) = `grad`, an array the caller made for this walk, from `start` to the leaves.

    Dependency counting (Kahn's algorithm, run from the output): a node runs once every
    consumer has sent its gradient, on the sum of what arrived; each gradient it returns is
    checked against the shape of the input it is for and sent on; then its saved arrays are
    freed (unless retain_graph). No recursion, so a 100,000-op chain is fine.
    """
    waiting = count_dependencies(start)  # how many consumers each node has yet to hear from
    arrived: dict[Node, Any] = {start: grad}  # the sum of what has reached each node so far
    ours = {start}  # nodes whose sum nobody but the engine holds: it may add into it in place
    ready = [start]
    anomaly = grad_mode.is_anomaly_enabled()  # detect_anomaly: check every gradient for NaN/Inf
    while ready:
        node = ready.pop()
        total = arrived.pop(node, None)
        if total is None:  # every consumer sent None: nothing flows on, but the inputs stop waiting
            grads: list[Any] = [None] * len(node.next_nodes)
        else:
            grads = node.apply(total, ours=node in ours, last=not retain_graph)
            if anomaly:
                _check_finite(node, grads)
        del total  # a backward that passes G on (Add) must leave it held by `grads` alone
        for i, child in enumerate(node.next_nodes):
            if child is None:
                continue
            g = grads[i]
            if g is not None:
                _check_gradient(node, i, child, g)
                leaf = isinstance(child, AccumulateGrad)
                if leaf:
                    grad_mode.record(node, child, g)
                if leaf or child in arrived or waiting[child] > 1:  # g is stored or summed
                    unshared = fast.unshared(g)  # after the recorders: one that kept g shares it
                    _arrive(arrived, ours, child, g, unshared)
                else:  # the one gradient an op's node gets: nothing to sum, nothing to store
                    arrived[child] = g
            waiting[child] -= 1
            if waiting[child] == 0:  # every consumer has sent its gradient: run it next
                ready.append(child)
        if not retain_graph:
            node.release()


def _arrive(arrived: dict[Node, Any], ours: set[Node], node: Node, g: Any, unshared: bool) -> None:
    """Add gradient `g` to what `node` has received so far, in place into a buffer that is ours.

    A sum the engine made is ours by construction; `unshared` (a fast path) says `g` is ours too.
    Summing in place saves a copy of the whole array per extra consumer: for a tied table, a
    (V, d) copy where the lookup's rows meet the classifier's dense gradient.
    """
    if node not in arrived:
        arrived[node] = g
        if unshared:
            ours.add(node)
        return
    total = arrived[node]
    if node in ours and _adds_in_place(total, g):
        add_into(total, g)
    elif unshared and _adds_in_place(g, total):  # g is ours: add what came before into it
        add_into(g, total)
        arrived[node] = g
        ours.add(node)
    else:
        arrived[node] = add_grads(total, g)  # always a new array or RowSparse
        ours.add(node)


def _adds_in_place(total: Any, g: Any) -> bool:
    """Whether `total += g` gives exactly what add_grads(total, g) would: same shape and dtype."""
    return (type(total) is np.ndarray and g.shape == total.shape
            and np.result_type(total, getattr(g, "values", g)) == total.dtype)


def _check_gradient(node: Node, position: int, child: Node, g: Any) -> None:
    """A gradient has its input's shape (a RowSparse: its dense shape) and a floating dtype."""
    try:
        if g.shape == child.shape and g.dtype.kind == "f":
            return
    except AttributeError:  # not an array: said below
        pass
    shape, dtype = getattr(g, "shape", None), getattr(g, "dtype", None)
    if shape != child.shape:
        if shape is None:
            raise TypeError(
                f"{node.name} returned a {type(g).__name__} as the gradient for input {position}; "
                f"return a numpy array of shape {child.shape} (or None)"
            )
        raise RuntimeError(
            f"{node.name} returned a gradient of shape {shape} for input {position}, "
            f"which has shape {child.shape}"
        )
    raise RuntimeError(
        f"{node.name} returned a gradient of dtype {dtype} for input {position}; "
        "gradients are floating-point arrays"
    )


def record_forward_trace(node: FunctionNode) -> None:
    """Anomaly mode: remember where in the forward this node was made."""
    node.forward_trace = traceback.format_stack()[:-3]


def _check_finite(node: FunctionNode, grads: list[Any]) -> None:
    for i, g in enumerate(grads):
        values = getattr(g, "values", g)
        if values is not None and not np.all(np.isfinite(values)):
            where = ""
            if node.forward_trace:
                where = "\nThe op was created in the forward at:\n" + "".join(node.forward_trace[-4:])
            raise RuntimeError(
                f"detect_anomaly: {node.name} returned a gradient with NaN or Inf for its "
                f"input {i}.{where}"
            )
