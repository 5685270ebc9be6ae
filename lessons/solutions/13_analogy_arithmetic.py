"""Lesson 13 reference answer."""

import numpy as np


def solve_analogy(table: np.ndarray, a: int, b: int, c: int) -> int:
    """3CosAdd: argmax over x not in {a, b, c} of cos(x, unit(b) - unit(a) + unit(c))."""
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    scores = unit @ (unit[b] - unit[a] + unit[c])  # (V,), each row's cosine up to one common factor
    scores[[a, b, c]] = -np.inf  # the query words are not answers
    return int(np.argmax(scores))
