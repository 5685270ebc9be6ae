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

from minigrad.engine.dtypes import as_float
from minigrad.engine.function import Context, Function
from minigrad.engine.sparse import RowSparse


def shifted_exp(z: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The one softmax helper: (e, s, shifted) with shifted = z - max z, e = exp(shifted), and
    s = sum(e) along `axis` (kept as a size-1 axis). p = e / s and log p = shifted - log s.
    Subtracting the max first means exp never overflows, even for logits around 1e4."""
    z = as_float(z)  # the softmax of int scores is float32 (PyTorch refuses them)
    shifted = z - z.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e, e.sum(axis=axis, keepdims=True), shifted


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
        return x @ weight.T if bias is None else x @ weight.T + bias

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


def log_softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """log p = (z - max z) - log sum exp(z - max z)."""
    _, total, shifted = shifted_exp(z, axis)
    return shifted - np.log(total)


class Softmax(Function):
    @staticmethod
    def forward(ctx: Context, z: np.ndarray, axis: int = -1) -> np.ndarray:
        p = np.exp(log_softmax(z, axis))
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
        out = log_softmax(z, axis)
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
    """

    @staticmethod
    def forward(ctx: Context, logits: np.ndarray, targets: np.ndarray,
                reduction: str = "mean") -> np.ndarray:
        e, total, shifted = shifted_exp(logits)
        shifted_target = np.take_along_axis(shifted, targets[..., None], axis=-1)
        # our own copy of the targets: a target changed (or a buffer refilled) before backward
        # must not change the gradient
        ctx.save_for_backward(e, total, targets.copy())
        ctx.scale = 1.0 / targets.size if reduction == "mean" else 1.0
        loss = (np.log(total) - shifted_target).sum() * ctx.scale
        return np.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple:  # dz = G scale (p - onehot(y))
        e, total, targets = ctx.saved
        y = targets[..., None]
        step = grad * np.asarray(ctx.scale, dtype=e.dtype)
        dz = e * (step / total)                                    # G scale p, with p = e / s
        np.put_along_axis(dz, y, np.take_along_axis(dz, y, axis=-1) - step, axis=-1)  # - G scale y
        return dz, None


class LinearCrossEntropy(Function):
    """The classifier and its loss as one op: mean (or sum) of -log softmax(x W^T + b)[y].

    x: (..., in) float; weight: (C, in); bias: (C,) or None; targets: (...) int -> a scalar.
    Nothing but the loss reads these logits, so the forward turns them into the loss's gradient
    at once, dz = scale (p - onehot(y)) (for G = 1), and keeps only that. The backward is two
    products: dx = G dz W, dW = G dz^T x (db = G sum dz). For G = 1 every number is the one that
    F.cross_entropy(F.linear(x, W, b), y) computes.
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
                targets: np.ndarray, reduction: str = "mean") -> np.ndarray:
        rows, y = x.reshape(-1, x.shape[-1]), targets.reshape(-1, 1)
        scale = np.asarray(1.0 / y.size if reduction == "mean" else 1.0, dtype=x.dtype)
        z = rows @ weight.T if bias is None else rows @ weight.T + bias
        e, total, shifted = shifted_exp(z, axis=1)
        shifted_target = np.take_along_axis(shifted, y, axis=1)
        dz = e * (scale / total)                                   # scale p
        np.put_along_axis(dz, y, np.take_along_axis(dz, y, axis=1) - scale, axis=1)
        ctx.save_for_backward(rows, weight, dz)
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
