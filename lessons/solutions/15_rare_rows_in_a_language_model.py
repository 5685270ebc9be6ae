"""Lesson 15 reference answer."""

import numpy as np


def longest_silences(steps: list[np.ndarray], vocab_size: int) -> np.ndarray:
    """(V,) each row's longest run of steps without a read, the runs at both ends included."""
    longest = np.zeros(vocab_size, dtype=np.int64)
    current = np.zeros(vocab_size, dtype=np.int64)  # the silence each row is in now
    for ids in steps:
        read = np.zeros(vocab_size, dtype=bool)
        read[np.asarray(ids).ravel()] = True
        current = np.where(read, 0, current + 1)  # a read ends the silence, any other step lengthens it
        longest = np.maximum(longest, current)
    return longest
