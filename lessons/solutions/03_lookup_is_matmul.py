"""Lesson 3 reference answer."""

import numpy as np


def table_grad_from_one_hot(one_hot: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """dL/dE for X = one_hot @ E: (N, V), (N, d) -> (V, d)."""
    # X = O E, so dL/dE = O^T G: row v sums G over the positions whose one-hot has its 1 at v
    return one_hot.T @ upstream
