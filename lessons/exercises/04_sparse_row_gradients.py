"""Lesson 4 exercise: the table's gradient for a batch with repeated ids, by hand.

Fill in the function below, then run `minigrad check 4`.
"""

import numpy as np


def row_gradients(ids: np.ndarray, upstream: np.ndarray, vocab_size: int):
    """The gradient of the loss with respect to an embedding table E, for X = E[ids].

    ids:        (B, T) int token ids in [0, vocab_size); an id may appear several times.
    upstream:   (B, T, d) float, dL/dX: the gradient arriving at each position's vector.
    vocab_size: V, the number of rows of E.
    returns:    either a dense (V, d) numpy array, or a dict {row: (d,) gradient} listing the
                rows that receive gradient (rows left out count as zero).

    Hints: visit every position; its upstream vector belongs to the row of the id read there.
    A row read twice gets both vectors, added. A row never read gets exactly zero. Careful:
    with numpy, `grad[ids] += vectors` keeps only one vector per repeated id.
    """
    raise NotImplementedError("lesson 4: write row_gradients(ids, upstream, vocab_size)")
