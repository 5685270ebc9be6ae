"""Reductions over axes: sum, mean, max. Each backward spreads G back over the reduced axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function


def _remember_reduction(ctx: Context, a: np.ndarray, axis: Any, keepdims: bool) -> Any:
    """Keep what the backward needs; returns the axis to reduce over. A 0-d array reduces over
    axis 0 or -1 to itself (as in PyTorch, while numpy's mean refuses that axis)."""
    if a.ndim == 0 and axis is not None:
        for ax in axis if isinstance(axis, tuple) else (axis,):
            if ax not in (0, -1):
                raise np.exceptions.AxisError(f"axis {ax} is out of range for a 0-d tensor (use 0 or -1)")
        axis = None
    ctx.in_shape, ctx.axis, ctx.keepdims = a.shape, axis, keepdims
    return axis


def _expand_reduced(reduced: np.ndarray, ctx: Context) -> np.ndarray:
    """Put back the axes a reduction removed (as size 1), so `reduced` broadcasts to its input."""
    if ctx.keepdims:
        return reduced
    if ctx.axis is None:
        return np.reshape(reduced, (1,) * len(ctx.in_shape))
    return np.expand_dims(reduced, ctx.axis)


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        total_dtype = np.int64 if a.dtype.kind in "biu" else None  # as PyTorch (numpy: uint64)
        return np.asarray(a.sum(axis=axis, keepdims=keepdims, dtype=total_dtype))

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # every summand gets G
        return np.broadcast_to(_expand_reduced(grad, ctx), ctx.in_shape)


class Mean(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(as_float(a).mean(axis=axis, keepdims=keepdims))  # of ints: float32
        ctx.count = a.size // max(out.size, 1)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # every term gets G / n
        g = _expand_reduced(grad, ctx) / np.asarray(ctx.count, grad.dtype)
        return np.broadcast_to(g, ctx.in_shape)


class Max(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(a.max(axis=axis, keepdims=keepdims))
        ctx.save_for_backward(a, out)  # both saved, so both are version-checked
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        # G goes to the maximum; tied maxima share it equally (as PyTorch's amax does)
        a, out = ctx.saved
        is_max = a == _expand_reduced(out, ctx)
        share = is_max / is_max.sum(axis=ctx.axis, keepdims=True)
        return share.astype(a.dtype) * _expand_reduced(grad, ctx)

