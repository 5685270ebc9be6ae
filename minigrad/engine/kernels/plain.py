"""The plain kernels: the array work the ops name, written as the math reads.

An op calls `kernels.<name>(...)` where its work is heavy (a vocabulary-sized softmax, a lookup's
gradient, a norm); the kernel does that work on numpy arrays and knows nothing of tensors or
graphs. This file is what runs when the fast kernels are off (kernels/__init__.py chooses), and
the reference every fast kernel is tested against (tests/engine/test_kernels.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine.arrays import Array

# ---- the vocabulary's kernels: a lookup's gradient, the classifier, its loss --------------------

def segment_sums(ids: Array, rows: Array) -> tuple[Array, Array]:
    """(unique ids, sums): the rows of each id added together, ids sorted.

    ids: (n,) ints; rows: (n, *row_shape). Sort the ids stably (each id's rows are added in the
    order they came), find where each run of one id starts, and sum each run into one row.
    """
    order = np.argsort(ids, kind="stable")
    sorted_ids, sorted_rows = ids[order], rows[order]
    starts_run = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]][:len(ids)]
    sums = sorted_rows[starts_run]                      # each run's first row, then the rest added
    run_of_row = np.cumsum(starts_run) - 1
    np.add.at(sums, run_of_row[~starts_run], sorted_rows[~starts_run])
    return sorted_ids[starts_run], sums


def linear(x: Array, weight: Array, bias: Array | None, out: Array | None = None) -> Array:
    """x W^T + b, for x of shape (..., in) and W of shape (out, in); into `out` when given."""
    y = np.matmul(x, weight.T, out=out)
    return y if bias is None else np.add(y, bias, out=out)


def buffer(name: str, shape: tuple[int, ...], dtype: Any) -> Array:
    """An array for an op's large result, to be written whole: here a new one. (The fast kernels
    hand back last step's array of that `name` once nothing holds it.)"""
    return np.empty(shape, dtype)


def cross_entropy_rows(z: Array, targets: Array, scale: Any, out: Array) -> tuple[Array, Array]:
    """The loss's gradient for logits z (n, C), written into `out` (z itself is fine), and what
    the loss needs.

    With e = exp(z - max z) (never overflows), s = sum(e) and p = e / s:
        out = dz = scale (p - onehot(y)), the gradient of scale * sum of -log p_y,
        returns (s, z_y - max z), each (n, 1), since -log p_y = log s - (z_y - max z).
    targets: (n, 1) ints in [0, C); scale: a number of z's dtype (1/n for a mean).
    """
    np.subtract(z, z.max(axis=1, keepdims=True), out=out)       # z - max z
    shifted_target = np.take_along_axis(out, targets, axis=1)   # z_y - max z
    np.exp(out, out=out)                                        # e
    total = out.sum(axis=1, keepdims=True)                      # s
    out *= scale / total                                        # scale p
    np.put_along_axis(out, targets, np.take_along_axis(out, targets, axis=1) - scale, axis=1)
    return total, shifted_target


# ---- elementwise: activations ---------------------------------------------------------------

def tanh(a: Array) -> Array:
    """tanh(a), elementwise."""
    return np.tanh(a)


_erf: Callable[[Array], Array] = np.vectorize(math.erf, otypes=[np.float64])
_SQRT_2PI = math.sqrt(2 * math.pi)


def erf(a: Array) -> Array:
    """erf(a) in a's dtype, computed in float64."""
    return _erf(a).astype(a.dtype)


def gelu(a: Array) -> tuple[Array, Array, Array]:
    """(a Phi(a), Phi(a), phi(a)): GELU and what its backward needs, in a's dtype.

    Phi(a) = (1 + erf(a / sqrt 2)) / 2, the standard normal CDF; phi(a) = exp(-a^2/2) / sqrt(2 pi),
    its density. (numpy has no erf: math.erf runs one element at a time, in float64.)
    """
    cdf = (0.5 * (1 + _erf(a.astype(np.float64) / math.sqrt(2)))).astype(a.dtype)
    pdf = (np.exp(-0.5 * a * a) / _SQRT_2PI).astype(a.dtype)
    return a * cdf, cdf, pdf


def gelu_backward(grad: Array, a: Array, cdf: Array, pdf: Array) -> Array:
    """G (Phi(a) + a phi(a)): d/da [a Phi(a)] times G."""
    return (a * pdf + cdf) * grad


def sigmoid(a: Array) -> Array:
    """1 / (1 + e^-a) in a's dtype, from the exp of a non-positive number only (never overflows)."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype)


def silu(a: Array) -> tuple[Array, Array]:
    """(a s(a), s(a)), s the sigmoid."""
    s = sigmoid(a)
    return a * s, s


def silu_backward(grad: Array, a: Array, s: Array) -> Array:
    """G (s + a s (1 - s)) = G s (1 + a (1 - s))."""
    dx: Array = grad * s * (1 + a * (1 - s))
    return dx


# ---- norms over the last axis -----------------------------------------------------------------

def layer_norm(x: Array, weight: Array | None, bias: Array | None, eps: float,
               centred: bool = True) -> tuple[Array, Array, Array]:
    """(y, xhat, r): y = xhat w + b, xhat = (x - mean x) r, r = 1 / sqrt(var x + eps), over the last axis.

    centred=False is RMSNorm's: xhat = x r with r = 1 / sqrt(mean(x^2) + eps), no mean taken.
    """
    centred_x = x - x.mean(axis=-1, keepdims=True) if centred else x
    variance = (centred_x * centred_x).mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(variance + np.asarray(eps, x.dtype))
    xhat = centred_x * rstd
    out = xhat if weight is None else xhat * weight
    return (out if bias is None else out + bias), xhat, rstd


def layer_norm_backward(grad: Array, xhat: Array, rstd: Array, weight: Array | None,
                        centred: bool = True) -> Array:
    """dx = r (g - mean(g) - xhat mean(g xhat)), g = G w (RMSNorm, centred=False: no mean(g) term)."""
    g = grad if weight is None else grad * weight
    projection: Array = xhat * (g * xhat).mean(axis=-1, keepdims=True)
    if centred:
        dx: Array = rstd * (g - g.mean(axis=-1, keepdims=True) - projection)
    else:
        dx = rstd * (g - projection)
    return dx


# ---- attention ----------------------------------------------------------------------------------

def attention(q: Array, k: Array, v: Array, scale: float, bias: Array | None,
              keep: Array | None) -> tuple[Array, Array]:
    """(P' v, P): P = softmax(q k^T scale + bias) over the keys, P' = P keep (dropout) or P.

    bias: 0 where a query may see a key, -inf where not (or a float mask), broadcasting to
    (..., L, S); None when nothing is masked. A query that may see no key gets weights 0.
    """
    scores = (q @ k.swapaxes(-1, -2)) * np.asarray(scale, q.dtype)
    if bias is not None:
        scores = scores + bias
    top = scores.max(axis=-1, keepdims=True, initial=-np.inf)  # (initial: no keys at all gives -inf)
    top[np.isneginf(top)] = 0  # a row masked everywhere: every e is 0, and so is every weight
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return (p if keep is None else p * keep) @ v, p


def attention_backward(grad: Array, q: Array, k: Array, v: Array, p: Array, keep: Array | None,
                       scale: float, needs: tuple[bool, ...]
                       ) -> tuple[Array | None, Array | None, Array | None, Array | None]:
    """(dq, dk, dv, dS) for the needs (q, k, v, the mask). With P' = P keep:
        dv = P'^T G,  dP = (G v^T) keep,  dS = P (dP - sum(dP P)),  dq = dS k scale,  dk = dS^T q scale
    dS (the scores' gradient, unscaled) is what a float mask receives."""
    need_q, need_k, need_v, need_mask = needs
    grad_v = (p if keep is None else p * keep).swapaxes(-1, -2) @ grad if need_v else None
    if not (need_q or need_k or need_mask):
        return None, None, grad_v, None
    dp = grad @ v.swapaxes(-1, -2)
    if keep is not None:
        dp = dp * keep
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))  # the softmax's backward
    scaled = ds * np.asarray(scale, p.dtype)
    return (scaled @ k if need_q else None, scaled.swapaxes(-1, -2) @ q if need_k else None, grad_v,
            ds if need_mask else None)


# ---- work over the rows of a table --------------------------------------------------------------

def rowwise(table: Array, work: Callable[[int, int], None]) -> None:
    """Run `work(start, stop)` over the rows of `table`: here once, over all of them.

    For work that treats each row on its own (the optimizer's update of a (V, d) table and its
    moments); the fast kernels split the rows into blocks on two threads.
    """
    work(0, len(table))
