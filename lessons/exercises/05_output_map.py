"""Lesson 5 exercise: the two gradients of the output map.

Fill in the function below, then run `minigrad check 5`.
"""

import numpy as np


def output_map_grads(H: np.ndarray, W: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of L = mean over positions n of -log softmax(H[n] @ W.T)[targets[n]].

    H:       (N, d) float, the final vector h at each of N positions.
    W:       (V, d) float, the output map (one row w_i per vocabulary entry, as nn.Linear(d, V)).
    targets: (N,) int, the correct next token at each position.
    returns: (dL/dW, dL/dH) with shapes (V, d) and (N, d).

    Hints: do one position first (N = 1). With p = softmax(z), z = W h, and y the one-hot of
    the target, the logits' gradient is p - y. Row i of W saw h through z_i = h . w_i; h saw
    every row. Then the mean: each position contributes with weight 1/N.
    """
    raise NotImplementedError("lesson 5: write output_map_grads(H, W, targets)")
