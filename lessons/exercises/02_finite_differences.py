"""Lesson 2 exercise: estimate a gradient with central differences.

Fill in `central_difference`, then run

    minigrad check 2                  (or: minigrad check 2 --file YOUR_COPY.py)

The check compares your estimates with gradients known exactly and, when they disagree,
says what went wrong. Once your copy passes, lesson 2's full gradchecks run on it.
"""

from collections.abc import Callable

import numpy as np


def central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float) -> np.ndarray:
    """Estimate the gradient of the scalar function f at x, one element at a time.

    f:    takes an array shaped like x, returns a float.
    x:    float64 array of any shape (a 0-d array, one number, too); when your function
          returns, x must hold exactly the values it held on entry.
    eps:  the step size to use.
    Returns an array shaped like x whose element i estimates df/dx[i].

    Hints:
    - Nudge one element at a time, up by eps and down by eps, and evaluate f at both points:
      two evaluations of f per element, no more.
    - The two points are 2 * eps apart.
    - np.ndindex(x.shape) visits every index of an array of any shape.
    """
    raise NotImplementedError("lesson 2: central_difference is not written yet")
