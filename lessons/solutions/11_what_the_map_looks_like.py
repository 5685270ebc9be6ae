"""Lesson 11 reference answers."""

from collections import Counter

import numpy as np


def mean_pairwise_cosine(table: np.ndarray, centre: bool) -> float:
    """Mean of cos(row_i, row_j) over pairs i != j of a (V, d) table, optionally centred first."""
    rows = np.asarray(table, dtype=np.float64)
    if centre:
        rows = rows - rows.mean(axis=0)  # subtract the mean row, the direction every token shares
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    cosines = unit @ unit.T                # (V, V), ones on the diagonal
    V = len(unit)
    return float((cosines.sum() - np.trace(cosines)) / (V * (V - 1)))


def merge_step(words: dict[tuple, int]) -> tuple[tuple | None, dict[tuple, int]]:
    """Count adjacent pairs weighted by their pre-token's count; join the most frequent everywhere."""
    pairs: Counter = Counter()
    for pieces, count in words.items():
        for pair in zip(pieces, pieces[1:]):  # overlapping positions count: "aaa" holds ("a", "a") twice
            pairs[pair] += count
    if not pairs:
        return None, words
    best = max(pairs, key=lambda pair: (pairs[pair], pair))  # a tie goes to the greater pair
    merged = {}
    for pieces, count in words.items():
        joined, i = [], 0
        while i < len(pieces):  # left to right, so "aaa" becomes ("aa", "a")
            if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == best:
                joined.append(pieces[i] + pieces[i + 1])
                i += 2
            else:
                joined.append(pieces[i])
                i += 1
        merged[tuple(joined)] = count
    return best, merged
