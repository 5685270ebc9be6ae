"""Elementwise functions: exp, log, tanh, sigmoid, log-sigmoid, ReLU, GELU, sqrt, abs.
Each backward is G times the function's slope at the input. The float functions read a bool or
integer array as float32, as PyTorch does (`as_float`); ReLU and abs keep an integer dtype."""

from __future__ import annotations

import math

import numpy as np

from minigrad.engine import kernels
from minigrad.engine.arrays import Array, DType, Gradients
from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function
from minigrad.engine.ops.arithmetic import unbroadcast


class Exp(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = np.exp(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d e^a = G e^a
        (out,) = ctx.saved
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d log a = G / a
        (a,) = ctx.saved
        return grad / a


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = kernels.tanh(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d tanh a = G (1 - tanh^2 a)
        (out,) = ctx.saved
        slope = np.empty_like(out)  # one fresh buffer (an array even for 0-d), then in place
        np.multiply(out, out, out=slope)
        np.subtract(1, slope, out=slope)
        slope *= grad
        return slope


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = kernels.sigmoid(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d s(a) = G s (1 - s)
        (out,) = ctx.saved
        grad_a: Array = grad * out * (1 - out)
        return grad_a


class LogSigmoid(Function):
    """log s(a) = -log(1 + e^-a), the log-probability of "yes" under a logistic score (skip-gram).

    Written as min(a, 0) - log(1 + e^-|a|): log(sigmoid(a)) would round s(a) to 0 and give -inf
    for a below about -745 in float64 (-104 in float32); this form is exact to rounding there.
    """

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = (np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))).astype(a.dtype)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d log s(a) = G (1 - s(a)) = G s(-a)
        (a,) = ctx.saved
        return grad * kernels.sigmoid(-a)


class ReLU(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return np.maximum(a, 0)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # G where a > 0 (0 at the kink)
        (a,) = ctx.saved
        return grad * ~(a <= 0)  # and at a NaN, whose relu is NaN, G passes (as PyTorch)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


class GELU(Function):
    """x * Phi(x), Phi the standard normal CDF. approximate="none" uses erf (PyTorch's default),
    "tanh" the tanh fit."""

    @staticmethod
    def forward(ctx: Context, a: Array, approximate: str = "none") -> Array:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        a = as_float(a)
        ctx.approximate = approximate
        if approximate == "tanh":
            ctx.save_for_backward(a, None, None)
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a**3)
            out: Array = (0.5 * a * (1 + np.tanh(inner))).astype(a.dtype)
            return out
        out, cdf, pdf = kernels.gelu(a)  # a Phi(a), Phi(a), and the density phi(a)
        ctx.save_for_backward(a, cdf, pdf)  # the slope below needs both
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, cdf, pdf = ctx.saved
        if ctx.approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a**3))
            d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a**2)
            slope: Array = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * d_inner
            return (grad * slope).astype(a.dtype)
        return kernels.gelu_backward(grad, a, cdf, pdf)  # G (Phi(a) + a phi(a))


class Sqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = np.sqrt(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d sqrt(a) = G / (2 sqrt(a))
        (out,) = ctx.saved
        grad_a: Array = grad / (2 * out)
        return grad_a


class Abs(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # G sign(a), 0 at the kink (PyTorch)
        (a,) = ctx.saved
        grad_a: Array = grad * np.sign(np.nan_to_num(a))  # sign(nan) taken as 0, as PyTorch's sign
        return grad_a


class SiLU(Function):
    """a s(a), s the sigmoid (also called swish): the gate of Llama's SwiGLU feed-forward."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out, s = kernels.silu(a)  # a s(a), and s(a) for the backward
        ctx.save_for_backward(a, s)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d a s(a) = G (s + a s (1 - s))
        a, s = ctx.saved
        return kernels.silu_backward(grad, a, s)


# ---- PyTorch's everyday elementwise functions: sin, cos, erf, exp2, log2, rsqrt, softplus, leaky
# ReLU, sign, clamp, maximum, minimum, ** with a tensor exponent or base, and float casts ---------

class Sin(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        return np.sin(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d sin a = G cos a
        (a,) = ctx.saved
        grad_a: Array = grad * np.cos(a)
        return grad_a


class Cos(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        return np.cos(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d cos a = -G sin a
        (a,) = ctx.saved
        grad_a: Array = -grad * np.sin(a)
        return grad_a


class Erf(Function):
    """erf a = 2/sqrt(pi) * integral of e^(-t^2) from 0 to a (math.erf, one element at a time)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        return kernels.erf(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d erf a = G 2/sqrt(pi) e^(-a^2)
        (a,) = ctx.saved
        grad_a: Array = grad * (2 / math.sqrt(math.pi)) * np.exp(-a * a)
        return grad_a


class Exp2(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = np.exp2(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d 2^a = G 2^a ln 2
        (out,) = ctx.saved
        return grad * out * math.log(2)


class Log2(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        return np.log2(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d log2 a = G / (a ln 2)
        (a,) = ctx.saved
        return grad / (a * math.log(2))


class Rsqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = 1 / np.sqrt(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d a^(-1/2) = -G a^(-3/2) / 2
        (out,) = ctx.saved
        return grad * -0.5 * out * out * out


class Softplus(Function):
    """log(1 + e^(beta a)) / beta; where beta a > threshold, a itself (as PyTorch: no overflow)."""

    @staticmethod
    def forward(ctx: Context, a: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
        a = as_float(a)
        scaled = a * np.asarray(beta, a.dtype)
        ctx.save_for_backward(scaled)
        ctx.linear = scaled > threshold
        # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), never overflowing
        smooth = (np.maximum(scaled, 0) + np.log1p(np.exp(-np.abs(scaled)))) / np.asarray(beta, a.dtype)
        return np.where(ctx.linear, a, smooth).astype(a.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # G s(beta a), or G where linear
        (scaled,) = ctx.saved
        grad_a: Array = grad * np.where(ctx.linear, np.ones((), scaled.dtype), kernels.sigmoid(scaled))
        return grad_a


class LeakyReLU(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, negative_slope: float = 0.01) -> Array:
        a = as_float(a)  # of ints: float32 (an int slope of 0.01 would be 0)
        ctx.save_for_backward(a)
        ctx.negative_slope = negative_slope
        return np.where(a > 0, a, a * np.asarray(negative_slope, a.dtype))

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # G, or G slope where a <= 0
        (a,) = ctx.saved
        return np.where(a > 0, grad, grad * np.asarray(ctx.negative_slope, grad.dtype))


class Sign(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        if a.dtype == np.bool_:
            return a.copy()  # True and False are their own signs (PyTorch returns them)
        out = np.sign(a)
        if out.dtype.kind == "f":  # sign(nan) is 0, as PyTorch (numpy says nan)
            out = np.where(np.isnan(out), np.zeros((), out.dtype), out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # flat everywhere: 0 (PyTorch)
        return np.zeros_like(grad)


class Clamp(Function):
    """min(max(a, low), high), the bounds arrays (broadcast) or None. Where a bound is taken it
    gets G and a gets none; a equal to a bound keeps G. Where low > high the result is high, as
    in PyTorch; where a or a bound is NaN the result is NaN and nothing gets G (every comparison
    with NaN is false)."""

    @staticmethod
    def forward(ctx: Context, a: Array, low: Array | None, high: Array | None) -> Array:
        raised = a if low is None else np.maximum(a, low)
        took_high = np.zeros((), bool) if high is None else raised > high
        took_low = np.zeros((), bool) if low is None else (a < low) & ~took_high
        kept = np.logical_and(True if low is None else a >= low, True if high is None else a <= high)
        ctx.masks = (kept, took_low, took_high)
        ctx.shapes = (a.shape, () if low is None else low.shape, () if high is None else high.shape)
        return raised if high is None else np.minimum(raised, high)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        zero = np.zeros((), grad.dtype)
        grads = tuple(np.where(mask, grad, zero) for mask in ctx.masks)
        return tuple(unbroadcast(g, shape) if need else None
                     for g, shape, need in zip(grads, ctx.shapes, ctx.needs_input_grad))


class Maximum(Function):
    """The larger of a and b, elementwise (broadcast); at a tie each gets G / 2 and where one is
    NaN (the result too) both get G (as PyTorch)."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.save_for_backward(a, b)
        return np.maximum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        a, b = ctx.saved
        return _split_by(a < b, a > b, a == b, grad, a.shape, b.shape, ctx.needs_input_grad)


class Minimum(Function):
    """The smaller of a and b, elementwise (broadcast); at a tie each gets G / 2 and where one is
    NaN (the result too) both get G (as PyTorch)."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ctx.save_for_backward(a, b)
        return np.minimum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        a, b = ctx.saved
        return _split_by(a > b, a < b, a == b, grad, a.shape, b.shape, ctx.needs_input_grad)


def _split_by(a_loses: Array, b_loses: Array, tie: Array, grad: Array,
              a_shape: tuple[int, ...], b_shape: tuple[int, ...], needs: tuple[bool, ...]) -> Gradients:
    """G to each side that did not lose: G / 2 to both at a tie, and G to both where a NaN made
    neither lose (as PyTorch); summed back to each shape."""

    def share(loses: Array) -> Array:
        return np.where(loses, 0.0, np.where(tie, 0.5, 1.0)).astype(grad.dtype)

    grad_a = unbroadcast(grad * share(a_loses), a_shape) if needs[0] else None
    grad_b = unbroadcast(grad * share(b_loses), b_shape) if needs[1] else None
    return grad_a, grad_b


class PowTensor(Function):
    """a ** b with both operands arrays (broadcast): scalar ** tensor and tensor ** tensor.
    da = G b a^(b-1), taken as 0 where b = 0; db = G a^b log a, taken as 0 where a = 0 and
    b >= 0 (both as PyTorch: the limits, not the 0 * inf that the formulas give there)."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        out = np.power(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        a, b, out = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        zero = np.zeros((), out.dtype)
        grad_a = grad_b = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if need_a:
                grad_a = unbroadcast(grad * np.where(b == 0, zero, b * np.power(a, b - 1)), a.shape)
            if need_b:
                log_a = np.where((a == 0) & (b >= 0), zero, np.log(a))
                grad_b = unbroadcast(grad * out * log_a, b.shape)
        return grad_a, grad_b


class Cast(Function):
    """a in another float dtype; the gradient goes back in a's dtype (float32 <-> float64)."""

    @staticmethod
    def forward(ctx: Context, a: Array, dtype: DType) -> Array:
        ctx.in_dtype = a.dtype
        with np.errstate(over="ignore"):  # past float16's 65504 is inf, silently, as in PyTorch
            return a.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        with np.errstate(over="ignore"):
            return grad.astype(ctx.in_dtype)


# ---- more of PyTorch's: tan, the hyperbolic and inverse functions, log10, and the rounding ones -----

class Tan(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = np.tan(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d tan a = G (1 + tan^2 a)
        (out,) = ctx.saved
        grad_a: Array = grad * (1 + out * out)
        return grad_a


class Sinh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = np.sinh(a)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d sinh a = G cosh a
        (a,) = ctx.saved
        grad_a: Array = grad * np.cosh(a)
        return grad_a


class Cosh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = np.cosh(a)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d cosh a = G sinh a
        (a,) = ctx.saved
        grad_a: Array = grad * np.sinh(a)
        return grad_a


class Asin(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        with np.errstate(invalid="ignore"):  # outside the domain: NaN, as PyTorch (no warning)
            out: Array = np.arcsin(a)
            return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d asin a = G / sqrt(1 - a^2)
        (a,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):  # at |a| >= 1: inf or NaN, as PyTorch
            grad_a: Array = grad / np.sqrt(1 - a * a)
            return grad_a


class Acos(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        with np.errstate(invalid="ignore"):  # outside the domain: NaN, as PyTorch (no warning)
            out: Array = np.arccos(a)
            return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d acos a = -G / sqrt(1 - a^2)
        (a,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            grad_a: Array = -grad / np.sqrt(1 - a * a)
            return grad_a


class Atan(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = np.arctan(a)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d atan a = G / (1 + a^2)
        (a,) = ctx.saved
        grad_a: Array = grad / (1 + a * a)
        return grad_a


class Asinh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = np.arcsinh(a)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d asinh a = G / sqrt(a^2 + 1)
        (a,) = ctx.saved
        grad_a: Array = grad / np.sqrt(a * a + 1)
        return grad_a


class Acosh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        with np.errstate(invalid="ignore"):  # outside the domain: NaN, as PyTorch (no warning)
            out: Array = np.arccosh(a)
            return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d acosh a = G / sqrt(a^2 - 1)
        (a,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):  # below 1: NaN, as PyTorch
            grad_a: Array = grad / np.sqrt(a * a - 1)
            return grad_a


class Atanh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):  # +-1: +-inf; beyond: NaN (PyTorch's)
            out: Array = np.arctanh(a)
            return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d atanh a = G / (1 - a^2)
        (a,) = ctx.saved
        with np.errstate(divide="ignore"):
            grad_a: Array = grad / (1 - a * a)
            return grad_a


class Log10(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = as_float(a)
        ctx.save_for_backward(a)
        out: Array = np.log10(a)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # d log10 a = G / (a ln 10)
        (a,) = ctx.saved
        grad_a: Array = grad / (a * math.log(10))
        return grad_a


class Round(Function):
    """floor, ceil, trunc or round (half to even, as PyTorch), by `how`. A step function: flat
    between its jumps, so every input receives G 0 (PyTorch's choice at the jumps too). Integer
    inputs are whole already and keep their dtype."""

    @staticmethod
    def forward(ctx: Context, a: Array, how: str = "round", decimals: int = 0) -> Array:
        if a.dtype.kind in "biu":
            return a.copy()
        rounded: Array = np.round(a, decimals) if how == "round" else getattr(np, how)(a)
        return rounded

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return np.zeros_like(grad)
