"""A Llama-style model in PyTorch, written from the parameter names and the math alone (the test
oracle for minigrad.models.Llama, and the peer in benchmarks/llama.py).

Both rotary conventions are written out the way their sources write them: "halves" with
transformers' `rotate_half`, "pairs" with complex multiplication as Meta's original Llama code
does. Import it only where torch is installed.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def rotary_halves(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """x * cos + rotate_half(x) * sin, entry i paired with entry i + d/2 (transformers' Llama)."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    freqs = positions[..., None].to(torch.float64) * inv_freq
    angles = torch.cat((freqs, freqs), dim=-1)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def rotary_pairs(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Entries (2i, 2i+1) read as one complex number and multiplied by e^{i angle} (Meta's code)."""
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions[..., None].to(torch.float64) * inv_freq
    turn = torch.polar(torch.ones_like(angles), angles)
    as_complex = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(as_complex * turn).flatten(-2).to(x.dtype)


ROTARY = {"halves": rotary_halves, "pairs": rotary_pairs}


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, d: int, n_heads: int, head_dim: int, theta: float, style: str):
        super().__init__()
        inner = n_heads * head_dim
        self.q_proj = nn.Linear(d, inner, bias=False)
        self.k_proj = nn.Linear(d, inner, bias=False)
        self.v_proj = nn.Linear(d, inner, bias=False)
        self.o_proj = nn.Linear(inner, d, bias=False)
        self.n_heads, self.head_dim, self.theta, self.rotate = n_heads, head_dim, theta, ROTARY[style]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = (p(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        positions = torch.arange(T)
        q, k = self.rotate(q, positions, self.theta), self.rotate(k, positions, self.theta)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.gate_proj = nn.Linear(d, d_ff, bias=False)
        self.up_proj = nn.Linear(d, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c.hidden_size, c.num_attention_heads, c.head_dim, c.rope_theta,
                                   c.rope_style)
        self.mlp = MLP(c.hidden_size, c.intermediate_size)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class TorchLlama(nn.Module):
    """The network minigrad.models.Llama computes, for a minigrad LlamaConfig `config`."""

    def __init__(self, config):
        super().__init__()
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x)
        return self.lm_head(self.model.norm(x))


def torch_twin(model, dtype: torch.dtype | None = None) -> TorchLlama:
    """The same network as a minigrad Llama `model`, with its weights copied in by name."""
    return twin_of_state(model.config, model.state_dict(), dtype)


def twin_of_state(config, state: dict, dtype: torch.dtype | None = None) -> TorchLlama:
    """A TorchLlama for `config` (a LlamaConfig, or a dict of its fields) holding the arrays of a
    Llama state dict, in their dtype unless `dtype` is given."""
    twin = TorchLlama(SimpleNamespace(**config) if isinstance(config, dict) else config)
    dtype = dtype or (torch.float64 if next(iter(state.values())).dtype == np.float64 else torch.float32)
    twin.to(dtype)
    twin.load_state_dict({k: torch.tensor(v, dtype=dtype) for k, v in state.items()})
    return twin
