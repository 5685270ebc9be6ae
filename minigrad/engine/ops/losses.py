"""Losses with PyTorch's options (class-probability targets, label smoothing, ignore_index, class
weights, reduction="none"), outside the reading path: the plain fused CrossEntropy in
vocabulary.py is the common case, and F.cross_entropy calls these only when an option asks.

Every option is one array of coefficients A (..., C) that F builds from the targets: the loss
at position i is -sum_c A_ic log p_ic. A one-hot target is A = onehot(y); label smoothing eps
mixes in eps / C of every class; a class weight scales its column; an ignored position is a
row of zeros. Then, with p = softmax(z), the gradient needs no case at all:

    d/dz_i [-sum_c A_ic log p_ic] = (sum_c A_ic) p_i - A_i

A may carry a gradient (class-probability targets that are themselves computed, as PyTorch
allows): dA = -G log p. `divisor` is what reduction="mean" divides by (PyTorch's: the summed
weight of the targets counted, or the number of positions for probability targets).
"""

from __future__ import annotations

import numpy as np

from minigrad.engine.arrays import Array, Gradients
from minigrad.engine.function import Context, Function
from minigrad.engine.ops.vocabulary import log_softmax


def _reduce(per_position: Array, reduction: str, divisor: float) -> Array:
    if reduction == "none":
        return per_position
    total = per_position.sum()
    with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored: nan, as PyTorch
        return np.asarray(total / divisor if reduction == "mean" else total, dtype=per_position.dtype)


def _spread(grad: Array, reduction: str, divisor: float) -> Array:
    """G as a factor for each position's row: (..., 1)."""
    if reduction == "none":
        return grad[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        factor: Array = grad / np.asarray(divisor if reduction == "mean" else 1, grad.dtype)
    return factor


class SoftTargetCrossEntropy(Function):
    """-sum_c A_ic log softmax(z)_ic per position, reduced; dz = G ((sum_c A_ic) p_i - A_i).

    logits: (..., C); coefficients: (..., C) as the module docstring says -> (...) or a scalar.
    """

    @staticmethod
    def forward(ctx: Context, logits: Array, coefficients: Array, reduction: str = "mean",
                divisor: float = 1.0) -> Array:
        log_p = log_softmax(logits)
        ctx.save_for_backward(log_p, coefficients)
        ctx.reduction, ctx.divisor = reduction, divisor
        return _reduce(-(coefficients * log_p).sum(axis=-1), reduction, divisor)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # and dA = -G log p (soft targets learn too)
        log_p, coefficients = ctx.saved
        step = _spread(grad, ctx.reduction, ctx.divisor)
        dz = (coefficients.sum(axis=-1, keepdims=True) * np.exp(log_p) - coefficients) * step
        return dz, -log_p * step if ctx.needs_input_grad[1] else None


class NLLLoss(Function):
    """-sum_c A_ic x_ic per position (x: log-probabilities), reduced; dx = -G A."""

    @staticmethod
    def forward(ctx: Context, log_p: Array, coefficients: Array, reduction: str = "mean",
                divisor: float = 1.0) -> Array:
        ctx.save_for_backward(log_p, coefficients)
        ctx.reduction, ctx.divisor = reduction, divisor
        return _reduce(-(coefficients * log_p).sum(axis=-1), reduction, divisor)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # dx = -G A (and dA = -G x)
        log_p, coefficients = ctx.saved
        step = _spread(grad, ctx.reduction, ctx.divisor)
        return -coefficients * step, -log_p * step if ctx.needs_input_grad[1] else None
