"""The two maps of a vocabulary, and the affine layer between."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_array, as_generator, positive_int
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

def _shape_tuple(normalized_shape: int | tuple[int, ...]) -> tuple[int, ...]:
    """A norm's normalized_shape as a tuple: 8 -> (8,), as torch takes either."""
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise each position's last `normalized_shape` axes; weight (ones) and bias (zeros) learn.

    x (..., d) -> (..., d), as torch.nn.LayerNorm(d, eps=1e-5).
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, dtype: Any = np.float32):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
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


# ---- the Llama-style model's layers ------------------------------------------------------------

class RMSNorm(Module):
    """Divide each position by the root mean square of its last `normalized_shape` axes, then
    scale by a learned weight (ones): x (..., d) -> (..., d), as torch.nn.RMSNorm. No bias and no
    centring, unlike LayerNorm. eps=None: the machine epsilon of the input's dtype (PyTorch's)."""

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float | None = None,
                 elementwise_affine: bool = True, dtype: Any = np.float32):
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        for n in self.normalized_shape:
            positive_int("RMSNorm", "normalized_shape", n)
        if eps is not None and not eps > 0:
            raise ValueError(f"RMSNorm: eps must be positive or None, got {eps!r}")
        self.eps = eps
        self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class SiLU(Module):
    """x * sigmoid(x), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class SwiGLU(Module):
    """Llama's feed-forward: down_proj(silu(gate_proj(x)) * up_proj(x)), x (..., d) -> (..., d).

    gate_proj, up_proj: (d_ff, d); down_proj: (d, d_ff); no biases by default. The names are
    Llama's (transformers' LlamaMLP); the SwiGLU paper and CS336 call them W1 (gate), W3 (up)
    and W2 (down). The gate's SiLU decides, per hidden unit, how much of the up projection
    passes.
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False, dtype: Any = np.float32,
                 rng: Any = None):
        super().__init__()
        g = as_generator(rng, "SwiGLU")
        self.gate_proj = Linear(d_model, d_ff, bias=bias, dtype=dtype, rng=g)
        self.up_proj = Linear(d_model, d_ff, bias=bias, dtype=dtype, rng=g)
        self.down_proj = Linear(d_ff, d_model, bias=bias, dtype=dtype, rng=g)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class RotaryEmbedding(Module):
    """Rotary position embedding of x (..., T, dim): F.rotary_embedding with a fixed dim, theta
    and style ("halves": Llama in transformers; "pairs": the RoPE paper, CS336). No parameters."""

    def __init__(self, dim: int, theta: float = 10000.0, style: str = "halves"):
        super().__init__()
        self.dim = positive_int("RotaryEmbedding", "dim", dim)
        if dim % 2:
            raise ValueError(f"RotaryEmbedding: dim must be even (its entries turn in pairs), got {dim}")
        if style not in ("halves", "pairs"):
            raise ValueError(f"RotaryEmbedding: style must be 'halves' or 'pairs', got {style!r}")
        if not theta > 0:
            raise ValueError(f"RotaryEmbedding: theta must be positive, got {theta!r}")
        self.theta, self.style = float(theta), style
        self._angles: dict[tuple[int, Any], tuple[np.ndarray, np.ndarray]] = {}  # (T, dtype) -> cos, sin

    def forward(self, x: Tensor, positions: Any = None) -> Tensor:
        """x (..., T, dim), positions (..., T) int (default 0..T-1) -> (..., T, dim)."""
        if len(x.shape) < 2 or x.shape[-1] != self.dim:
            raise ValueError(f"RotaryEmbedding: x has shape {x.shape}, expected (..., T, dim={self.dim})")
        if positions is not None:
            return F.rotary_embedding(x, positions, self.theta, self.style)
        key = (x.shape[-2], x.dtype)  # positions 0..T-1: the angles are kept, computed once per T
        if key not in self._angles:
            self._angles[key] = F.rotary_angles(np.arange(key[0]), self.dim, self.theta, x.dtype)
        return F.rotate_pairs(x, *self._angles[key], self.style)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, theta={self.theta}, style={self.style!r}"


class CausalSelfAttention(Module):
    """Multi-head causal self-attention with Llama's names: x (..., T, d) -> (..., T, d).

    q_proj, k_proj, v_proj: (n_heads head_dim, d); o_proj: (d, n_heads head_dim); head_dim is
    d / n_heads unless given. Each head attends over positions t' <= t, scaled by
    1/sqrt(head_dim); with `rotary` (a RotaryEmbedding of head_dim) its q and k are turned by
    position first, as in Llama. Any number of leading axes (batch...); positions (T,) or
    (..., T) say where each position is (default 0..T-1).
    """

    def __init__(self, d_model: int, n_heads: int, head_dim: int | None = None, bias: bool = False,
                 rotary: RotaryEmbedding | None = None, dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        positive_int("CausalSelfAttention", "d_model", d_model)
        positive_int("CausalSelfAttention", "n_heads", n_heads)
        if head_dim is None and d_model % n_heads:
            raise ValueError(f"CausalSelfAttention: d_model={d_model} is not divisible by "
                             f"n_heads={n_heads} (pass head_dim to choose the heads' size)")
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads if head_dim is None else positive_int(
            "CausalSelfAttention", "head_dim", head_dim)
        if rotary is not None and rotary.dim != self.head_dim:
            raise ValueError(f"CausalSelfAttention: rotary turns {rotary.dim} dimensions, but each "
                             f"head has head_dim={self.head_dim}")
        g = as_generator(rng, "CausalSelfAttention")
        inner = n_heads * self.head_dim
        self.q_proj = Linear(d_model, inner, bias=bias, dtype=dtype, rng=g)
        self.k_proj = Linear(d_model, inner, bias=bias, dtype=dtype, rng=g)
        self.v_proj = Linear(d_model, inner, bias=bias, dtype=dtype, rng=g)
        self.o_proj = Linear(inner, d_model, bias=bias, dtype=dtype, rng=g)
        self.rotary = rotary

    def forward(self, x: Tensor, positions: Any = None) -> Tensor:
        if len(x.shape) < 2:
            raise ValueError(f"CausalSelfAttention: x has shape {x.shape}, expected (..., T, d)")
        *lead, T, _ = x.shape
        h, hd = self.n_heads, self.head_dim

        def heads(t: Tensor) -> Tensor:  # (..., T, h hd) -> (..., h, T, hd)
            return t.reshape(*lead, T, h, hd).transpose(-3, -2)

        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        if self.rotary is not None:
            if positions is not None and np.ndim(as_array(positions)) > 1:
                positions = np.expand_dims(as_array(positions), -2)  # (..., 1, T): the same for every head
            q, k = self.rotary(q, positions), self.rotary(k, positions)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(-3, -2).reshape(*lead, T, h * hd))  # heads side by side


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
