"""The differentiable ops. Each is one `Function`: forward and backward side by side.

Notation: G is d(loss)/d(output), the `grad` each backward receives; the backward returns one
gradient per input, summed back over broadcast axes (`unbroadcast`). Backwards never modify G in
place: the same array may be on its way to another node.

    op            forward                 backward (what each input receives)       lesson
    Add, Sub      a + b, a - b            G, +-G                                    1
    Mul           a b                     G b, G a                                  1
    Div           a / b                   G / b, -G a / b^2                         2
    Pow           a^n (n a number)        G n a^(n-1)                               2
    Neg, Clone    -a, a copy              -G, G                                     -
    MatMul        A @ B                   G B^T, A^T G                              3
    Sum, Mean     sum / mean over axes    G (or G / n) spread back over the axes    1
    Max           max over axes           G to the maximum (ties share it)          4
    Exp, Log      e^a, log a              G e^a, G / a                              2
    Tanh          tanh a                  G (1 - tanh^2 a)                          1
    Sigmoid       s = 1 / (1 + e^-a)      G s (1 - s)                               -
    LogSigmoid    log s(a)                G s(-a)                                   11
    ReLU, GELU    max(a, 0), a Phi(a)     G [a > 0], G (Phi(a) + a phi(a))          -
    Reshape, Permute, GetItem             G reshaped / permuted back / scattered    4
                                          (an index picked twice gets both)
    Concatenate, Stack                    each input its slice of G                 6
    Softmax       p = e^z / sum e^z       p (G - sum(G p))                          5
    LogSoftmax    z - log sum e^z         G - p sum(G)                              5
    CrossEntropy  mean -log p_y           G (p - onehot(y)) / N                     5
    LinearCrossEntropy  CrossEntropy(x W^T + b): dz = (p - onehot(y)) / N,
                  then G dz W, G dz^T x, G sum dz                                    5, 6
    Embedding     E[ids]                  RowSparse: G's rows summed per id         3, 4
    Linear        x W^T + b               G W, G^T x, sum G                         5, 6
    LayerNorm     (x - mean) / std w + b  w G / std minus its means, G x_hat, sum G -
    MaskedFill    a, value where mask     G where not mask                          -
    Where         cond ? a : b            G where cond, G elsewhere                 -
    Narrow        a slice along an axis   G in that slice, zero elsewhere           -
    Sqrt, Abs     sqrt a, |a|             G / (2 sqrt a), G sign(a)                 -
    ScaledDotProductAttention             dV = P^T G, dS = P (dP - sum(dP P)), ...  -
                  softmax(q k^T s + mask) v

Lessons: 1 the backward graph, 2 finite differences, 3 a lookup is a matmul, 4 sparse row
gradients, 5 the output map, 6 tying the two maps, 11 skip-gram with negative sampling ("-":
gradchecked in tests/engine/test_ops_gradcheck.py, not the subject of a lesson).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad.engine import fast
from minigrad.engine.function import Context, Function
from minigrad.engine.sparse import RowSparse


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
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


# ---- arithmetic (all broadcast like numpy) -----------------------------------------------------

class Add(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.a_shape, ctx.b_shape = a.shape, b.shape
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(a+b) = G, G
        need_a, need_b = ctx.needs_input_grad  # x + 1.0: no sum over the constant's axes
        return (unbroadcast(grad, ctx.a_shape) if need_a else None,
                unbroadcast(grad, ctx.b_shape) if need_b else None)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.a_shape, ctx.b_shape = a.shape, b.shape
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(a-b) = G, -G
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad, ctx.a_shape) if need_a else None,
                unbroadcast(-grad, ctx.b_shape) if need_b else None)


class Mul(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(ab) = G b, G a
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad * b, a.shape) if need_a else None,
                unbroadcast(grad * a, b.shape) if need_b else None)


class Div(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(a/b) = G/b, -G a/b^2
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad / b
        return (unbroadcast(grad_a, a.shape) if need_a else None,
                unbroadcast(-grad_a * a / b, b.shape) if need_b else None)


class Pow(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, exponent: float) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return a ** np.asarray(exponent, dtype=a.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d(a^n) = G n a^(n-1)
        (a,) = ctx.saved
        n = np.asarray(ctx.exponent, dtype=a.dtype)
        return grad * n * a ** (n - 1)


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        return -grad


class Clone(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        return grad


class Copy(Function):
    """dst.copy_(src): every element of dst becomes src's (broadcast); dst's old values are gone,
    so they get a zero gradient."""

    @staticmethod
    def forward(ctx: Context, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
        ctx.shapes = (dst.shape, np.shape(src))
        return np.array(np.broadcast_to(src, dst.shape), dtype=dst.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d dst = 0, d src = G (summed)
        _, src_shape = ctx.shapes
        need_dst, need_src = ctx.needs_input_grad
        return (np.zeros_like(grad) if need_dst else None,
                unbroadcast(grad, src_shape) if need_src else None)


class MatMul(Function):
    """a @ b with numpy's rules: batch axes broadcast, a 1-D operand is a vector."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a, b)
        try:
            return a @ b
        except ValueError:  # numpy names gufunc operands and core dimensions: say it in shapes
            raise ValueError(_matmul_mismatch(np.shape(a), np.shape(b))) from None

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dA = G B^T,  dB = A^T G
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


# ---- reductions --------------------------------------------------------------------------------

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
        return np.asarray(a.sum(axis=axis, keepdims=keepdims))

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # every summand gets G
        return np.broadcast_to(_expand_reduced(grad, ctx), ctx.in_shape)


class Mean(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _remember_reduction(ctx, a, axis, keepdims)
        out = np.asarray(a.mean(axis=axis, keepdims=keepdims))
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


# ---- elementwise functions ----------------------------------------------------------------------

class Exp(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = np.exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d e^a = G e^a
        (out,) = ctx.saved
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d log a = G / a
        (a,) = ctx.saved
        return grad / a


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = fast.unary(np.tanh, a)  # the same tanh on two threads, or None
        if out is None:
            out = np.tanh(a)
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
        out = _sigmoid(a)
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
    "tanh" the tanh fit. The fast form (fast.gelu_float32) computes float32 Phi by a rational
    fit in row blocks: math.erf one element at a time is 40x slower than the matmuls around it."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, approximate: str = "none") -> np.ndarray:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        ctx.approximate = approximate
        if approximate == "tanh":
            ctx.save_for_backward(a, None, None)
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a**3)
            return (0.5 * a * (1 + np.tanh(inner))).astype(a.dtype)
        fitted = fast.gelu_float32(a)  # float32: a rational fit of Phi, within 1.5e-7
        if fitted is not None:
            out, cdf, pdf = fitted
        else:  # Phi(a) = (1 + erf(a / sqrt 2)) / 2 and phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
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
        slope = fast.gelu_slope(grad, a, cdf, pdf)
        if slope is None:
            slope = (a * pdf + cdf) * grad  # d/da [a Phi(a)] = Phi(a) + a phi(a)
        return slope


# ---- shape ------------------------------------------------------------------------------------

class Reshape(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, shape: tuple) -> np.ndarray:
        ctx.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ValueError(f"reshape: cannot reshape shape {a.shape} ({a.size} elements) "
                             f"into {shape}") from None

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        return grad.reshape(ctx.in_shape)


class Permute(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, dims: tuple) -> np.ndarray:
        ctx.dims = dims
        return a.transpose(dims)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # undo the permutation
        return grad.transpose(np.argsort(ctx.dims))


class GetItem(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, index: Any) -> np.ndarray:
        ctx.in_shape, ctx.index = a.shape, index
        return a[index]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        out = np.zeros(ctx.in_shape, dtype=grad.dtype)
        np.add.at(out, ctx.index, grad)  # an index picked twice gets both gradients
        return out


class SetItem(Function):
    """a with a[index] = value: the positions written take value's gradient, the rest keep a's."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, value: np.ndarray, index: Any) -> np.ndarray:
        ctx.args = (index, np.shape(value))
        out = a.copy()
        out[index] = value
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d a = G off the index, d value = G[index]
        index, value_shape = ctx.args
        need_a, need_value = ctx.needs_input_grad
        grad_a = grad_value = None
        if need_a:
            grad_a = grad.copy()
            grad_a[index] = 0
        if need_value:
            written = grad[index]
            # numpy lets a value have extra leading axes of size 1 (a[0] = v of shape (1, n))
            extra = len(value_shape) - written.ndim
            grad_value = (unbroadcast(written, value_shape[extra:]).reshape(value_shape) if extra > 0
                          else unbroadcast(written, value_shape))
        return grad_a, grad_value


class Concatenate(Function):
    @staticmethod
    def forward(ctx: Context, *arrays: np.ndarray, axis: int = 0) -> np.ndarray:
        ctx.axis = axis
        ctx.sizes = [a.shape[axis] for a in arrays]
        return np.concatenate(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # each input gets its slice of G
        cuts = np.cumsum(ctx.sizes)[:-1]
        return tuple(np.split(grad, cuts, axis=ctx.axis))


class Stack(Function):
    @staticmethod
    def forward(ctx: Context, *arrays: np.ndarray, axis: int = 0) -> np.ndarray:
        ctx.axis = axis
        return np.stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:
        return tuple(np.moveaxis(grad, ctx.axis, 0))


# ---- softmax and cross-entropy ------------------------------------------------------------------

def _log_softmax(z: np.ndarray, axis: int) -> np.ndarray:
    # subtract the max first: exp never overflows, even for logits around 1e4
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


class Softmax(Function):
    @staticmethod
    def forward(ctx: Context, z: np.ndarray, axis: int = -1) -> np.ndarray:
        p = np.exp(_log_softmax(z, axis))
        ctx.save_for_backward(p)
        ctx.axis = axis
        return p

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # dz = p * (G - sum(G p))
        (p,) = ctx.saved
        return p * (grad - (grad * p).sum(axis=ctx.axis, keepdims=True))


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx: Context, z: np.ndarray, axis: int = -1) -> np.ndarray:
        out = _log_softmax(z, axis)
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # dz = G - p * sum(G)
        (log_p,) = ctx.saved
        return grad - np.exp(log_p) * grad.sum(axis=ctx.axis, keepdims=True)


class CrossEntropy(Function):
    """Mean (or sum) over positions of -log softmax(z)[y], fused: dL/dz = G scale (p - onehot(y)).

    With e = exp(z - max z) (never overflows) and s = sum(e):  p = e / s  and
    -log p_y = log s - (z_y - max z). logits: (..., C) float; targets: (...) int.
    The fast forms (fast.cross_entropy_exp, fast.reusable, fast.scale_rows) compute the same
    numbers in one recycled (..., C) buffer, in row blocks on two threads: at a large vocabulary
    every pass over the logits costs about as much as a matmul.
    """

    @staticmethod
    def forward(ctx: Context, logits: np.ndarray, targets: np.ndarray,
                reduction: str = "mean") -> np.ndarray:
        y = targets[..., None]
        fused = fast.cross_entropy_exp(logits, y)
        if fused is None:
            shifted = logits - logits.max(axis=-1, keepdims=True)
            e, shifted_target = np.exp(shifted), np.take_along_axis(shifted, y, axis=-1)
            total = e.sum(axis=-1, keepdims=True)
        else:
            e, total, shifted_target = fused
        ctx.save_for_backward(e, total, targets)
        ctx.scale = 1.0 / targets.size if reduction == "mean" else 1.0
        loss = (np.log(total) - shifted_target).sum() * ctx.scale
        return np.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dz = G scale (p - onehot(y))
        e, total, targets = ctx.saved
        y = targets[..., None]
        step = grad * np.asarray(ctx.scale, dtype=e.dtype)
        dz = fast.scale_rows(e, step / total, out=fast.reusable(ctx, e))
        if dz is None:
            dz = np.multiply(e, step / total, out=fast.reusable(ctx, e))  # G scale p, p = e / s
        np.put_along_axis(dz, y, np.take_along_axis(dz, y, axis=-1) - step, axis=-1)  # - G scale y
        return dz, None


class LinearCrossEntropy(Function):
    """The classifier and its loss as one op: mean (or sum) of -log softmax(x W^T + b)[y].

    x: (..., in) float; weight: (C, in); bias: (C,) or None; targets: (...) int -> a scalar.
    Nothing but the loss reads these logits, so the forward turns them into the loss's gradient
    at once, dz = scale (p - onehot(y)) with p = e / s, e = exp(z - max z), s = sum(e) (for
    G = 1), in the logits' own array, and keeps only that. The backward is two products:
    dx = G dz W, dW = G dz^T x (db = G sum dz). For G = 1 every number is the one that
    F.cross_entropy(F.linear(x, W, b), y) computes. The fast form runs the per-row work in row
    blocks on two threads over a buffer recycled from step to step (fast.recycled_logits).
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
                targets: np.ndarray, reduction: str = "mean") -> np.ndarray:
        rows, y = x.reshape(-1, x.shape[-1]), targets.reshape(-1, 1)
        scale = np.asarray(1.0 / y.size if reduction == "mean" else 1.0, dtype=x.dtype)
        z = np.matmul(rows, weight.T, out=fast.recycled_logits((len(rows), len(weight)), x.dtype))
        total, shifted_target = np.empty_like(z[:, :1]), np.empty_like(z[:, :1])

        def logits_to_gradient(lo: int | None = None, hi: int | None = None) -> None:  # rows lo:hi
            z_, y_ = z[lo:hi], y[lo:hi]
            if bias is not None:
                z_ += bias
            np.subtract(z_, z_.max(axis=1, keepdims=True), out=z_)  # z - max z
            shifted_target[lo:hi] = np.take_along_axis(z_, y_, axis=1)
            np.exp(z_, out=z_)                                     # e
            np.sum(z_, axis=1, keepdims=True, out=total[lo:hi])    # s
            np.multiply(z_, scale / total[lo:hi], out=z_)          # scale p
            np.put_along_axis(z_, y_, np.take_along_axis(z_, y_, axis=1) - scale, axis=1)

        if not fast.elementwise_in_row_blocks(z, logits_to_gradient):
            logits_to_gradient()
        ctx.save_for_backward(rows, weight, z)
        ctx.x_shape = x.shape
        loss = (np.log(total) - shifted_target).sum() * scale  # -log p_y = log s - (z_y - max z)
        return np.asarray(loss, dtype=x.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # G dz W, G dz^T x, G sum dz
        rows, weight, dz = ctx.saved
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grads = [dz @ weight if need_x else None, dz.T @ rows if need_w else None,
                 dz.sum(axis=0) if need_b else None]
        if grad != 1:  # scaled here, in (N, in) and (C, in), rather than over the (N, C) dz
            grads = [None if g is None else g * grad.astype(g.dtype) for g in grads]
        grad_x = None if grads[0] is None else grads[0].reshape(ctx.x_shape)
        return grad_x, grads[1], grads[2], None


# ---- the two maps of a vocabulary -------------------------------------------------------------

class Embedding(Function):
    """out[...] = weight[ids[...]]; the weight's gradient names only the rows it read.

    weight: (V, d); ids: int array of any shape S (checked by F.embedding) -> out: (*S, d).
    """

    @staticmethod
    def forward(ctx: Context, weight: np.ndarray, ids: np.ndarray, sparse: bool = True,
                padding_idx: int | None = None) -> np.ndarray:
        # keep our own copy of the ids: the caller may reuse its buffer before backward
        ctx.weight_shape, ctx.ids = weight.shape, ids.copy()
        ctx.sparse, ctx.padding_idx = sparse, padding_idx
        return weight[ids]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dE[v] = sum of G[b,t] where ids[b,t] = v
        shape = ctx.weight_shape
        flat_ids = ctx.ids.reshape(-1)
        rows = grad.reshape(flat_ids.size, *shape[1:])
        if ctx.padding_idx is not None:  # the padding row learns nothing (as in PyTorch)
            keep = flat_ids != ctx.padding_idx
            flat_ids, rows = flat_ids[keep], rows[keep]
        grad_weight = RowSparse(flat_ids, rows, shape).coalesce()  # repeated ids summed
        return (grad_weight if ctx.sparse else grad_weight.to_dense()), None


class Linear(Function):
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch.

    x: (..., in) -> y: (..., out); weight: (out, in); bias: (out,) or None.
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None
                ) -> np.ndarray:
        ctx.save_for_backward(x, weight)
        out = fast.linear_rows(x, weight, bias)  # (B, T, in): one product of B*T rows, + b in place
        if out is None:
            out = x @ weight.T if bias is None else x @ weight.T + bias
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dx = G W, dW = G^T x, db = sum G
        x, weight = ctx.saved
        # every leading axis of x is a batch axis: dW sums G^T x over all positions, which is
        # one product of the positions stacked as rows (the clearest way to write the sum)
        g2 = grad.reshape(-1, grad.shape[-1])
        grad_x = (g2 @ weight).reshape(x.shape) if ctx.needs_input_grad[0] else None
        grad_w = g2.T @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad[1] else None
        has_bias = len(ctx.needs_input_grad) == 3  # apply(x, w) and apply(x, w, b) both work
        grad_b = g2.sum(axis=0) if has_bias and ctx.needs_input_grad[2] else None
        return (grad_x, grad_w, grad_b) if has_bias else (grad_x, grad_w)


# =================================================================================================
# Transformer ops (TinyGPT): layer norm, masking, slicing, attention, sqrt and abs.
# Appended as one section so the engine files can be rearranged around it.
# =================================================================================================

class LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * w + b over the last axis (biased variance, as PyTorch).

    x: (..., d); weight, bias: (d,) or None. With xhat the normalised x and r = 1/sqrt(var + eps):
        dx = r * (g - mean(g) - xhat * mean(g * xhat)),  g = G * w
        dw = sum over positions of G * xhat,  db = sum of G
    The fast forms (fast.layer_norm, fast.layer_norm_dx) do the same in fewer passes, in place.
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray | None = None,
                bias: np.ndarray | None = None, eps: float = 1e-5) -> np.ndarray:
        fused = fast.layer_norm(x, weight, bias, eps)
        if fused is not None:
            out, xhat, rstd = fused
        else:
            centred = x - x.mean(axis=-1, keepdims=True)
            variance = (centred * centred).mean(axis=-1, keepdims=True)
            rstd = 1 / np.sqrt(variance + np.asarray(eps, x.dtype))
            xhat = centred * rstd
            out = xhat if weight is None else xhat * weight
            out = out if bias is None else out + bias
        ctx.save_for_backward(xhat, rstd, weight)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:
        xhat, rstd, weight = ctx.saved
        need_x, need_w, need_b = ctx.needs_input_grad
        rows = grad.reshape(-1, grad.shape[-1])  # dw and db sum over every position
        grad_w = np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)) if need_w else None
        grad_b = rows.sum(axis=0) if need_b else None
        grad_x = fast.layer_norm_dx(grad, xhat, rstd, weight) if need_x else None
        if need_x and grad_x is None:
            g = grad if weight is None else grad * weight
            grad_x = rstd * (g - g.mean(axis=-1, keepdims=True)
                             - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        return grad_x, grad_w, grad_b


class MaskedFill(Function):
    """a with `value` where mask is True (mask broadcasts to a's shape); the filled places get no
    gradient: da = G where not mask, else 0."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, mask: np.ndarray, value: float = 0.0) -> np.ndarray:
        ctx.mask = mask
        return np.where(mask, np.asarray(value, dtype=a.dtype), a)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:
        return np.where(ctx.mask, np.zeros((), grad.dtype), grad), None


class Where(Function):
    """condition ? a : b, all three broadcast; da = G where condition, db = G elsewhere."""

    @staticmethod
    def forward(ctx: Context, condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.condition = condition
        ctx.shapes = (np.shape(a), np.shape(b))
        return np.where(condition, a, b)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:
        zero = np.zeros((), grad.dtype)
        a_shape, b_shape = ctx.shapes
        _, need_a, need_b = ctx.needs_input_grad
        grad_a = unbroadcast(np.where(ctx.condition, grad, zero), a_shape) if need_a else None
        grad_b = unbroadcast(np.where(ctx.condition, zero, grad), b_shape) if need_b else None
        return None, grad_a, grad_b


class Narrow(Function):
    """a[..., start:start + length, ...] along `axis` (a view, as torch.narrow); split and chunk
    are several of these. The gradient is G in that slice and zero elsewhere."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: int, start: int, length: int) -> np.ndarray:
        ctx.shape = a.shape
        ctx.index = (slice(None),) * axis + (slice(start, start + length),)
        return a[ctx.index]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        out = np.zeros(ctx.shape, dtype=grad.dtype)
        out[ctx.index] = grad  # a basic slice names each element once: no np.add.at needed
        return out


class Sqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        out = np.sqrt(a)
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


class ScaledDotProductAttention(Function):
    """softmax(q k^T * scale + causal mask) v, as torch.nn.functional.scaled_dot_product_attention.

    q: (..., L, e), k: (..., S, e), v: (..., S, ev) -> (..., L, ev). With P the attention weights:
        dv = P^T G,  dP = G v^T,  dS = P * (dP - sum(dP * P)),  dq = dS k * scale,  dk = dS^T q * scale
    One op for the five steps (product, scale, mask, softmax, product): P is the one (L, S) array
    kept for the backward. is_causal masks key j > query i (top-left, as PyTorch); row i always
    sees key 0, so no row is all -inf. The fast forms (fast.attention, fast.attention_grads) run
    the same steps in place, by blocks of the batch axis.
    """

    @staticmethod
    def forward(ctx: Context, q: np.ndarray, k: np.ndarray, v: np.ndarray, is_causal: bool = False,
                scale: float | None = None) -> np.ndarray:
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        fused = fast.attention(q, k, v, scale, is_causal)
        if fused is not None:
            out, p = fused
        else:
            scores = (q @ k.swapaxes(-1, -2)) * np.asarray(scale, q.dtype)
            if is_causal:
                future = np.triu(np.ones(scores.shape[-2:], dtype=bool), k=1)
                scores = np.where(future, np.asarray(-np.inf, scores.dtype), scores)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p = e / e.sum(axis=-1, keepdims=True)
            out = p @ v
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:
        q, k, v, p = ctx.saved
        need_q, need_k, need_v = ctx.needs_input_grad
        grads = fast.attention_grads(grad, q, k, v, p, ctx.scale)
        if grads is None:
            dp = grad @ v.swapaxes(-1, -2)
            ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * np.asarray(ctx.scale, p.dtype)
            grads = ds @ k, ds.swapaxes(-1, -2) @ q, p.swapaxes(-1, -2) @ grad
        grad_q, grad_k, grad_v = grads
        return (grad_q if need_q else None, grad_k if need_k else None, grad_v if need_v else None)
