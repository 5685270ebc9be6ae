"""The two maps of a vocabulary, and the loss that joins them: the ops lessons 3-6 teach.

    Embedding     E[ids]: the input map. Its gradient is a RowSparse naming only the rows read,
                  with repeated ids summed (lesson 4).
    Linear        x W^T + b: the output map when W is the (V, d) table (lesson 5).
    Softmax, LogSoftmax, CrossEntropy: logits to probabilities to a loss; the famous
                  dL/dz = p - onehot(y) (lesson 5).
    LinearCrossEntropy: Linear and CrossEntropy as one op (the classifier and its loss).

Read them in this order: Embedding, Linear, then the softmax family.
"""

from __future__ import annotations

import numpy as np

from minigrad.engine import kernels
from minigrad.engine.arrays import Array, DType, Gradients
from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function
from minigrad.engine.sparse import RowSparse


def shifted_exp(z: Array, axis: int = -1) -> tuple[Array, Array, Array]:
    """The one softmax helper: (e, s, shifted) with shifted = z - max z, e = exp(shifted), and
    s = sum(e) along `axis` (kept as a size-1 axis). p = e / s and log p = shifted - log s.
    Subtracting the max first means exp never overflows, even for logits around 1e4."""
    z = as_float(z)  # the softmax of int scores is float32 (PyTorch refuses them)
    shifted = z - z.max(axis=axis, keepdims=True, initial=-np.inf)  # (initial: an empty axis has none)
    e = np.exp(shifted)
    return e, e.sum(axis=axis, keepdims=True), shifted


class Embedding(Function):
    """out[...] = weight[ids[...]]; the weight's gradient names only the rows it read.

    weight: (V, d); ids: int array of any shape S (checked by F.embedding) -> out: (*S, d).
    """

    @staticmethod
    def forward(ctx: Context, weight: Array, ids: Array, sparse: bool = True,
                padding_idx: int | None = None) -> Array:
        # keep our own copy of the ids: the caller may reuse its buffer before backward
        ctx.weight_shape, ctx.ids = weight.shape, ids.copy()
        ctx.sparse, ctx.padding_idx = sparse, padding_idx
        return weight[ids]

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # dE[v] = sum of G[b,t] where ids[b,t] = v
        ids = ctx.ids.reshape(-1)
        rows = grad.reshape(ids.size, *ctx.weight_shape[1:])  # one row of G per position
        if ctx.padding_idx is not None:  # the padding row learns nothing (as in PyTorch)
            keep = ids != ctx.padding_idx
            ids, rows = ids[keep], rows[keep]
        unique, sums = kernels.segment_sums(ids, rows)  # each id's rows added into one (repeats too)
        grad_weight = RowSparse(unique, sums, ctx.weight_shape, coalesced=True)
        return (grad_weight if ctx.sparse else grad_weight.to_dense()), None


class Linear(Function):
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch.

    x: (..., in) -> y: (..., out); weight: (out, in); bias: (out,) or None.
    """

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array, bias: Array | None = None
                ) -> Array:
        ctx.save_for_backward(x, weight)
        return kernels.linear(x, weight, bias)  # x W^T + b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # dx = G W, dW = G^T x, db = sum G
        x, weight = ctx.saved
        # every leading axis of x is a batch axis: dW sums G^T x over all positions, which is
        # one product of the positions stacked as rows (the clearest way to write the sum)
        g2 = grad.reshape(-1, grad.shape[-1])
        grad_x = (g2 @ weight).reshape(x.shape) if ctx.needs_input_grad[0] else None
        grad_w = g2.T @ x.reshape(len(g2), x.shape[-1]) if ctx.needs_input_grad[1] else None
        has_bias = len(ctx.needs_input_grad) == 3  # apply(x, w) and apply(x, w, b) both work
        grad_b = g2.sum(axis=0) if has_bias and ctx.needs_input_grad[2] else None
        return (grad_x, grad_w, grad_b) if has_bias else (grad_x, grad_w)


def log_softmax(z: Array, axis: int = -1) -> Array:
    """log p = (z - max z) - log sum exp(z - max z)."""
    _, total, shifted = shifted_exp(z, axis)
    with np.errstate(divide="ignore"):  # an empty axis sums to 0: no entries, so nothing is -inf
        log_p: Array = shifted - np.log(total)
    return log_p


class Softmax(Function):
    @staticmethod
    def forward(ctx: Context, z: Array, axis: int = -1) -> Array:
        p = np.exp(log_softmax(z, axis))
        ctx.save_for_backward(p)
        ctx.axis = axis
        return p

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # dz = p * (G - sum(G p))
        (p,) = ctx.saved
        dz: Array = p * (grad - (grad * p).sum(axis=ctx.axis, keepdims=True))
        return dz


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx: Context, z: Array, axis: int = -1) -> Array:
        out = log_softmax(z, axis)
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # dz = G - p * sum(G)
        (log_p,) = ctx.saved
        dz: Array = grad - np.exp(log_p) * grad.sum(axis=ctx.axis, keepdims=True)
        return dz


class CrossEntropy(Function):
    """Mean (or sum) over positions of -log softmax(z)[y], fused: dL/dz = G scale (p - onehot(y)).

    logits: (..., C) float; targets: (...) int. Nothing but the loss reads the softmax, so the
    forward turns the logits at once into the loss's gradient for G = 1, dz = scale (p - onehot(y))
    (scale = 1/N for the mean), and keeps only that; the backward scales it by G.
    """

    @staticmethod
    def forward(ctx: Context, logits: Array, targets: Array,
                reduction: str = "mean") -> Array:
        z, y = as_float(logits).reshape(-1, logits.shape[-1]), targets.reshape(-1, 1)
        scale = mean_or_sum_scale(y.size, reduction, z.dtype)
        dz = kernels.buffer("cross_entropy", z.shape, z.dtype)  # written whole by the next line
        total, shifted_target = kernels.cross_entropy_rows(z, y, scale, out=dz)
        ctx.save_for_backward(dz)
        ctx.logits_shape = logits.shape
        loss = (np.log(total) - shifted_target).sum() * scale  # -log p_y = log s - (z_y - max z)
        return np.asarray(loss, dtype=z.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # dz = G scale (p - onehot(y))
        (dz,) = ctx.saved
        return (dz if grad == 1 else dz * grad.astype(dz.dtype)).reshape(ctx.logits_shape), None


def mean_or_sum_scale(n: int, reduction: str, dtype: DType) -> Array:
    """1/n for reduction="mean" (NaN for no positions: the mean of nothing, as PyTorch), 1 for "sum"."""
    return np.asarray((1.0 / n if n else np.nan) if reduction == "mean" else 1.0, dtype=dtype)


class LinearCrossEntropy(Function):
    """The classifier and its loss as one op: mean (or sum) of -log softmax(x W^T + b)[y].

    x: (..., in) float; weight: (C, in); bias: (C,) or None; targets: (...) int -> a scalar.
    As in CrossEntropy, the forward turns the logits at once into dz = scale (p - onehot(y)) and
    keeps only that. The backward is two products: dx = G dz W, dW = G dz^T x (db = G sum dz).
    For G = 1 every number is the one that F.cross_entropy(F.linear(x, W, b), y) computes.
    """

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array, bias: Array | None,
                targets: Array, reduction: str = "mean") -> Array:
        rows, y = x.reshape(targets.size, x.shape[-1]), targets.reshape(-1, 1)
        dtype = np.result_type(x, weight)
        scale = mean_or_sum_scale(y.size, reduction, dtype)
        z = kernels.linear(rows, weight, bias, out=kernels.buffer("logits", (len(rows), len(weight)), dtype))
        total, shifted_target = kernels.cross_entropy_rows(z, y, scale, out=z)  # z is now dz
        ctx.save_for_backward(rows, weight, z)
        ctx.x_shape = x.shape
        loss = (np.log(total) - shifted_target).sum() * scale  # -log p_y = log s - (z_y - max z)
        return np.asarray(loss, dtype=dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # G dz W, G dz^T x, G sum dz
        rows, weight, dz = ctx.saved
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grads = [dz @ weight if need_x else None, dz.T @ rows if need_w else None,
                 dz.sum(axis=0) if need_b else None]
        if grad != 1:  # scaled here, in (N, in) and (C, in), rather than over the (N, C) dz
            grads = [None if g is None else g * grad.astype(g.dtype) for g in grads]
        grad_x = None if grads[0] is None else grads[0].reshape(ctx.x_shape)
        return grad_x, grads[1], grads[2], None
