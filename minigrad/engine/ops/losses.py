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


# ---- binary cross-entropy: one probability (or logit) per entry --------------------------------

def _reduced(per_entry: Array, reduction: str) -> Array:
    """The entries' losses as they are ("none"), summed, or averaged over every entry."""
    if reduction == "none":
        return per_entry
    total = per_entry.sum() if reduction == "sum" else per_entry.mean() if per_entry.size else np.nan
    return np.asarray(total, dtype=per_entry.dtype)


def _per_entry(grad: Array, reduction: str, size: int) -> Array:
    """What each entry's loss receives of G: G itself ("none", "sum"), or G / n for the mean."""
    return grad / np.asarray(size, grad.dtype) if reduction == "mean" else grad


class BCE(Function):
    """-w (y log p + (1 - y) log(1 - p)) per entry, reduced; each log is clamped at -100, as in
    PyTorch, so a p of exactly 0 or 1 costs 100 rather than infinity.

    p, y, w broadcast to p's shape. dp = G w (p - y) / max(p (1 - p), 1e-12) (PyTorch's guard
    against dividing by zero); dy = G w (log(1 - p) - log p); w is a constant.
    """

    @staticmethod
    def forward(ctx: Context, p: Array, y: Array, weight: Array,
                reduction: str = "mean") -> Array:
        with np.errstate(divide="ignore"):
            log_p, log_q = np.maximum(np.log(p), -100), np.maximum(np.log1p(-p), -100)
        ctx.save_for_backward(p, y, weight)
        ctx.reduction = reduction
        return _reduced(-weight * (y * log_p + (1 - y) * log_q), reduction)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        p, y, weight = ctx.saved
        g = _per_entry(grad, ctx.reduction, p.size) * weight
        grad_p = g * (p - y) / np.maximum(p * (1 - p), np.asarray(1e-12, p.dtype))
        with np.errstate(divide="ignore"):
            grad_y = g * (np.log1p(-p) - np.log(p)) if ctx.needs_input_grad[1] else None
        return grad_p, grad_y, None


class BCEWithLogits(Function):
    """BCE of sigmoid(x), without computing the sigmoid's logs: per entry
        w [(1 - y) x + l softplus(-x)],  l = 1 + (pos_weight - 1) y,  softplus(-x) = -log s(x)
    (pos_weight multiplies the positive term, -y log s(x)), reduced. softplus(-x) is taken as
    max(-x, 0) + log(1 + e^-|x|), finite for every x.
        dx = G w ((1 - y) - l s(-x)),  dy = G w (-x + (pos_weight - 1) softplus(-x))
    """

    @staticmethod
    def forward(ctx: Context, x: Array, y: Array, weight: Array, pos_weight: Array,
                reduction: str = "mean") -> Array:
        softplus_neg = np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))
        scale = 1 + (pos_weight - 1) * y
        ctx.save_for_backward(x, y, weight, pos_weight)
        ctx.reduction = reduction
        return _reduced(weight * ((1 - y) * x + scale * softplus_neg), reduction)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        x, y, weight, pos_weight = ctx.saved
        g = _per_entry(grad, ctx.reduction, x.size) * weight
        with np.errstate(over="ignore"):  # e^x = inf for a large x: s(-x) = 0, as it should be
            s_neg = 1 / (1 + np.exp(x))  # s(-x)
        grad_x = g * ((1 - y) - (1 + (pos_weight - 1) * y) * s_neg)
        grad_y = None
        if ctx.needs_input_grad[1]:
            softplus_neg = np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))
            grad_y = g * (-x + (pos_weight - 1) * softplus_neg)
        return grad_x, grad_y, None, None
