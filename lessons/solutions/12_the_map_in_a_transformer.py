"""Lesson 12 reference answer."""

import numpy as np


def first_component_scores(table: np.ndarray) -> np.ndarray:
    """(V,) coordinates of the rows of a (V, d) table along its first principal component."""
    rows = np.asarray(table, dtype=np.float64)
    centred = rows - rows.mean(axis=0)  # components describe variation around the mean row
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    return centred @ components[0]  # each row's dot product with the first unit direction
