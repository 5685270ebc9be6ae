"""Lesson 13 exercise: answer an analogy a : b :: c : ? by 3CosAdd.

Fill in the function below, then run `minigrad check 13`.
"""

import numpy as np


def solve_analogy(table: np.ndarray, a: int, b: int, c: int) -> int:
    """The id of the row x, other than a, b and c, with the largest cos(x, b - a + c).

    table:   (V, d) float, one row per word (no row all zero), V >= 4.
    a, b, c: row ids; "a is to b as c is to ?" (man : woman :: king : ?).
    returns: an int, the id of the best row.

    Hints: scale every row to length 1 first (3CosAdd adds unit vectors, so a long row does
    not dominate the sum). The query words themselves usually score highest: leave them out.
    """
    raise NotImplementedError("lesson 13: write solve_analogy(table, a, b, c)")
