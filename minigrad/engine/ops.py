"""The differentiable ops. Each is one `Function`: forward and backward side by side.

Notation in comments: G is d(loss)/d(output), the `grad` each backward receives.
Backwards never modify G in place: the same array may be on its way to another node.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np

from minigrad.engine.autograd import Context, Function
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
        ctx.shapes = (np.shape(a), np.shape(b))
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(a+b) = G, G
        a_shape, b_shape = ctx.shapes
        need_a, need_b = ctx.needs_input_grad  # x + 1.0: no sum over the constant's axes
        return (unbroadcast(grad, a_shape) if need_a else None,
                unbroadcast(grad, b_shape) if need_b else None)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.shapes = (np.shape(a), np.shape(b))
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(a-b) = G, -G
        a_shape, b_shape = ctx.shapes
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad, a_shape) if need_a else None,
                unbroadcast(-grad, b_shape) if need_b else None)


class Mul(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # d(ab) = G b, G a
        a, b = ctx.saved
        need_a, need_b = ctx.needs_input_grad
        return (unbroadcast(grad * b, np.shape(a)) if need_a else None,
                unbroadcast(grad * a, np.shape(b)) if need_b else None)


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
        return (unbroadcast(grad_a, np.shape(a)) if need_a else None,
                unbroadcast(-grad_a * a / b, np.shape(b)) if need_b else None)


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

def _reduced_axis(a: np.ndarray, axis: Any) -> Any:
    """The axis to reduce over; a 0-d array reduces over axis 0 or -1 to itself (as in PyTorch,
    while numpy's mean refuses that axis)."""
    if a.ndim or axis is None:
        return axis
    for ax in axis if isinstance(axis, tuple) else (axis,):
        if ax not in (0, -1):
            raise np.exceptions.AxisError(f"axis {ax} is out of range for a 0-d tensor (use 0 or -1)")
    return None


def _expand_reduced(grad: np.ndarray, shape: tuple, axis: Any, keepdims: bool) -> np.ndarray:
    """Put back the reduced axes of `grad` (size 1) so it broadcasts against `shape`."""
    if not shape:  # numpy reduces a 0-d array over axis 0 or -1 to itself: nothing to put back
        return np.reshape(grad, ())
    if axis is not None and not keepdims:
        grad = np.expand_dims(grad, axis)
    elif axis is None and not keepdims:
        grad = np.reshape(grad, (1,) * len(shape))
    return grad


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _reduced_axis(a, axis)
        ctx.args = (a.shape, axis, keepdims)
        return np.asarray(a.sum(axis=axis, keepdims=keepdims))

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # every summand gets G
        shape, axis, keepdims = ctx.args
        return np.broadcast_to(_expand_reduced(grad, shape, axis, keepdims), shape)


class Mean(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _reduced_axis(a, axis)
        ctx.args = (a.shape, axis, keepdims)
        out = np.asarray(a.mean(axis=axis, keepdims=keepdims))
        ctx.count = a.size // max(out.size, 1)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # every term gets G / n
        shape, axis, keepdims = ctx.args
        g = _expand_reduced(grad, shape, axis, keepdims) / np.asarray(ctx.count, grad.dtype)
        return np.broadcast_to(g, shape)


class Max(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        axis = _reduced_axis(a, axis)
        out = np.asarray(a.max(axis=axis, keepdims=keepdims))
        ctx.save_for_backward(a, out)  # both saved, so both are version-checked
        ctx.args = (a.shape, axis, keepdims)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        # G goes to the maximum; tied maxima share it equally (as PyTorch's amax does)
        a, out = ctx.saved
        shape, axis, keepdims = ctx.args
        is_max = a == _expand_reduced(out, shape, axis, keepdims)
        share = is_max / is_max.sum(axis=axis, keepdims=True)
        return share.astype(a.dtype) * _expand_reduced(grad, shape, axis, keepdims)


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


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        # exp of a non-positive number only, so neither branch overflows
        e = np.exp(-np.abs(a))
        out = np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:  # d s(a) = G s (1 - s)
        (out,) = ctx.saved
        return grad * out * (1 - out)


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


class GELU(Function):
    """x * Phi(x). approximate="none" uses erf (PyTorch's default), "tanh" the fast fit."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, approximate: str = "none") -> np.ndarray:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a**3)
            return (0.5 * a * (1 + np.tanh(inner))).astype(a.dtype)
        return (0.5 * a * (1 + _erf(a / math.sqrt(2)))).astype(a.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        (a,) = ctx.saved
        if ctx.approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a**3))
            d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a**2)
            slope = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * d_inner
        else:  # d/da [a Phi(a)] = Phi(a) + a phi(a)
            cdf = 0.5 * (1 + _erf(a / math.sqrt(2)))
            pdf = np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
            slope = cdf + a * pdf
        return (grad * slope).astype(a.dtype)


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
        ctx.args = (a.shape, index)
        return a[index]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        shape, index = ctx.args
        out = np.zeros(shape, dtype=grad.dtype)
        np.add.at(out, index, grad)  # an index picked twice gets both gradients
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


class Recycled:
    """An array kept from one call to the next, and handed out again once nothing holds it.

    Why: a fresh large array costs more than the arithmetic on it. The kernel maps and zeroes
    new pages on first touch (logits of shape (1024, 50257) in float32 are 200 MiB to zero),
    far more slowly on a virtual machine whose host has taken freed memory back. A training
    loop asks for an array of the same shape every step, and last step's is free again: reuse
    it. "Free" is known from the reference count, as the engine knows a gradient is unshared:
    a saved graph, a `.grad`, a view, anything that still holds the old array makes this hand
    out a new one instead. The cost: one array stays allocated between calls (`clear()`).
    """

    def __init__(self) -> None:
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()  # two threads must not both see the array as free

    def get(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised array of `shape` and `dtype` that nothing else references."""
        with self._lock:
            if not self._reusable(shape, dtype):
                self._array = np.empty(shape, dtype)
            return self._array

    def clear(self) -> None:
        with self._lock:
            self._array = None

    def _reusable(self, shape: tuple[int, ...], dtype: Any) -> bool:
        # no local name for the array here: it would count as one more reference
        return (self._array is not None and self._array.shape == shape and self._array.dtype == dtype
                and _HAS_REFERENCE_COUNTS and self._references() <= _REFERENCES_WHEN_FREE)

    def _references(self) -> int:
        kept = self._array
        return sys.getrefcount(kept)


_HAS_REFERENCE_COUNTS = hasattr(sys, "getrefcount")  # False on PyPy: never reuse


def _references_when_free() -> int:
    """What `Recycled._references` says when only the Recycled holds its array."""
    probe = Recycled()
    probe._array = np.empty(1)
    return probe._references() if _HAS_REFERENCE_COUNTS else -1


_REFERENCES_WHEN_FREE = _references_when_free()


class CrossEntropy(Function):
    """Mean (or sum) of -log softmax(z)[y] over positions; fused so dL/dz = (p - y) / N.

    With e = exp(z - max z) and s = sum(e):  -log p_y = log s - (z_y - max z),  p = e / s.
    One (..., C) buffer holds e from the forward to the backward, where it becomes dz in place:
    a large vocabulary makes every extra pass over the logits cost as much as a matmul. The
    buffer is recycled from call to call (see `Recycled`).
    """

    buffer = Recycled()

    @staticmethod
    def forward(ctx: Context, logits: np.ndarray, targets: np.ndarray,
                reduction: str = "mean") -> np.ndarray:
        y = targets[..., None]
        e = CrossEntropy.buffer.get(logits.shape, logits.dtype)
        np.subtract(logits, logits.max(axis=-1, keepdims=True), out=e)  # exp never overflows
        shifted_target = np.take_along_axis(e, y, axis=-1)
        np.exp(e, out=e)
        total = e.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(e, total, targets)
        ctx.scale = 1.0 / targets.size if reduction == "mean" else 1.0
        loss = (np.log(total) - shifted_target).sum() * ctx.scale
        return np.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dz = G scale (p - y)
        e, total, targets = ctx.saved
        y = targets[..., None]
        step = grad * np.asarray(ctx.scale, dtype=e.dtype)
        # e is private to this op: on the last backward it is freed anyway, so it becomes dz
        dz = e if ctx.last_backward else e.copy()
        dz *= step / total  # G scale p
        np.put_along_axis(dz, y, np.take_along_axis(dz, y, axis=-1) - step, axis=-1)  # - G scale y
        return dz, None


# ---- the two maps of a vocabulary -------------------------------------------------------------

class Embedding(Function):
    """out[...] = weight[ids[...]]; the weight's gradient names only the rows it read.

    weight: (V, d); ids: int array of any shape S (checked by F.embedding) -> out: (*S, d).
    """

    @staticmethod
    def forward(ctx: Context, weight: np.ndarray, ids: np.ndarray, sparse: bool = True,
                padding_idx: int | None = None) -> np.ndarray:
        # keep our own copy of the ids: the caller may reuse its buffer before backward
        ctx.args = (weight.shape, ids.copy(), sparse, padding_idx)
        return weight[ids]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dE[v] = sum of G[b,t] where ids[b,t] = v
        shape, ids, sparse, padding_idx = ctx.args
        flat_ids = ids.reshape(-1)
        rows = grad.reshape(flat_ids.size, *shape[1:])
        if padding_idx is not None:  # the padding row learns nothing (as in PyTorch)
            keep = flat_ids != padding_idx
            flat_ids, rows = flat_ids[keep], rows[keep]
        grad_weight = RowSparse(flat_ids, rows, shape).coalesce()  # repeated ids summed
        return (grad_weight if sparse else grad_weight.to_dense()), None


class Linear(Function):
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch.

    x: (..., in) -> y: (..., out); weight: (out, in); bias: (out,) or None.
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None
                ) -> np.ndarray:
        ctx.save_for_backward(x, weight)
        out = x @ weight.T
        if bias is not None:
            out += bias  # out is a fresh array, so adding in place changes nothing else
        return out

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dx = G W, dW = G^T x, db = sum G
        x, weight = ctx.saved
        # every leading axis of x is a batch axis: flatten them so dW and db are one product each
        g2 = grad.reshape(-1, grad.shape[-1])
        grad_x = grad @ weight if ctx.needs_input_grad[0] else None
        grad_w = g2.T @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad[1] else None
        has_bias = len(ctx.needs_input_grad) == 3  # apply(x, w) and apply(x, w, b) both work
        grad_b = g2.sum(axis=0) if has_bias and ctx.needs_input_grad[2] else None
        return (grad_x, grad_w, grad_b) if has_bias else (grad_x, grad_w)
