"""Gradient clipping, as `torch.nn.utils`: `clip_grad_norm_` and `clip_grad_value_`.

Both work on the `.grad` of each parameter, in place, and accept a lookup table's `RowSparse`
gradient without densifying it. A row the gradient does not store is zero: it adds nothing to
a norm of order p >= 0, stays zero when the gradient is scaled, and is inside any clip range.
So the work follows the rows a batch read, not the vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor

EPS = 1e-6  # added to the total norm before dividing by it, as PyTorch does


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float | str = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    """Scale every gradient by min(1, max_norm / (total + 1e-6)), where total is the norm of
    order `norm_type` of all the gradients taken as one vector; return total as a 0-d Tensor.

    norm_type: any order (2.0, 1, 0, float("inf") or "inf", negative ones too), as
    `torch.linalg.vector_norm`. error_if_nonfinite: raise if total is nan or inf, instead of
    scaling by it. foreach: accepted for PyTorch's signature, unused. Parameters without a
    gradient are skipped; with none at all, the total is 0.
    """
    who = "clip_grad_norm_"
    given = _parameters(parameters, who)
    params = [p for p in given if p.grad is not None]
    max_norm = _number(who, "max_norm", max_norm)
    order = _order(norm_type)
    if not params:
        return Tensor(np.array(0.0, dtype=np.float32))
    norms = np.array([_grad_norm(p.grad, order) for p in params])
    dtype = np.result_type(*(_values(p.grad).dtype for p in params))
    total = dtype.type(_vector_norm(norms, order))  # in the gradients' dtype, as PyTorch returns it
    if error_if_nonfinite and not np.isfinite(total):
        worst = next((p for p, n in zip(params, norms) if not np.isfinite(n)), None)
        where = "" if worst is None else f" (first: {_label(worst, given)})"
        raise RuntimeError(f"{who}: the total norm of order {order} of the gradients is {total}, not "
                           f"finite{where}, so they cannot be clipped; pass error_if_nonfinite=False "
                           "to scale by it anyway")
    factor = np.minimum(dtype.type(max_norm) / (total + dtype.type(EPS)), dtype.type(1.0))
    for p in params:
        p.grad = _scaled(p.grad, factor)
    return Tensor(np.array(total))


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: Any = None) -> None:
    """Clip every gradient element into [-clip_value, clip_value], in place.

    A RowSparse gradient is coalesced first (clipping is not linear: a row read twice is
    clipped as its sum), and keeps its rows.
    """
    who = "clip_grad_value_"
    params = [p for p in _parameters(parameters, who) if p.grad is not None]
    clip_value = _number(who, "clip_value", clip_value)
    for p in params:
        grad = p.grad
        if isinstance(grad, RowSparse):
            grad = grad.coalesce()
            p.grad = RowSparse(grad.indices, _clipped(grad.values, clip_value), grad.shape, coalesced=True)
        else:
            p.grad = _clipped(np.asarray(grad), clip_value)


# ---- norms ------------------------------------------------------------------------------------
def _vector_norm(x: np.ndarray, order: float) -> float:
    """The norm of order `order` of the elements of x, as torch.linalg.vector_norm defines it."""
    a = np.abs(x.ravel()).astype(np.float64)
    if a.size == 0:
        return 0.0
    if order == math.inf:
        return float(a.max())
    if order == -math.inf:
        return float(a.min())
    if order == 0:
        return float(np.count_nonzero(a))
    with np.errstate(divide="ignore", over="ignore"):  # |0| ** (negative order) is inf, as intended
        return float(np.sum(a**order) ** (1.0 / order))


def _grad_norm(grad: np.ndarray | RowSparse, order: float) -> float:
    """The norm of one gradient; a RowSparse one from its stored rows (summed where repeated)."""
    if not isinstance(grad, RowSparse):
        return _vector_norm(np.asarray(grad), order)
    grad = grad.coalesce()
    stored = _vector_norm(grad.values, order)
    some_zero = grad.indices.size < grad.shape[0] and math.prod(grad.shape[1:]) > 0
    # absent rows are zeros: nothing for order >= 0; for a negative order a zero makes the norm 0
    return 0.0 if order < 0 and some_zero else stored


def _values(grad: Any) -> np.ndarray:
    return grad.values if isinstance(grad, RowSparse) else np.asarray(grad)


# ---- in place where the memory allows it ------------------------------------------------------
def _scaled(grad: Any, factor: np.floating) -> Any:
    """grad * factor, written into grad's own memory when it can be (as PyTorch's mul_)."""
    if isinstance(grad, RowSparse):
        return RowSparse(grad.indices, _scaled(grad.values, factor), grad.shape, coalesced=grad.coalesced)
    with np.errstate(invalid="ignore"):  # inf * 0 when the total is inf: nan, as PyTorch gives
        if isinstance(grad, np.ndarray) and grad.flags.writeable:
            grad *= factor
            return grad
        return np.asarray(grad * factor)  # a 0-d numpy scalar or a read-only array: a new array


def _clipped(values: np.ndarray, limit: float) -> np.ndarray:
    if values.flags.writeable and values.ndim:
        return np.clip(values, -limit, limit, out=values)
    return np.asarray(np.clip(values, -limit, limit))


# ---- arguments --------------------------------------------------------------------------------
def _parameters(parameters: Any, who: str) -> list[Tensor]:
    """`parameters` (a Tensor or an iterable of them) as a list, each checked to be a Tensor."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    elif hasattr(parameters, "named_parameters"):
        raise TypeError(f"{who}: parameters must be a Tensor or an iterable of Tensors, got a "
                        f"{type(parameters).__name__}; pass model.parameters()")
    try:
        params = list(parameters)
    except TypeError:
        raise TypeError(f"{who}: parameters must be a Tensor or an iterable of Tensors, got "
                        f"{type(parameters).__name__}") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{who}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return params


def _number(who: str, name: str, value: Any) -> float:
    """`value` as a float >= 0, else a clear error (a negative bound would flip or empty the range)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{who}: {name} must be a number, got {type(value).__name__} {value!r}")
    if not value >= 0:  # NaN fails too
        raise ValueError(f"{who}: {name} must be >= 0, got {value}")
    return float(value)


def _order(norm_type: Any) -> float:
    try:
        order = float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(f"clip_grad_norm_: norm_type must be a number or 'inf', got {norm_type!r}") from None
    if math.isnan(order):
        raise ValueError("clip_grad_norm_: norm_type must be a number or 'inf', got nan")
    return order


def _label(p: Tensor, given: list[Tensor]) -> str:
    index = next(i for i, q in enumerate(given) if q is p)
    named = f" {p.name!r}" if getattr(p, "name", None) else ""
    return f"parameter {index}{named} of shape {p.shape}"
