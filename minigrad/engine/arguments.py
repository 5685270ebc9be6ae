"""How tensor methods read their arguments: axes and dims, numpy's and PyTorch's spellings."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arrays import Array, DType


def check_dim(op: str, dim: Any, shape: tuple[int, ...]) -> int:
    """`dim` as an axis in [0, len(shape)), counted from the end when negative."""
    ndim = len(shape)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): dim must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}(): dim {dim} is out of range for shape {shape} (expected "
                         f"{-ndim} <= dim < {ndim})")
    return int(dim) % ndim


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def as_axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def axis_args(op: str, axis: Any, keepdims: bool, dim: Any, keepdim: bool | None) -> tuple[Any, bool]:
    """numpy's axis=/keepdims= or PyTorch's dim=/keepdim= (one of each pair), as (axis, keepdims)."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}(): got both axis={axis!r} and dim={dim!r}; they are one argument")
        axis = dim
    if keepdim is not None:
        if keepdims:
            raise TypeError(f"{op}(): got both keepdims= and keepdim=; they are one argument")
        keepdims = keepdim
    return as_axis(axis), bool(keepdims)


def softmax_axis(op: str, axis: int | None, dim: int | None) -> int:
    axis = axis_args(op, axis, False, dim, None)[0]
    return -1 if axis is None else axis


def check_can_require_grad(array: Array) -> None:
    if array.dtype.kind != "f":
        raise TypeError(
            f"only floating-point tensors can require grad, but this one has dtype {array.dtype}; "
            "pass dtype=np.float32 or np.float64"
        )


def as_dtype(op: str, dtype: Any) -> DType:
    """A dtype argument (`mg.float32`, `np.float64`, "int64", a numpy dtype) as a numpy dtype."""
    if isinstance(dtype, str):
        dtype = dtype.removeprefix("torch.").removeprefix("minigrad.")
    result: DType | None
    try:
        result = np.dtype(dtype)
    except TypeError:
        result = None
    if result is None or dtype is None or result.kind not in "biuf":
        raise TypeError(f"{op}(): dtype must be a bool, integer or float dtype such as mg.float32, "
                        f"got {dtype!r}")
    return result
