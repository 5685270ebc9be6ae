"""The backward graph and the walk over it. This module sees nodes and arrays, never tensors.

A forward op records a node (function.py's `FunctionNode`) that sends a gradient back to its
inputs. A leaf tensor that requires grad has one `AccumulateGrad` node while a graph reads it; every op
that reads that tensor points an edge at that same node, so a shared (tied) parameter is one
node with several incoming edges, by construction.
"""

from __future__ import annotations

import threading
import traceback
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import grad_mode
from minigrad.engine.sparse import add_grads, add_into

if TYPE_CHECKING:
    from minigrad.engine.function import FunctionNode
    from minigrad.engine.tensor import Tensor


class Node:
    """One vertex of the backward graph: takes d(out) and returns d(inputs).

    `grad_shape`: the shape of the tensor whose gradient this node receives.
    """

    next_nodes: tuple[Node | None, ...] = ()
    grad_shape: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def apply(self, grad: Any, owned: bool = False) -> tuple[Any, ...]:
        """One gradient per edge in `next_nodes`. `owned`: the walk made `grad` (a sum) and
        nothing else holds it."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop what the forward saved; called after backward unless retain_graph."""

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad(Node):
    """The sink for one leaf tensor: every gradient that reaches the leaf goes into `.grad` here.

    It holds its tensor strongly and the tensor holds it weakly, so a leaf lives as long as a
    graph reads it or its owner keeps it, and is freed by reference counting alone. The lock:
    two threads running backward into one parameter must not lose each other's sum.
    """

    def __init__(self, variable: Tensor):
        self.variable = variable

    @property
    def grad_shape(self) -> tuple[int, ...]:  # type: ignore[override]  # read from the leaf, not set
        return self.variable.data.shape

    def apply(self, grad: Any, owned: bool = False) -> tuple[Any, ...]:
        var = self.variable
        # An array an op returned may be held elsewhere too (the ledger, another input): .grad
        # gets a copy of it. A sum the walk made (`owned`) is held by nothing else: it becomes
        # .grad as it is, which saves a (V, d) copy per step for a tied table.
        if grad.dtype != var.data.dtype or (var.grad is None and not owned):
            grad = own_copy(grad, var.data.dtype)
        with ACCUMULATE_LOCK:
            var.grad = grad if var.grad is None else add_grads(var.grad, grad)  # a sum is a new array
        return ()


ACCUMULATE_LOCK = threading.Lock()


def own_copy(grad: Any, dtype: np.dtype[Any]) -> Any:
    """A copy of `grad` (an array or RowSparse) in `dtype` that nothing else holds."""
    if isinstance(grad, (np.ndarray, np.generic)):  # a 0-d op may return a numpy scalar
        return np.array(grad, dtype=dtype, copy=True)
    return grad.astype(dtype)  # RowSparse: astype returns a fresh copy


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
    """Send d(output) = `grad` from `start` to the leaves.

    Dependency counting (Kahn's algorithm, run from the output): a node runs once every consumer
    has sent its gradient, on the sum of what arrived; each gradient it returns is checked against
    the shape of its input and added to that input's sum; then its saved arrays are freed (unless
    retain_graph). No recursion, so a 100,000-op chain is fine.
    """
    waiting = count_dependencies(start)  # how many consumers each node has yet to hear from
    sums: dict[Node, Any] = {start: grad}  # what has arrived at each node, summed
    made: set[Node] = set()  # the nodes whose sum the walk made itself (see add_gradient)
    ready = [start]
    anomaly = grad_mode.is_anomaly_enabled()  # detect_anomaly: check every gradient for NaN/Inf
    while ready:
        node = ready.pop()
        run_node(node, sums, made, retain_graph, anomaly)  # its gradients go into the sums
        for child in node.next_nodes:
            if child is not None:  # an input that needs no gradient has no node
                waiting[child] -= 1
                if waiting[child] == 0:  # every consumer has sent its gradient: run it next
                    ready.append(child)


def run_node(node: Node, sums: dict[Node, Any], made: set[Node], retain_graph: bool,
             anomaly: bool) -> None:
    """Run `node` on the sum of what reached it and add each gradient it returns, once checked,
    to the sum of the input it is for; one that goes into a leaf is shown to the recorders (the
    gradient ledger) first. When nothing reached it (every consumer sent None), nothing flows
    on. Its saved arrays are freed unless retain_graph."""
    total = sums.pop(node, None)
    grads = () if total is None else node.apply(total, node in made)
    if anomaly:
        _check_finite(node, grads)
    if not retain_graph:
        node.release()
    for child, g in zip(node.next_nodes, grads):
        if g is None or child is None:
            continue
        try:
            fits = g.shape == child.grad_shape and g.dtype.kind == "f"
        except AttributeError:  # not an array at all
            fits = False
        if not fits:
            _refuse_gradient(node, child, g)
        if type(child) is AccumulateGrad:
            grad_mode.record(node, child, g)
        add_gradient(sums, made, child, g)


def add_gradient(sums: dict[Node, Any], made: set[Node], node: Node, g: Any) -> None:
    """Add `g` to what has reached `node`: the one place where gradients meet.

    The first gradient is kept as it came: the op that returned it may have handed the same
    array to another input too (Add sends one G to both). The second makes a new array,
    add_grads(total, g), which only the walk holds (`made`), so each later one is added into it
    in place: n gradients meeting at a node cost one new array, not n - 1.
    """
    if node not in sums:
        sums[node] = g
    elif node in made and adds_in_place(sums[node], g):
        add_into(sums[node], g)
    else:
        sums[node] = add_grads(sums[node], g)
        made.add(node)


def adds_in_place(total: Any, g: Any) -> bool:
    """Whether `total += g` gives exactly what add_grads(total, g) would: a dense total of g's
    shape whose dtype holds the sum."""
    return (type(total) is np.ndarray and g.shape == total.shape
            and np.result_type(total, getattr(g, "values", g)) == total.dtype)


def _refuse_gradient(node: Node, child: Node, g: Any) -> None:
    """Why a gradient cannot go on: a gradient has its input's shape (a RowSparse: its dense
    shape) and a floating dtype."""
    positions = [str(i) for i, edge in enumerate(node.next_nodes) if edge is child]
    position = positions[0] if len(positions) == 1 else f"{' or '.join(positions)} (one tensor read twice)"
    shape, dtype = getattr(g, "shape", None), getattr(g, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{node.name} returned a {type(g).__name__} as the gradient for input {position}; "
            f"return a numpy array of shape {child.grad_shape} (or None)"
        )
    if shape != child.grad_shape:
        raise RuntimeError(
            f"{node.name} returned a gradient of shape {shape} for input {position}, "
            f"which has shape {child.grad_shape}"
        )
    raise RuntimeError(
        f"{node.name} returned a gradient of dtype {dtype} for input {position}; "
        "gradients are floating-point arrays"
    )


def record_forward_trace(node: FunctionNode) -> None:
    """Anomaly mode: remember where in the forward this node was made."""
    node.forward_trace = traceback.format_stack()[:-3]


def _check_finite(node: Node, grads: tuple[Any, ...]) -> None:
    for i, g in enumerate(grads):
        values = getattr(g, "values", g)
        if values is not None and not np.all(np.isfinite(values)):
            where = ""
            trace = getattr(node, "forward_trace", None)
            if trace:
                where = "\nThe op was created in the forward at:\n" + "".join(trace[-4:])
            raise RuntimeError(
                f"detect_anomaly: {node.name} returned a gradient with NaN or Inf for its "
                f"input {i}.{where}"
            )
