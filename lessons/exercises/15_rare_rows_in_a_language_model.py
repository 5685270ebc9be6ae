"""Lesson 15 exercise: how long each row of a table goes without a gradient.

Fill in the function below, then run `minigrad check 15`.
"""

import numpy as np


def longest_silences(steps: list[np.ndarray], vocab_size: int) -> np.ndarray:
    """Each row's longest run of consecutive training steps on which it was not read.

    steps:      one array per training step, the token ids that step read (any shape; a token
                may appear several times in one step).
    vocab_size: V, the number of rows.
    returns:    (V,) int: for each row, the most consecutive steps in a row on which its id did
                not appear. The steps before its first read and after its last read count too,
                so a row read on every step has 0 and a row never read has len(steps).

    Example: steps [[0, 1], [0], [0, 2]] with V = 4 gives [0, 2, 2, 3].
    """
    raise NotImplementedError("lesson 15: write longest_silences(steps, vocab_size)")
