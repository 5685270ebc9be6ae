"""Lesson 11 reference answers."""

import numpy as np


def mean_pairwise_cosine(table: np.ndarray, centre: bool) -> float:
    """Mean of cos(row_i, row_j) over pairs i != j of a (V, d) table, optionally centred first."""
    rows = np.asarray(table, dtype=np.float64)
    if centre:
        rows = rows - rows.mean(axis=0)  # subtract the mean row, the direction every token shares
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = unit @ unit.T                # (V, V), ones on the diagonal
    V = len(unit)
    return float((cosines.sum() - np.trace(cosines)) / (V * (V - 1)))
