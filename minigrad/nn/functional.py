"""Functional forms of the ops, as in `torch.nn.functional` (imported as `F`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_array, ops


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
    d loss / d logits is (p - y) / N for reduction="mean".
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"cross_entropy: reduction must be 'mean' or 'sum', got {reduction!r}")
    y = np.asarray(as_array(targets))
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


def linear(x: Any, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b.  x: (..., in) -> (..., out); weight: (out, in); bias: (out,) or None."""
    if len(weight.shape) != 2:
        raise ValueError(f"linear: weight has shape {weight.shape}, expected a 2-D (out_features, "
                         f"in_features) matrix")
    out_features, in_features = weight.shape
    if len(x.shape) == 0 or x.shape[-1] != in_features:
        raise ValueError(
            f"linear: input has shape {x.shape}, but its last dim must be in_features="
            f"{in_features} (weight shape {weight.shape})"
        )
    if bias is not None and bias.shape != (out_features,):
        raise ValueError(f"linear: bias has shape {bias.shape}, expected ({out_features},) "
                         f"(one entry per output feature; weight shape {weight.shape})")
    return ops.Linear.apply(x, weight, bias)


MAX_ID_RANK = 2


def embedding(ids: Any, weight: Tensor, padding_idx: int | None = None, *, sparse: bool = True) -> Tensor:
    """weight[ids]: a token id -> (d,), (T,) -> (T, d), (B, T) -> (B, T, d).

    weight: (num_embeddings, d). The weight's gradient is a RowSparse of the rows read
    (`sparse=False`: the dense (V, d) array, for comparison). Rows equal to `padding_idx` get
    no gradient. Unlike PyTorch, ids of rank above 2 are refused (see `check_ids`), and
    sparse=True is the default, because row sparsity is what this library is about.
    """
    if len(weight.shape) != 2:
        raise ValueError(f"embedding: weight has shape {weight.shape}, expected a 2-D "
                         f"(num_embeddings, embedding_dim) table")
    num_embeddings = weight.shape[0]
    ids = check_ids(ids, num_embeddings)
    padding_idx = check_padding_idx(padding_idx, num_embeddings)
    return ops.Embedding.apply(weight, ids, sparse=sparse, padding_idx=padding_idx)


def check_ids(ids: Any, num_embeddings: int) -> np.ndarray:
    """Token ids as an int64 array, or an error naming the offending id and where it is.

    Ranks 0, 1 and 2 (one id, a sequence (T,), a batch (B, T)) are accepted. A higher rank is
    refused: the usual cause is one-hot rows or already-embedded vectors passed as ids, which
    an integer lookup would silently turn into a (..., V, d) or (..., d, d) tensor.
    """
    if isinstance(ids, (list, tuple)) and np.size(ids) == 0:
        ids = np.zeros(np.shape(ids), dtype=np.int64)  # np.asarray([]) would be float64
    array = ids.data if isinstance(ids, Tensor) else np.asarray(ids)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: ids must be integer token ids, got dtype {array.dtype}; "
            "convert with ids.astype(np.int64)"
        )
    if array.ndim > MAX_ID_RANK:
        raise ValueError(
            f"embedding: ids has shape {array.shape} (rank {array.ndim}), expected rank 0, 1 or "
            f"{MAX_ID_RANK}: one id, (T,) or (B, T); one-hot rows? pass their argmax(-1) instead"
        )
    if array.size:
        bad = (array < 0) | (array >= num_embeddings)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            value = int(array[where])
            kind = "is negative" if value < 0 else f"is out of range for num_embeddings={num_embeddings}"
            raise IndexError(
                f"embedding: token id {value} at ids{list(where)} {kind} "
                f"(ids must be in [0, {num_embeddings}))"
            )
    return array.astype(np.int64, copy=False)


def check_padding_idx(padding_idx: Any, num_embeddings: int) -> int | None:
    """padding_idx as a row in [0, V) (negative counts from the end, as in PyTorch), or None."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, (bool, np.bool_)) or not isinstance(padding_idx, (int, np.integer)):
        raise TypeError(f"embedding: padding_idx must be an int row id or None, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"embedding: padding_idx={padding_idx} is out of range for "
                         f"num_embeddings={num_embeddings} (expected -{num_embeddings} <= "
                         f"padding_idx < {num_embeddings})")
    return int(padding_idx) % num_embeddings
