"""The two maps of a vocabulary, and the affine layer between."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_generator, positive_int
from minigrad.nn import functional as F
from minigrad.nn.module import Module, Parameter


class Linear(Module):
    """y = x W^T + b. weight: (out_features, in_features), init U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        self.in_features = positive_int("Linear", "in_features", in_features)
        self.out_features = positive_int("Linear", "out_features", out_features)
        bound = 1.0 / np.sqrt(in_features)
        g = as_generator(rng, "Linear")
        self.weight = Parameter(g.uniform(-bound, bound, (out_features, in_features)).astype(dtype))
        self.bias = Parameter(g.uniform(-bound, bound, out_features).astype(dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        has_bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={has_bias}"


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table read by row; init N(0, 1) as in PyTorch.

    ids (B, T) int -> (B, T, embedding_dim). With sparse=True (the default here; PyTorch's is
    False) the weight's gradient is a RowSparse naming the rows read; padding_idx's row is
    initialised to zero and never gets a gradient from the lookup.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, sparse: bool = True,
                 padding_idx: int | None = None, dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        self.num_embeddings = positive_int("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = positive_int("Embedding", "embedding_dim", embedding_dim)
        self.sparse = sparse
        self.padding_idx = F.check_padding_idx(padding_idx, num_embeddings)
        table = as_generator(rng, "Embedding").standard_normal((num_embeddings, embedding_dim)).astype(dtype)
        if padding_idx is not None:
            table[padding_idx] = 0
        self.weight = Parameter(table)

    def forward(self, ids: Any) -> Tensor:
        return F.embedding(ids, self.weight, self.padding_idx, sparse=self.sparse)

    def extra_repr(self) -> str:
        padding = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}, sparse={self.sparse}"
