"""Lesson 3 exercise: the gradient of the table when the lookup is written as a product.

Fill in the function below, then run `minigrad check 3`.
"""

import numpy as np


def table_grad_from_one_hot(one_hot: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """dL/dE for X = one_hot @ E.

    one_hot:  (N, V) float, row n is all zeros except a 1 at the id read at position n.
    upstream: (N, d) float, G = dL/dX, the gradient arriving at each position's vector.
    returns:  (V, d), the gradient of the loss with respect to the table E.

    Hints: the answer has the shape of E. For a product X = A B, the gradient of the right
    factor B is A^T G. Row v of your answer should be the sum of the upstream rows at
    the positions that read token v, and exactly zero when no position read it.
    """
    raise NotImplementedError("lesson 3: write table_grad_from_one_hot(one_hot, upstream)")
