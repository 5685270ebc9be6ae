"""The fast twins: each a Function registered at the seam in place of its plain op.

A twin computes what its plain op computes (bit for bit, or within float32 rounding where its
docstring says so), using the kernels of fast.py where they apply and the plain op's own code
where a kernel says no. Each is tested against its plain op (tests/fast/). Switch them off with
`minigrad.use(fast=False)` or MINIGRAD_FAST_PATHS=0. What each buys: docs/performance.md.

Also here: OwnedSums, the fast way for the backward walk to sum the gradients that meet at a node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import fast, ops, seam
from minigrad.engine.dtypes import as_float
from minigrad.engine.graph import ACCUMULATE_LOCK, AccumulateGrad, Node
from minigrad.engine.ops.transformer import attention_bias
from minigrad.engine.sparse import RowSparse, add_grads, add_into


class FastTanh(ops.Tanh):
    """tanh on row blocks on two threads (numpy's tanh runs on one)."""

    @staticmethod
    def forward(ctx: Any, a: np.ndarray) -> np.ndarray:
        out = fast.unary(np.tanh, as_float(a))
        if out is None:
            return ops.Tanh.forward(ctx, a)
        ctx.save_for_backward(out)
        return out


class FastGELU(ops.GELU):
    """float32 Phi by a rational fit (within 1.5e-7 of erf), in row blocks: math.erf one element at
    a time is 40x slower than the matmuls around it."""

    @staticmethod
    def forward(ctx: Any, a: np.ndarray, approximate: str = "none") -> np.ndarray:
        fitted = fast.gelu_float32(a) if approximate == "none" else None
        if fitted is None:
            return ops.GELU.forward(ctx, a, approximate)
        out, cdf, pdf = fitted
        ctx.approximate = approximate
        ctx.save_for_backward(a, cdf, pdf)
        return out

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> np.ndarray:
        if ctx.approximate == "none":
            slope = fast.gelu_slope(grad, *ctx.saved)
            if slope is not None:
                return slope
        return ops.GELU.backward(ctx, grad)


class FastEmbedding(ops.Embedding):
    """The lookup's gradient with each run of a repeated id summed by vectorised steps
    (fast.run_sums) instead of np.add.at: 3.5x to 10x on Zipf ids."""

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple:
        shape = ctx.weight_shape
        flat_ids = ctx.ids.reshape(-1)
        rows = grad.reshape(flat_ids.size, *shape[1:])
        if ctx.padding_idx is not None:
            keep = flat_ids != ctx.padding_idx
            flat_ids, rows = flat_ids[keep], rows[keep]
        grad_weight = RowSparse(flat_ids, rows, shape).coalesce(sum_runs=fast.run_sums)
        return (grad_weight if ctx.sparse else grad_weight.to_dense()), None


class FastLinear(ops.Linear):
    """(B, T, in) inputs as one BLAS product of B*T rows, the bias added in place."""

    @staticmethod
    def forward(ctx: Any, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None
                ) -> np.ndarray:
        out = fast.linear_rows(x, weight, bias)
        if out is None:
            return ops.Linear.forward(ctx, x, weight, bias)
        ctx.save_for_backward(x, weight)
        return out


class FastCrossEntropy(ops.CrossEntropy):
    """exp and its row sums in one recycled buffer, in row blocks on two threads; the backward
    writes dz over its saved e when the graph is not kept: at a large vocabulary every pass over
    the logits costs about as much as a matmul."""

    @staticmethod
    def forward(ctx: Any, logits: np.ndarray, targets: np.ndarray, reduction: str = "mean") -> np.ndarray:
        fused = fast.cross_entropy_exp(logits, targets[..., None])
        if fused is None:
            return ops.CrossEntropy.forward(ctx, logits, targets, reduction)
        e, total, shifted_target = fused
        ctx.save_for_backward(e, total, targets.copy())  # our own, as the plain op's
        ctx.scale = 1.0 / targets.size if reduction == "mean" else 1.0
        loss = (np.log(total) - shifted_target).sum() * ctx.scale
        return np.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple:
        e, total, targets = ctx.saved
        y = targets[..., None]
        step = grad * np.asarray(ctx.scale, dtype=e.dtype)
        out = fast.reusable(ctx, e)
        dz = fast.scale_rows(e, step / total, out=out)
        if dz is None:
            dz = np.multiply(e, step / total, out=out)
        np.put_along_axis(dz, y, np.take_along_axis(dz, y, axis=-1) - step, axis=-1)
        return dz, None


class FastLinearCrossEntropy(ops.LinearCrossEntropy):
    """The logits turned into dz in place, in row blocks on two threads, in a buffer recycled from
    step to step (fresh (N, C) pages cost more than the arithmetic on them)."""

    @staticmethod
    def forward(ctx: Any, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
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
        loss = (np.log(total) - shifted_target).sum() * scale
        return np.asarray(loss, dtype=x.dtype)


class FastLayerNorm(ops.LayerNorm):
    """LayerNorm in few passes, in place, in row blocks (float32-rounding close to the plain op)."""

    @staticmethod
    def forward(ctx: Any, x: np.ndarray, weight: np.ndarray | None = None,
                bias: np.ndarray | None = None, eps: float = 1e-5) -> np.ndarray:
        fused = fast.layer_norm(x, weight, bias, eps)
        if fused is None:
            return ops.LayerNorm.forward(ctx, x, weight, bias, eps)
        out, xhat, rstd = fused
        ctx.save_for_backward(xhat, rstd, weight)
        return out

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple:
        xhat, rstd, weight = ctx.saved
        grad_x = fast.layer_norm_dx(grad, xhat, rstd, weight) if ctx.needs_input_grad[0] else None
        if ctx.needs_input_grad[0] and grad_x is None:
            return ops.LayerNorm.backward(ctx, grad)
        need_w, need_b = ctx.needs_input_grad[1:]
        rows = grad.reshape(-1, grad.shape[-1])
        grad_w = np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)) if need_w else None
        return grad_x, grad_w, rows.sum(axis=0) if need_b else None


class FastScaledDotProductAttention(ops.ScaledDotProductAttention):
    """Softmax attention per (batch, head) block, in place (float32-rounding close). Dropout, and
    a float mask that requires grad, take the plain op's forward or backward."""

    @staticmethod
    def forward(ctx: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                attn_mask: np.ndarray | None = None, dropout_p: float = 0.0, is_causal: bool = False,
                scale: float | None = None, rng: np.random.Generator | None = None) -> np.ndarray:
        plain = ops.ScaledDotProductAttention
        scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
        bias = attention_bias(attn_mask, is_causal, q.shape[-2], k.shape[-2], q.dtype)
        fused = fast.attention(q, k, v, scale, bias) if dropout_p == 0 else None
        if fused is None:
            return plain.forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, rng)
        out, p = fused
        ctx.save_for_backward(q, k, v, p, None)  # as the plain op saves them (no dropout mask)
        ctx.scale = scale
        ctx.mask_shape = None if attn_mask is None else attn_mask.shape
        return out

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple:
        q, k, v, p, keep = ctx.saved
        mask_needs_grad = len(ctx.needs_input_grad) > 3 and ctx.needs_input_grad[3]
        grads = None if keep is not None or mask_needs_grad else \
            fast.attention_grads(grad, q, k, v, p, ctx.scale)
        if grads is None:
            return ops.ScaledDotProductAttention.backward(ctx, grad)
        grads = tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))
        return (*grads, None)[:len(ctx.needs_input_grad)]


class FastRMSNorm(ops.RMSNorm):
    """RMSNorm in few passes, in place, in row blocks (float32-rounding close to the plain op)."""

    @staticmethod
    def forward(ctx: Any, x: np.ndarray, weight: np.ndarray | None = None, eps: float = 1e-6) -> np.ndarray:
        fused = fast.layer_norm(x, weight, None, eps, centred=False)
        if fused is None:
            return ops.RMSNorm.forward(ctx, x, weight, eps)
        out, xhat, rstd = fused
        ctx.save_for_backward(xhat, rstd, weight)
        return out

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple:
        xhat, rstd, weight = ctx.saved
        need_x, need_w = ctx.needs_input_grad
        grad_x = fast.layer_norm_dx(grad, xhat, rstd, weight, centred=False) if need_x else None
        if need_x and grad_x is None:
            return ops.RMSNorm.backward(ctx, grad)
        rows = grad.reshape(-1, grad.shape[-1])
        return grad_x, np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)) if need_w else None


class FastSiLU(ops.SiLU):
    """SiLU and its slope in four and five in-place passes, in row blocks (float32-rounding close)."""

    @staticmethod
    def forward(ctx: Any, a: np.ndarray) -> np.ndarray:
        fused = fast.silu(a)
        if fused is None:
            return ops.SiLU.forward(ctx, a)
        out, s = fused
        ctx.save_for_backward(a, s)
        return out

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> np.ndarray:
        slope = fast.silu_slope(grad, *ctx.saved)
        return ops.SiLU.backward(ctx, grad) if slope is None else slope


class OwnedSums:
    """The fast way to sum the gradients that meet at a node: in place, into an array nothing but
    this object holds (fast.held_only_by), instead of a new array per sum; and such a sum goes to
    a leaf's `.grad` without a copy. For a tied table this saves a (V, d) array twice per step.
    The results equal the plain NewArraySums' bit for bit: the same additions, in the same order.
    """

    def __init__(self) -> None:
        self.totals: dict[Node, Any] = {}

    def add(self, node: Node, g: Any) -> None:
        totals = self.totals
        if node not in totals:
            totals[node] = g
        elif fast.held_only_by(totals, node) and _adds_in_place(totals[node], g):
            add_into(totals[node], g)
        else:
            totals[node] = add_grads(totals[node], g)  # a new array: held by nothing else

    def pop(self, node: Node) -> Any:
        if type(node) is AccumulateGrad and node in self.totals and self._hand_over(node):
            return None  # the sum is the leaf's .grad now: nothing left to run
        return self.totals.pop(node, None)

    def _hand_over(self, leaf: AccumulateGrad) -> bool:
        """Make the sum the leaf's `.grad` itself, when it is ours, of the leaf's dtype, and the
        leaf has no gradient yet."""
        var = leaf.variable
        if var.grad is not None or not fast.held_only_by(self.totals, leaf):
            return False
        if self.totals[leaf].dtype != var.data.dtype:
            return False
        with ACCUMULATE_LOCK:
            if var.grad is not None:
                return False
            var.grad = self.totals.pop(leaf)
        return True


def _adds_in_place(total: Any, g: Any) -> bool:
    """Whether `total += g` gives exactly what add_grads(total, g) would: same shape and dtype."""
    return (type(total) is np.ndarray and g.shape == total.shape
            and np.result_type(total, getattr(g, "values", g)) == total.dtype)


TWINS = {
    ops.Tanh: FastTanh, ops.GELU: FastGELU, ops.Embedding: FastEmbedding, ops.Linear: FastLinear,
    ops.CrossEntropy: FastCrossEntropy, ops.LinearCrossEntropy: FastLinearCrossEntropy,
    ops.LayerNorm: FastLayerNorm, ops.ScaledDotProductAttention: FastScaledDotProductAttention,
    ops.RMSNorm: FastRMSNorm, ops.SiLU: FastSiLU,
}
for _plain, _twin in TWINS.items():
    seam.register_fast(_plain, _twin)
seam.register_fast_sums(OwnedSums)
