"""The two maps of a vocabulary, and the affine layer between."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.nn import functional as F
from minigrad.nn.module import Module, Parameter
from minigrad.tensor import Tensor


def _rng(rng: Any) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


class Linear(Module):
    """y = x W^T + b. weight: (out_features, in_features), init U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / np.sqrt(in_features)
        g = _rng(rng)
        self.weight = Parameter(g.uniform(-bound, bound, (out_features, in_features)).astype(dtype))
        self.bias = Parameter(g.uniform(-bound, bound, out_features).astype(dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        has_bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={has_bias}"


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table read by row; init N(0, 1) as in PyTorch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, sparse: bool = True,
                 padding_idx: int | None = None, dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx={padding_idx} is out of range for "
                             f"num_embeddings={num_embeddings}")
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.sparse, self.padding_idx = sparse, padding_idx
        table = _rng(rng).standard_normal((num_embeddings, embedding_dim)).astype(dtype)
        if padding_idx is not None:
            table[padding_idx] = 0
        self.weight = Parameter(table)

    def forward(self, ids: Any) -> Tensor:
        return F.embedding(ids, self.weight, sparse=self.sparse, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, sparse={self.sparse}"
