"""Lesson 1, reference answer: the backward walk, by dependency counting."""

import numpy as np


def count_consumers(root) -> dict:
    """For every node reachable from root, the number of edges pointing at it."""
    counts = {root: 0}
    to_visit = [root]
    while to_visit:
        node = to_visit.pop()
        for child in node.next_nodes:
            if child is None:
                continue
            if child not in counts:
                counts[child] = 0
                to_visit.append(child)
            counts[child] += 1
    return counts


def backward_walk(root, grad: np.ndarray) -> None:
    """Kahn's algorithm from the output: a node runs once every consumer has sent its gradient,
    on their sum; what it returns is added to the sums of the nodes below."""
    waiting = count_consumers(root)
    arrived = {root: grad}
    ready = [root]
    while ready:
        node = ready.pop()
        total = arrived.pop(node, None)  # None: every consumer sent None
        grads = () if total is None else node.apply(total)
        for child, g in zip(node.next_nodes, grads or (None,) * len(node.next_nodes)):
            if child is None:
                continue
            if g is not None:
                arrived[child] = g if child not in arrived else arrived[child] + g  # a new array
        for child in node.next_nodes:
            if child is not None:
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
