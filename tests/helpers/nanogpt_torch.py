"""A nanoGPT-style TinyGPT in PyTorch, written from the parameter names alone (the test oracle).

Shared by tests/nn/test_tinygpt.py and benchmarks/tinygpt.py; import it only where torch is installed.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class SelfAttention(nn.Module):
    def __init__(self, d: int, n_heads: int, explicit: bool):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.n_heads, self.explicit = n_heads, explicit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
                   for t in self.c_attn(x).split(C, dim=2))
        if self.explicit:  # the softmax written out, as nanoGPT does without flash attention
            scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_heads)
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            y = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, d: int, n_heads: int, explicit: bool):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, n_heads, explicit)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = FeedForward(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    def __init__(self, vocab_size: int, context: int, d_model: int, n_heads: int, n_layers: int,
                 tied: bool = True, explicit: bool = False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, d_model),
            wpe=nn.Embedding(context, d_model),
            h=nn.ModuleList([Block(d_model, n_heads, explicit) for _ in range(n_layers)]),
            ln_f=nn.LayerNorm(d_model),
        ))
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tied:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1])
        x = self.transformer.wte(ids) + self.transformer.wpe(positions)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def torch_twin(model, explicit: bool = False, dtype: torch.dtype | None = None) -> TorchGPT:
    """The same network as a minigrad TinyGPT `model`, with its weights copied in by name."""
    sizes = (model.vocab_size, model.context, model.d_model, model.n_heads, model.n_layers)
    return twin_of_state(sizes, model.state_dict(), model.tied, explicit, dtype)


def twin_of_state(sizes: tuple, state: dict, tied: bool, explicit: bool = False,
                  dtype: torch.dtype | None = None) -> TorchGPT:
    """A TorchGPT of these sizes (vocab_size, context, d_model, n_heads, n_layers) holding the
    arrays of a TinyGPT state dict, in their dtype unless `dtype` is given."""
    twin = TorchGPT(*sizes, tied=tied, explicit=explicit)
    dtype = dtype or (torch.float64 if next(iter(state.values())).dtype == np.float64 else torch.float32)
    twin.to(dtype)
    twin.load_state_dict({k: torch.tensor(v, dtype=dtype) for k, v in state.items()})
    return twin
