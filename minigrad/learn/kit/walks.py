"""Watching a backward walk: which node ran, when, on what (lesson 1, and its check); and
minigrad's own side of lesson 3's piece, the table's gradient of a one-hot product.

A walk is any function `walk(root, grad)` that runs the nodes of a backward graph from the
output's node `root`, calling `node.apply(g)` on each: minigrad's own
(`minigrad.engine.graph.backward`), or the one the learner writes in lesson 1. `watching(seen)`
calls `seen(node, grad, sent)` each time a node runs inside it, whoever's walk runs it;
`walk_order(walk, output)` runs a walk and returns the nodes in the order they ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from minigrad.engine import AccumulateGrad, FunctionNode, Node, Tensor


@contextlib.contextmanager
def watching(seen: Callable[[Node, Any, tuple], None]) -> Iterator[None]:
    """Inside: each time any node runs, `seen(node, the gradient it ran on, what it returned)`.
    (Every node is a FunctionNode or an AccumulateGrad: their `apply` is watched in place.)"""
    originals = {kind: kind.apply for kind in (FunctionNode, AccumulateGrad)}

    def watched(original: Callable) -> Callable:
        def apply(node: Node, grad: Any, *args: Any, **kwargs: Any) -> Any:
            sent = original(node, grad, *args, **kwargs)
            seen(node, grad, sent)
            return sent
        return apply

    for kind, original in originals.items():
        kind.apply = watched(original)  # type: ignore[method-assign]  # watched for this block only
    try:
        yield
    finally:
        for kind, original in originals.items():
            kind.apply = original  # type: ignore[method-assign]  # the method back as it was


def walk_order(walk: Callable[[Node | None, np.ndarray], None], output: Tensor,
               grad: Any = None) -> list[Node]:
    """Run `walk(output.grad_fn, grad)` (grad: ones like the output by default) and return the
    nodes in the order they ran, a node as often as it ran."""
    ran: list[Node] = []
    seed = np.ones_like(output.data) if grad is None else np.asarray(grad, dtype=output.dtype)
    with watching(lambda node, _grad, _sent: ran.append(node)):
        walk(output.grad_fn, seed)
    return ran


def node_label(node: Node) -> str:
    """A node's name, with the leaf's name for an AccumulateGrad: `AccumulateGrad(x)`."""
    if isinstance(node, AccumulateGrad):
        return f"AccumulateGrad({node.variable.name})"
    return node.name


def table_grad_by_backward(one_hot: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """dL/dE for X = one_hot @ E and dL/dX = upstream, from minigrad's own backward of the
    product (lesson 3's piece, minigrad's side): (N, V), (N, d) -> (V, d)."""
    one_hot, upstream = np.asarray(one_hot), np.asarray(upstream)
    table = Tensor(np.zeros((one_hot.shape[1], upstream.shape[1]), dtype=upstream.dtype), requires_grad=True)
    (Tensor(one_hot.astype(upstream.dtype)) @ table).backward(upstream)
    return np.asarray(table.grad)
