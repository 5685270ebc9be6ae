"""Lesson 9 exercise: where a token ranks when its own row is scored by a table.

Fill in the function below, then run `minigrad check 9`.
"""

import numpy as np


def rank_of_self(read: np.ndarray, score: np.ndarray) -> np.ndarray:
    """For each token t, how many tokens j score strictly higher than t itself.

    read:    (V, d) float, the rows that are read (the input table E).
    score:   (V, d) float, the rows that score (the output map W).
    The score of token j when row t is read is read[t] . score[j].
    returns: (V,) int; 0 where t gets the top score of its own row.

    Hints: all V x V scores come from one matrix product. A tie with t does not push t down.
    """
    raise NotImplementedError("lesson 9: write rank_of_self(read, score)")
