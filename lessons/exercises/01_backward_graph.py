"""Lesson 1 exercise: the backward walk itself.

`loss.backward()` hands the gradient of the loss to the loss's node and walks the graph from
there to the leaves. Write that walk. Fill in `backward_walk`, then run

    minigrad check 1                  (or: minigrad check 1 --file YOUR_COPY.py)

Once your copy passes, lesson 1 runs its graphs on your walk, beside minigrad's.
"""

import numpy as np


def backward_walk(root, grad: np.ndarray) -> None:
    """Send `grad`, the gradient of the output, from the output's node `root` (loss.grad_fn) to
    every leaf, so that each leaf that requires grad ends with its gradient in `.grad`.

    What a node offers:
      node.next_nodes   one entry per input of the op: the node that input came from, or None
                        for an input that needs no gradient (a number, an array of ids)
      node.apply(g)     runs the node's backward on g, the gradient of its output, and returns
                        one gradient per entry of next_nodes (None where it sends nothing).
                        A leaf's node (an AccumulateGrad) adds g into the leaf's .grad and
                        returns ().

    Rules:
    - Run each node once, on the sum of every gradient its consumers sent it, so only after
      all of them have run. (Count, before you start, how many edges point at each node.)
    - A node that received no gradient at all (every consumer sent None) does not run, but it
      still counts as heard from for the nodes below it.
    - Graphs can be thousands of nodes deep: no recursion.
    - Never add into an array in place: one op may send the same array to two inputs.
    """
    raise NotImplementedError("lesson 1: write backward_walk(root, grad)")
