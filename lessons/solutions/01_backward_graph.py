"""Lesson 1, reference answer: the backward of softplus."""

import numpy as np

import minigrad as mg


class Softplus(mg.Function):
    @staticmethod
    def forward(ctx, x: np.ndarray) -> np.ndarray:
        """x: any shape, float -> softplus(x), same shape."""
        ctx.save_for_backward(x)
        return np.logaddexp(0.0, x)  # log(e^0 + e^x), computed without overflow

    @staticmethod
    def backward(ctx, grad: np.ndarray) -> np.ndarray:
        """d softplus(x)/dx = e^x / (1 + e^x) = sigmoid(x); dL/dx = G * sigmoid(x)."""
        (x,) = ctx.saved
        # sigmoid(x) = 1 / (1 + e^-x) = e^x / (1 + e^x): pick per element the form whose
        # exponent is not positive, so np.exp never overflows.
        e = np.exp(-np.abs(x))
        sigmoid = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
        return grad * sigmoid
