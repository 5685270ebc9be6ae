"""The transformer's own ops (TinyGPT): layer norm and scaled dot-product attention."""

from __future__ import annotations

import math

import numpy as np

from minigrad.engine.function import Context, Function


class LayerNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * w + b over the last axis (biased variance, as PyTorch).

    x: (..., d); weight, bias: (d,) or None. With xhat the normalised x and r = 1/sqrt(var + eps):
        dx = r * (g - mean(g) - xhat * mean(g * xhat)),  g = G * w
        dw = sum over positions of G * xhat,  db = sum of G
    """

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, weight: np.ndarray | None = None,
                bias: np.ndarray | None = None, eps: float = 1e-5) -> np.ndarray:
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
        grad_x = None
        if need_x:
            g = grad if weight is None else grad * weight
            grad_x = rstd * (g - g.mean(axis=-1, keepdims=True)
                             - xhat * (g * xhat).mean(axis=-1, keepdims=True))
        return grad_x, grad_w, grad_b


class ScaledDotProductAttention(Function):
    """softmax(q k^T * scale + causal mask) v, as torch.nn.functional.scaled_dot_product_attention.

    q: (..., L, e), k: (..., S, e), v: (..., S, ev) -> (..., L, ev). With P the attention weights:
        dv = P^T G,  dP = G v^T,  dS = P * (dP - sum(dP * P)),  dq = dS k * scale,  dk = dS^T q * scale
    One op for the five steps (product, scale, mask, softmax, product): P is the one (L, S) array
    kept for the backward. is_causal masks key j > query i (top-left, as PyTorch); row i always
    sees key 0, so no row is all -inf.
    """

    @staticmethod
    def forward(ctx: Context, q: np.ndarray, k: np.ndarray, v: np.ndarray, is_causal: bool = False,
                scale: float | None = None) -> np.ndarray:
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
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
        grad_v = p.swapaxes(-1, -2) @ grad if need_v else None
        if not (need_q or need_k):
            return None, None, grad_v
        dp = grad @ v.swapaxes(-1, -2)
        ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * np.asarray(ctx.scale, p.dtype)
        return (ds @ k if need_q else None, ds.swapaxes(-1, -2) @ q if need_k else None, grad_v)

