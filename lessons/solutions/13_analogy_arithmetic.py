"""Lesson 13 reference answers."""

import numpy as np

import minigrad as mg


def three_cos_add(table: np.ndarray, questions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """argmax over x not in {a, b, c} of cos(x, unit(b) - unit(a) + unit(c)), and d's rank there."""
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = table / np.where(norms > 0, norms, 1.0)  # an all-zero row stays zero: cosine 0
    a, b, c, d = np.asarray(questions).T
    scores = (unit[b] - unit[a] + unit[c]) @ unit.T  # (n, V); the target's length is common to a row
    n = np.arange(len(questions))
    for query in (a, b, c):
        scores[n, query] = -np.inf  # the query words are not answers
    ranks = 1 + (scores > scores[n, d][:, None]).sum(axis=1)
    return scores.argmax(axis=1), ranks


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))  # finite for any x


class NegativeSamplingLoss(mg.Function):
    """mean_i -[log s(u_i0 . v_i) + sum_k log s(-u_ik . v_i)]; d(-log s(z))/dz = -s(-z)."""

    @staticmethod
    def forward(ctx, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        sign = np.ones(u.shape[1], dtype=v.dtype)
        sign[1:] = -1  # the context should score high, the noise words low
        z = np.einsum("bkd,bd->bk", u, v) * sign  # (B, 1 + K)
        ctx.v, ctx.u, ctx.sign = v.copy(), u.copy(), sign
        ctx.slope = -1.0 / (1.0 + np.exp(np.clip(z, -500, 500)))  # d(-log s(z))/dz = -s(-z)
        return np.asarray(-_log_sigmoid(z).sum() / len(v), dtype=v.dtype)

    @staticmethod
    def backward(ctx, grad: np.ndarray):
        dz = ctx.slope * ctx.sign * (grad / len(ctx.v))  # dL/d(u_k . v), (B, 1 + K)
        dv = np.einsum("bk,bkd->bd", dz, ctx.u)
        du = dz[:, :, None] * ctx.v[:, None, :]
        return dv.astype(ctx.v.dtype), du.astype(ctx.u.dtype)
