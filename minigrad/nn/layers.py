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


# ---- transformer layers (TinyGPT) ----------------------------------------------------------------

class LayerNorm(Module):
    """Normalise each position's last `normalized_shape` axes; weight (ones) and bias (zeros) learn.

    x (..., d) -> (..., d), as torch.nn.LayerNorm(d, eps=1e-5).
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, dtype: Any = np.float32):
        super().__init__()
        single = isinstance(normalized_shape, (int, np.integer))
        self.normalized_shape = (int(normalized_shape),) if single else tuple(normalized_shape)
        for n in self.normalized_shape:
            positive_int("LayerNorm", "normalized_shape", n)
        self.eps = eps
        affine = elementwise_affine
        self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype)) if affine else None
        self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dtype)) if affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF (approximate="tanh": the tanh fit)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Dropout(Module):
    """In training, zero each entry with probability p and scale the rest by 1/(1 - p); in eval()
    (and with p=0, the default here) the input passes unchanged. rng seeds the masks."""

    def __init__(self, p: float = 0.0, rng: Any = None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p = float(p)
        self.rng = as_generator(rng, "Dropout")

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, rng=self.rng)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class ReLU(Module):
    """max(x, 0), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)
