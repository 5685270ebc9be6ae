"""Elementwise functions: exp, log, tanh, sigmoid, log-sigmoid, ReLU, GELU, sqrt, abs.
Each backward is G times the function's slope at the input. The float functions read a bool or
integer array as float32, as PyTorch does (`as_float`); ReLU and abs keep an integer dtype."""

from __future__ import annotations

import math

import numpy as np

from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function


class Exp(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = np.exp(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d e^a = G e^a
        (out,) = ctx.saved
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        a = as_float(a)
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d log a = G / a
        (a,) = ctx.saved
        return grad / a


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = np.tanh(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d tanh a = G (1 - tanh^2 a)
        (out,) = ctx.saved
        slope = np.empty_like(out)  # one fresh buffer (an array even for 0-d), then in place
        np.multiply(out, out, out=slope)
        np.subtract(1, slope, out=slope)
        slope *= grad
        return slope


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-a) in a's dtype, from the exp of a non-positive number only (never overflows)."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = _sigmoid(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d s(a) = G s (1 - s)
        (out,) = ctx.saved
        return grad * out * (1 - out)


class LogSigmoid(Function):
    """log s(a) = -log(1 + e^-a), the log-probability of "yes" under a logistic score (skip-gram).

    Written as min(a, 0) - log(1 + e^-|a|): log(sigmoid(a)) would round s(a) to 0 and give -inf
    for a below about -745 in float64 (-104 in float32); this form is exact to rounding there.
    """

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        a = as_float(a)
        ctx.save_for_backward(a)
        return (np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))).astype(a.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d log s(a) = G (1 - s(a)) = G s(-a)
        (a,) = ctx.saved
        return grad * _sigmoid(-a)


class ReLU(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.maximum(a, 0)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # G where a > 0 (0 at the kink)
        (a,) = ctx.saved
        return grad * (a > 0)


_erf = np.vectorize(math.erf, otypes=[np.float64])


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


_SQRT_2PI = math.sqrt(2 * math.pi)


class GELU(Function):
    """x * Phi(x), Phi the standard normal CDF. approximate="none" uses erf (PyTorch's default),
    "tanh" the tanh fit. (numpy has no erf: math.erf runs one element at a time, which is why the
    fast twin fits Phi by a rational function instead.)"""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, approximate: str = "none") -> np.ndarray:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        a = as_float(a)
        ctx.approximate = approximate
        if approximate == "tanh":
            ctx.save_for_backward(a, None, None)
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a**3)
            return (0.5 * a * (1 + np.tanh(inner))).astype(a.dtype)
        # Phi(a) = (1 + erf(a / sqrt 2)) / 2 and phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
        cdf = (0.5 * (1 + _erf(a.astype(np.float64) / math.sqrt(2)))).astype(a.dtype)
        pdf = (np.exp(-0.5 * a * a) / _SQRT_2PI).astype(a.dtype)
        out = a * cdf
        ctx.save_for_backward(a, cdf, pdf)  # the slope below needs both
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        a, cdf, pdf = ctx.saved
        if ctx.approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a**3))
            d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a**2)
            slope = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * d_inner
            return (grad * slope).astype(a.dtype)
        return (a * pdf + cdf) * grad  # d/da [a Phi(a)] = Phi(a) + a phi(a)


class Sqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = np.sqrt(as_float(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d sqrt(a) = G / (2 sqrt(a))
        (out,) = ctx.saved
        return grad / (2 * out)


class Abs(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # G sign(a), 0 at the kink (PyTorch)
        (a,) = ctx.saved
        return grad * np.sign(a)



class SiLU(Function):
    """a s(a), s the sigmoid (also called swish): the gate of Llama's SwiGLU feed-forward."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        s = _sigmoid(a)
        ctx.save_for_backward(a, s)
        return a * s

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d a s(a) = G (s + a s (1 - s))
        a, s = ctx.saved
        return grad * s * (1 + a * (1 - s))
