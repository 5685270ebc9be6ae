"""Arithmetic: + - * / **, negation, copies and the matrix product. Operands broadcast like
numpy's; `unbroadcast` sums a gradient back to the shape of the operand that was stretched."""

from __future__ import annotations

import numpy as np

from minigrad.engine.arrays import Array, Gradients
from minigrad.engine.checks import ArgumentError, ShapeError
from minigrad.engine.function import Context, Function


def unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum grad over the axes that broadcasting added or stretched, back to `shape`."""
    if grad.shape == shape:
        return grad
    added = grad.ndim - len(shape)
    if added:
        grad = grad.sum(axis=tuple(range(added)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


class Add(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.a_shape, ctx.b_shape = a.shape, b.shape
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d(a+b) = G, G
        need_a, need_b = ctx.needs_input_grad  # x + 1.0: no sum over the constant's axes
        return (unbroadcast(grad, ctx.a_shape) if need_a else None,
                unbroadcast(grad, ctx.b_shape) if need_b else None)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.a_shape, ctx.b_shape = a.shape, b.shape
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d(a-b) = G, -G
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad, ctx.a_shape) if need_a else None,
                unbroadcast(-grad, ctx.b_shape) if need_b else None)


class Mul(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d(ab) = G b, G a
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad * b, a.shape) if need_a else None,
                unbroadcast(grad * a, b.shape) if need_b else None)


class Div(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d(a/b) = G/b, -G a/b^2
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad / b
        return (unbroadcast(grad_a, a.shape) if need_a else None,
                unbroadcast(-grad_a * a / b, b.shape) if need_b else None)


def rounded_quotient(a: Array, b: Array, rounding: str) -> Array:
    """a / b rounded down ("floor", Python's //) or towards 0 ("trunc"), in a's and b's dtype.
    Integers divided by 0 are refused (PyTorch raises; numpy would answer 0)."""
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        if not np.all(b):
            raise ArgumentError("integer division by zero (in //, %, fmod or div with rounding_mode), "
                                "as PyTorch refuses it")
        down: Array = np.floor_divide(a, b)
        rounded_away_from_0 = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return down if rounding == "floor" else down + rounded_away_from_0
    with np.errstate(divide="ignore", invalid="ignore"):  # x / 0: inf or NaN, as PyTorch
        quotient: Array = np.floor_divide(a, b) if rounding == "floor" else np.trunc(a / b)
    return quotient


class RoundedDivide(Function):
    """a // b ("floor") or a / b rounded towards 0 ("trunc"). A step function of both: each input
    receives G 0 (PyTorch's div with rounding_mode; its // has no backward at all)."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array, rounding: str = "floor") -> Array:
        ctx.shapes = a.shape, b.shape
        return rounded_quotient(a, b, rounding)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        return tuple(np.zeros(shape, grad.dtype) for shape in ctx.shapes)


class Remainder(Function):
    """a - b q: with q = a // b ("remainder", Python's %, the sign of b) or q = trunc(a / b)
    ("fmod", C's, the sign of a). q is flat between its steps, so a gets G and b gets -G q."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array, how: str = "remainder") -> Array:
        ctx.save_for_backward(a, b)
        ctx.rounding = "floor" if how == "remainder" else "trunc"
        if a.dtype.kind in "biu" and b.dtype.kind in "biu" and not np.all(b):
            raise ArgumentError(f"integer {how} by zero, as PyTorch refuses it")
        with np.errstate(divide="ignore", invalid="ignore"):  # x % 0.0: NaN, as PyTorch
            left: Array = np.remainder(a, b) if how == "remainder" else np.fmod(a, b)
        return left

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad, a.shape) if need_a else None,
                unbroadcast(-grad * rounded_quotient(a, b, ctx.rounding), b.shape) if need_b else None)


class Pow(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, exponent: float) -> Array:
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        out: Array = (a ** np.asarray(exponent, dtype=a.dtype)).astype(a.dtype, copy=False)  # bool too
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d(a^n) = G n a^(n-1)
        (a,) = ctx.saved
        if ctx.exponent == 0:  # a^0 = 1 for every a: flat, also at 0 (where n a^(n-1) is 0 * inf)
            return np.zeros_like(grad)
        n = np.asarray(ctx.exponent, dtype=a.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):  # 0^(n-1) for n < 1: inf, as PyTorch
            grad_a: Array = grad * n * a ** (n - 1)
        return grad_a


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return -grad


class Clone(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad


class Copy(Function):
    """dst.copy_(src): every element of dst becomes src's (broadcast); dst's old values are gone,
    so they get a zero gradient."""

    @staticmethod
    def forward(ctx: Context, dst: Array, src: Array) -> Array:
        ctx.shapes = (dst.shape, np.shape(src))
        return np.array(np.broadcast_to(src, dst.shape), dtype=dst.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d dst = 0, d src = G (summed)
        _, src_shape = ctx.shapes
        need_dst, need_src = ctx.needs_input_grad
        return (np.zeros_like(grad) if need_dst else None,
                unbroadcast(grad, src_shape) if need_src else None)


class MatMul(Function):
    """a @ b with numpy's rules: batch axes broadcast, a 1-D operand is a vector."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.save_for_backward(a, b)
        try:
            return a @ b
        except ValueError:  # numpy names gufunc operands and core dimensions: say it in shapes
            raise ShapeError(_matmul_mismatch(np.shape(a), np.shape(b))) from None

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # dA = G B^T,  dB = A^T G
        a, b = ctx.saved
        # treat a vector as a one-row (a) or one-column (b) matrix, then undo it
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g = grad[..., None] if b.ndim == 1 else grad
        g = g[..., None, :] if a.ndim == 1 else g
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = unbroadcast(g @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
        if ctx.needs_input_grad[1]:
            grad_b = unbroadcast(np.swapaxes(a2, -1, -2) @ g, b2.shape).reshape(b.shape)
        return grad_a, grad_b


def _matmul_mismatch(a: tuple[int, ...], b: tuple[int, ...]) -> str:
    """Why `a @ b` is undefined for these shapes, in the words of the shapes."""
    pair = f"matmul: shapes {a} @ {b}"
    if not a or not b:
        return f"{pair}: both operands need at least 1 dimension (a 0-d tensor has none)"
    inner_a, inner_b = a[-1], (b[-2] if len(b) > 1 else b[0])
    if inner_a != inner_b:
        return f"{pair} do not match: {inner_a} != {inner_b}"
    return f"{pair}: the batch shapes {a[:-2]} and {b[:-2]} do not broadcast"

