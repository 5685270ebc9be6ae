"""Lesson 11 exercise: the cone statistic, the mean cosine between the rows of a table.

Fill in the function below, then run `minigrad check 11`. Once your copy passes, lesson 11
measures every cone with your `mean_pairwise_cosine`.
"""

import numpy as np


def mean_pairwise_cosine(table: np.ndarray, centre: bool) -> float:
    """The average cosine similarity over all pairs of different rows of `table`.

    table:  (V, d) float, one row per token (V >= 2, no row all zero).
    centre: if True, first subtract the mean row (the average over the V tokens, a (d,)
            vector) from every row, as you would before comparing embeddings.
    returns: a float, the mean of cos(row_i, row_j) over the V * (V - 1) ordered pairs i != j
             (the same as the mean over the V * (V - 1) / 2 unordered pairs).

    Hints: the cosine of two vectors is their dot product after each is scaled to length 1.
    The V x V matrix of all cosines has ones on its diagonal: a row compared with itself is
    not a pair. Centre first, then scale to length 1. The table is the lesson's own: leave it
    as it is.
    """
    raise NotImplementedError("lesson 11: write mean_pairwise_cosine(table, centre)")
