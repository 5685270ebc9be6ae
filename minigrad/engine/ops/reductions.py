"""Reductions over axes: sum, mean, max; then min, prod, logsumexp, var. Each backward spreads G
back over the reduced axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arrays import Array
from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function


def _remember_reduction(ctx: Context, a: Array, axis: Any, keepdims: bool) -> Any:
    """Keep what the backward needs; returns the axis to reduce over. A 0-d array reduces over
    axis 0 or -1 to itself (as in PyTorch, while numpy's mean refuses that axis)."""
    if a.ndim == 0 and axis is not None:
        for ax in axis if isinstance(axis, tuple) else (axis,):
            if ax not in (0, -1):
                raise np.exceptions.AxisError(f"axis {ax} is out of range for a 0-d tensor (use 0 or -1)")
        axis = None
    ctx.in_shape, ctx.axis, ctx.keepdims = a.shape, axis, keepdims
    return axis


def _expand_reduced(reduced: Array, ctx: Context) -> Array:
    """Put back the axes a reduction removed (as size 1), so `reduced` broadcasts to its input."""
    if ctx.keepdims:
        return reduced
    if ctx.axis is None:
        return np.reshape(reduced, (1,) * len(ctx.in_shape))
    return np.expand_dims(reduced, ctx.axis)


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        total_dtype = np.int64 if a.dtype.kind in "biu" else None  # as PyTorch (numpy: uint64)
        return np.asarray(a.sum(axis=axis, keepdims=keepdims, dtype=total_dtype))

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # every summand gets G
        return np.broadcast_to(_expand_reduced(grad, ctx), ctx.in_shape)


class Mean(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(as_float(a).mean(axis=axis, keepdims=keepdims))  # of ints: float32
        ctx.count = a.size // max(out.size, 1)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # every term gets G / n
        g = _expand_reduced(grad, ctx) / np.asarray(ctx.count, grad.dtype)
        return np.broadcast_to(g, ctx.in_shape)


class Max(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(a.max(axis=axis, keepdims=keepdims))
        ctx.save_for_backward(a, out)  # both saved, so both are version-checked
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return _to_extremes(ctx, grad)


def _to_extremes(ctx: Context, grad: Array) -> Array:
    """G goes to the maximum (minimum); tied ones share it equally (as PyTorch's amax does). A
    NaN is the extreme of its row (numpy's max and PyTorch's): G goes to it, as in PyTorch's max."""
    a, out = ctx.saved
    out = _expand_reduced(out, ctx)
    is_extreme = (a == out) | (np.isnan(a) & np.isnan(out)) if a.dtype.kind == "f" else a == out
    share = is_extreme / is_extreme.sum(axis=ctx.axis, keepdims=True)
    grad_a: Array = share.astype(a.dtype) * _expand_reduced(grad, ctx)
    return grad_a



class Min(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(a.min(axis=axis, keepdims=keepdims))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return _to_extremes(ctx, grad)


class Prod(Function):
    """The product over one axis (or all). d prod / d a_i is the product of the others, taken
    as (product of those before i) x (product of those after i): exact when some a_j are 0,
    where prod / a_i would divide by zero."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: int | None = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        ctx.save_for_backward(a)
        product_dtype = np.int64 if a.dtype.kind in "biu" else None  # as PyTorch (numpy: uint64)
        return np.asarray(a.prod(axis=axis, keepdims=keepdims, dtype=product_dtype))

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved
        line = a.reshape(-1) if ctx.axis is None else np.moveaxis(a, ctx.axis, -1)
        ones = np.ones_like(line[..., :1])
        before = np.cumprod(np.concatenate([ones, line[..., :-1]], axis=-1), axis=-1)
        after = np.cumprod(np.concatenate([ones, line[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        others = before * after
        others = others.reshape(a.shape) if ctx.axis is None else np.moveaxis(others, -1, ctx.axis)
        return others * _expand_reduced(grad, ctx)


class LogSumExp(Function):
    """log sum e^a over axes, from the max (never overflows); d/da = G softmax(a) over those axes."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        a = as_float(a)  # of ints: float32, as PyTorch
        top = a.max(axis=axis, keepdims=True, initial=-np.inf)  # over an empty axis: -inf
        top = np.where(np.isfinite(top), top, np.zeros((), a.dtype))  # a row of -inf gives -inf
        with np.errstate(divide="ignore"):
            out = np.log(np.exp(a - top).sum(axis=axis, keepdims=True)) + top
        ctx.save_for_backward(a, out)
        return np.asarray(out if keepdims else np.squeeze(out, axis=axis))

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, out = ctx.saved  # out kept its reduced axes: p = e^(a - logsumexp)
        grad_a: Array = np.exp(a - out) * _expand_reduced(grad, ctx)
        return grad_a


class Var(Function):
    """sum (a - mean)^2 / (n - correction) over axes (correction=1: the unbiased estimate, as
    PyTorch's default); d/da = G 2 (a - mean) / (n - correction)."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: Any = None, correction: float = 1,
                keepdims: bool = False) -> Array:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        a = as_float(a)  # of ints: float32, as mean (truncated back to ints, 2.33 would be 2)
        centred = a - a.mean(axis=axis, keepdims=True)
        count = a.size if axis is None else int(np.prod([a.shape[i] for i in np.atleast_1d(axis)]))
        ctx.save_for_backward(centred)
        ctx.divisor = max(count - correction, 0)
        with np.errstate(divide="ignore", invalid="ignore"):  # n <= correction: inf or nan, as PyTorch
            out = (centred * centred).sum(axis=axis, keepdims=keepdims) / np.asarray(ctx.divisor, a.dtype)
        return np.asarray(out, dtype=a.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (centred,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            grad_a: Array = centred * (2 * _expand_reduced(grad, ctx) / np.asarray(ctx.divisor, grad.dtype))
        return grad_a


class Cumsum(Function):
    """The running sum along one axis: out_i = a_0 + ... + a_i. Each a_j counts in every out_i
    with i >= j, so da_j = G_j + ... + G_last: the running sum of G taken from the end."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: int) -> Array:
        ctx.axis = axis
        total_dtype = np.int64 if a.dtype.kind in "biu" else None  # as sum, and PyTorch
        return np.cumsum(a, axis=axis, dtype=total_dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        backwards = np.flip(grad, axis=ctx.axis)
        return np.flip(np.cumsum(backwards, axis=ctx.axis), axis=ctx.axis)

