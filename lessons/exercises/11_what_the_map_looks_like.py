"""Lesson 11 exercise: the cone statistic, and the step a byte-pair vocabulary is learned by.

Fill in the two functions below, then run `minigrad check 11`. Once your copy passes, lesson 11
measures every cone with your `mean_pairwise_cosine` and learns the byte-pair vocabularies of
its ladder's two smaller rungs with your `merge_step`.
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


def merge_step(words: dict[tuple, int]) -> tuple[tuple | None, dict[tuple, int]]:
    """One merge of byte-pair training.

    words:   every pre-token of the text (a word with its leading space, " the"), written as the
             tuple of its current pieces, -> how often it occurs: {(" ", "t", "h", "e"): 4016, ...}.
             Pieces are strings (or bytes: the same code works on both).
    returns: (pair, merged), where pair = (a, b) is the adjacent pair of pieces that occurs most
             often in the text (every adjacent position inside a pre-token counts, each as often
             as its pre-token occurs; pairs never span two pre-tokens; among pairs equally
             frequent, the greater one, as Python compares tuples), and merged is `words` with
             every occurrence of that pair, read left to right, joined into one piece a + b.
             When no pre-token has two pieces left, return (None, words).
    """
    raise NotImplementedError("lesson 11: write merge_step(words)")
