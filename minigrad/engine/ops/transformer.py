"""The transformer's own ops: layer norm and attention (TinyGPT); RMS norm and rotary position
embeddings (the Llama-style model)."""

from __future__ import annotations

import math

import numpy as np

from minigrad.engine import kernels
from minigrad.engine.arrays import Array, DType, Gradients
from minigrad.engine.function import Context, Function
from minigrad.engine.ops.arithmetic import unbroadcast


class LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * w + b over the last axis (biased variance, as PyTorch).

    x: (..., d); weight, bias: (d,) or None. With xhat the normalised x and r = 1/sqrt(var + eps):
        dx = r * (g - mean(g) - xhat * mean(g * xhat)),  g = G * w
        dw = sum over positions of G * xhat,  db = sum of G
    """

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array | None = None,
                bias: Array | None = None, eps: float = 1e-5) -> Array:
        out, xhat, rstd = kernels.layer_norm(x, weight, bias, eps)
        ctx.save_for_backward(xhat, rstd, weight)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        xhat, rstd, weight = ctx.saved
        need_x, need_w, need_b = ctx.needs_input_grad
        rows = grad.reshape(-1, grad.shape[-1])  # dw and db sum over every position
        grad_w = np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)) if need_w else None
        grad_b = rows.sum(axis=0) if need_b else None
        grad_x = kernels.layer_norm_backward(grad, xhat, rstd, weight) if need_x else None
        return grad_x, grad_w, grad_b


class RMSNorm(Function):
    """y = x r * w over the last axis, r = 1 / sqrt(mean(x^2) + eps), as torch.nn.functional.rms_norm.

    x: (..., d); weight: (d,) or None. LayerNorm without the centring and the bias: the scale of
    each position is divided out, its direction kept. With xhat = x r:
        dx = r * (g - xhat * mean(g * xhat)),  g = G * w
        dw = sum over positions of G * xhat
    """

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array | None = None,
                eps: float = 1e-6) -> Array:
        out, xhat, rstd = kernels.layer_norm(x, weight, None, eps, centred=False)
        ctx.save_for_backward(xhat, rstd, weight)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        xhat, rstd, weight = ctx.saved
        need_x, need_w = ctx.needs_input_grad
        rows = grad.reshape(-1, grad.shape[-1])  # dw sums over every position
        grad_w = np.einsum("ni,ni->i", rows, xhat.reshape(rows.shape)) if need_w else None
        grad_x = kernels.layer_norm_backward(grad, xhat, rstd, weight, centred=False) if need_x else None
        return grad_x, grad_w


class Rotary(Function):
    """Rotary position embedding: each pair (x1, x2) of x's last axis turned by its angle,
        (x1, x2) -> (x1 cos - x2 sin,  x1 sin + x2 cos)

    x: (..., T, d), d even; cos, sin: the angles' cosines and sines, (..., T, d/2), broadcasting
    against the d/2 pairs of each position. Which entries make a pair:
        style="halves": entry i with entry i + d/2 (Llama in transformers, GPT-NeoX: `rotate_half`)
        style="pairs":  entry 2i with entry 2i + 1 (the RoPE paper, Meta's Llama code, CS336)
    A rotation's transpose is the rotation by minus the angle, so dx is G turned back: the same
    map with -sin. cos and sin are constants (functions of the positions): no gradient.
    """

    styles = ("halves", "pairs")

    @staticmethod
    def forward(ctx: Context, x: Array, cos: Array, sin: Array,
                style: str = "halves") -> Array:
        ctx.save_for_backward(cos, sin)
        ctx.style = style
        return rotate_pairs(x, cos, sin, style)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        cos, sin = ctx.saved
        return rotate_pairs(grad, cos, -sin, ctx.style), None, None


def rotate_pairs(x: Array, cos: Array, sin: Array, style: str) -> Array:
    """x with each pair of its last axis (see Rotary for which) turned by the angle (cos, sin)."""
    if style not in Rotary.styles:
        raise ValueError(f"rotary: style must be one of {Rotary.styles}, got {style!r}")
    half = x.shape[-1] // 2
    firsts, seconds = (np.s_[..., :half], np.s_[..., half:]) if style == "halves" else \
        (np.s_[..., 0::2], np.s_[..., 1::2])
    x1, x2 = x[firsts], x[seconds]
    out = np.empty_like(x)
    out[firsts] = x1 * cos - x2 * sin
    out[seconds] = x1 * sin + x2 * cos
    return out


def attention_bias(attn_mask: Array | None, is_causal: bool, L: int, S: int,
                   dtype: DType) -> Array | None:
    """What attention adds to its scores: 0 where query i may see key j, -inf where not, or the
    float mask itself; None when nothing is masked.

    attn_mask: bool (True: may attend, as PyTorch) or float (added as it is), broadcasting to
    (..., L, S). is_causal: key j > query i is masked (top-left aligned, as PyTorch).
    """
    if is_causal:
        return np.triu(np.full((L, S), -np.inf, dtype), k=1)
    if attn_mask is None:
        return None
    if attn_mask.dtype == np.bool_:
        return np.where(attn_mask, np.asarray(0, dtype), np.asarray(-np.inf, dtype))
    return attn_mask.astype(dtype, copy=False)


class ScaledDotProductAttention(Function):
    """softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention.

    q: (..., L, e), k: (..., S, e), v: (..., S, ev) -> (..., L, ev); scale 1/sqrt(e) by default.
    attn_mask (bool: True may attend; or float: added to the scores) broadcasts to (..., L, S);
    is_causal masks key j > query i. A query that may see no key gets zeros (as PyTorch), not
    NaN. dropout_p: each weight is dropped with probability p, the rest scaled by 1/(1 - p)
    (D below, drawn from rng; D = 1 without dropout). With P the weights and Pd = P D:
        dv = Pd^T G,  dP = (G v^T) D,  dS = P * (dP - sum(dP * P)),
        dq = dS k * scale,  dk = dS^T q * scale,  d attn_mask = dS (summed back to its shape)
    One op for the steps (product, scale, mask, softmax, dropout, product): P is the one
    (L, S) array kept for the backward.
    """

    @staticmethod
    def forward(ctx: Context, q: Array, k: Array, v: Array,
                attn_mask: Array | None = None, dropout_p: float = 0.0, is_causal: bool = False,
                scale: float | None = None, rng: np.random.Generator | None = None) -> Array:
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        bias = attention_bias(attn_mask, is_causal, q.shape[-2], k.shape[-2], q.dtype)
        keep = None  # dropout: the weights kept, scaled by 1/(1 - p)
        if dropout_p > 0:
            weights_shape = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
            kept = (rng or np.random.default_rng()).random(weights_shape) >= dropout_p
            keep = kept * np.asarray(0.0 if dropout_p >= 1 else 1 / (1 - dropout_p), q.dtype)
        out, p = kernels.attention(q, k, v, scale, bias, keep)  # softmax(q k^T scale + bias) keep, @ v
        ctx.save_for_backward(q, k, v, p, keep)
        ctx.scale = scale
        ctx.mask_shape = None if attn_mask is None else attn_mask.shape
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        q, k, v, p, keep = ctx.saved
        n_inputs = len(ctx.needs_input_grad)  # q, k, v, and attn_mask when it was passed
        needs = (*ctx.needs_input_grad, False)[:4]
        grad_q, grad_k, grad_v, ds = kernels.attention_backward(grad, q, k, v, p, keep, ctx.scale, needs)
        grad_mask = unbroadcast(ds, ctx.mask_shape) if ds is not None else None
        return (grad_q, grad_k, grad_v, grad_mask)[:n_inputs]
