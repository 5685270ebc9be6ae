"""Lesson 4 reference answer."""

import numpy as np


def row_gradients(ids: np.ndarray, upstream: np.ndarray, vocab_size: int) -> np.ndarray:
    """dL/dE for X = E[ids]: (B, T) ids, (B, T, d) upstream -> (V, d)."""
    width = upstream.shape[-1]
    grad = np.zeros((vocab_size, width), dtype=upstream.dtype)
    # unbuffered add: a repeated id receives the sum of all its occurrences' vectors
    np.add.at(grad, ids.reshape(-1), upstream.reshape(-1, width))
    return grad
