"""Lesson 12 exercise: each row's score on the first principal component of a table.

Fill in the function below, then run `minigrad check 12`.
"""

import numpy as np


def first_component_scores(table: np.ndarray) -> np.ndarray:
    """The coordinate of every row of `table` along the table's first principal component.

    table:   (V, d) float, one row per token (V >= 2).
    returns: (V,) float: after subtracting the mean row from every row, each row's dot product
             with the unit vector (d,) along which the centred rows vary most. Either sign is
             right (a component's direction is arbitrary).

    Hints: centre first. np.linalg.svd(centred, full_matrices=False) gives U, S, Vt with
    centred = U @ diag(S) @ Vt; the rows of Vt are the components (unit vectors of length d),
    largest first.
    """
    raise NotImplementedError("lesson 12: write first_component_scores(table)")
