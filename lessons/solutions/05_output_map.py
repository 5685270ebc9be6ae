"""Lesson 5 reference answer."""

import numpy as np


def output_map_grads(H: np.ndarray, W: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dL/dW, dL/dH) for the mean cross-entropy of logits H W^T: shapes (V, d) and (N, d)."""
    logits = H @ W.T                                   # (N, V)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = shifted / shifted.sum(axis=1, keepdims=True)
    dlogits = probs.copy()
    dlogits[np.arange(len(targets)), targets] -= 1.0   # p - y
    dlogits /= len(targets)                            # the mean over N positions
    # z_n,i = h_n . w_i: row i collects (p - y)_n,i h_n over positions; h_n collects every row
    return dlogits.T @ H, dlogits @ W
