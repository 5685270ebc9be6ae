"""Lesson 6 exercise: the gradient of one row of a tied table, from both of its paths.

Fill in the function below, then run `minigrad check 6`.
"""

import numpy as np


def tied_row_gradient(row: int, ids: np.ndarray, upstream: np.ndarray, H: np.ndarray, P: np.ndarray,
                      targets: np.ndarray) -> np.ndarray:
    """dL/dE[row] for a table E of shape (V, d) that is both read and said (weight tying).

    The model, with one table E used twice:
        x_n = E[ids[n]]                          the lookup, at input positions n = 0..N-1
        h_m = (any network of the x's)           the final vector at scoring positions m = 0..M-1
        p_m = softmax(E h_m)                     the classifier: logit i is h_m . E[i]
        L   = mean over m of -log p_m[targets[m]]

    row:      int in [0, V), the row whose gradient you return.
    ids:      (N,) int, the token read at each input position (ids may repeat).
    upstream: (N, d) float, dL/dx_n: the gradient that backward delivers to each looked-up
              vector. It already contains everything above the lookup, the 1/M included.
    H:        (M, d) float, the final vectors h_m.
    P:        (M, V) float, the probabilities p_m.
    targets:  (M,) int, the correct next token at each scoring position.
    returns:  (d,) float, the total gradient of L with respect to E[row].

    Hints: the row's gradient adds up what each path sends it. The lookup path: lesson 4
    (every position that read this row). The classifier path: lesson 5 (every scoring
    position, whatever the row's token). Some rows get one path only; a rare row never read
    still gets the other.
    """
    raise NotImplementedError("lesson 6: write tied_row_gradient(row, ids, upstream, H, P, targets)")
