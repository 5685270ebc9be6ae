"""Lesson 2, reference answer: central differences, one element at a time."""

from collections.abc import Callable

import numpy as np


def central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float) -> np.ndarray:
    """df/dx[i] ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), for every index i of x."""
    gradient = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        above = f(x)
        x[index] = original - eps
        below = f(x)
        x[index] = original  # put it back before moving to the next element
        gradient[index] = (above - below) / (2 * eps)
    return gradient
