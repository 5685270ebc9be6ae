"""Functional forms of the ops, as in `torch.nn.functional` (imported as `F`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import ops
from minigrad.tensor import Tensor


def relu(x: Tensor) -> Tensor:
    return ops.ReLU.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return ops.GELU.apply(x, approximate=approximate)


def tanh(x: Tensor) -> Tensor:
    return ops.Tanh.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return ops.Sigmoid.apply(x)


def exp(x: Tensor) -> Tensor:
    return ops.Exp.apply(x)


def log(x: Tensor) -> Tensor:
    return ops.Log.apply(x)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return ops.Softmax.apply(x, axis=axis)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return ops.LogSoftmax.apply(x, axis=axis)


def concatenate(tensors: list[Tensor], axis: int = 0) -> Tensor:
    return ops.Concatenate.apply(*tensors, axis=axis)


def stack(tensors: list[Tensor], axis: int = 0) -> Tensor:
    return ops.Stack.apply(*tensors, axis=axis)


def cross_entropy(logits: Tensor, targets: Any, reduction: str = "mean") -> Tensor:
    """-log softmax(logits)[target], averaged (or summed) over positions.

    logits: (..., C) float; targets: (...) int class ids in [0, C).
    The gradient with respect to the logits is (p - y) / N for reduction="mean".
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"cross_entropy: reduction must be 'mean' or 'sum', got {reduction!r}")
    y = np.asarray(getattr(targets, "data", targets))
    z_shape = logits.shape
    if y.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: targets must be integer class ids, got dtype {y.dtype}")
    if len(z_shape) == 0 or y.shape != z_shape[:-1]:
        raise ValueError(
            f"cross_entropy: targets has shape {y.shape}, expected {z_shape[:-1]} "
            f"(logits shape {z_shape} without its last, class axis)"
        )
    if y.size and (y.min() < 0 or y.max() >= z_shape[-1]):
        bad = y[(y < 0) | (y >= z_shape[-1])].flat[0]
        raise IndexError(
            f"cross_entropy: target {bad} is out of range for {z_shape[-1]} classes "
            f"(targets must be in [0, {z_shape[-1]}))"
        )
    return ops.CrossEntropy.apply(logits, y.astype(np.int64, copy=False), reduction=reduction)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b.  x: (..., in) -> (..., out); weight: (out, in); bias: (out,)."""
    in_features = weight.shape[1]
    if x.shape[-1:] != (in_features,):
        raise ValueError(
            f"linear: input has shape {x.shape}, but its last dim must be in_features="
            f"{in_features} (weight shape {weight.shape})"
        )
    return ops.Linear.apply(x, weight, bias)


def embedding(ids: Any, weight: Tensor, sparse: bool = True, padding_idx: int | None = None) -> Tensor:
    """weight[ids]: (B, T) int -> (B, T, d). The weight's gradient is a RowSparse of the rows read."""
    ids = _check_ids(ids, weight.shape[0])
    return ops.Embedding.apply(weight, ids, sparse=sparse, padding_idx=padding_idx)


def _check_ids(ids: Any, num_embeddings: int) -> np.ndarray:
    array = np.asarray(getattr(ids, "data", ids))
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: ids must be integer token ids, got dtype {array.dtype}; "
            "convert with ids.astype(np.int64)"
        )
    if array.size:
        low, high = array.min(), array.max()
        if low < 0:
            raise IndexError(f"embedding: token id {low} is negative (ids must be in "
                             f"[0, {num_embeddings}))")
        if high >= num_embeddings:
            raise IndexError(f"embedding: token id {high} is out of range for num_embeddings="
                             f"{num_embeddings} (ids must be in [0, {num_embeddings}))")
    return array.astype(np.int64, copy=False)
