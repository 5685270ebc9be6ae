"""TinyGPT: a small decoder-only transformer (GPT-2's block), with nanoGPT's parameter names.

    ids (B, T) -> wte[ids] + wpe[0..T-1]                       x (B, T, d)
    n_layers times:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))     (pre-LayerNorm)
        attn: c_attn (3d, d) -> q, k, v, each (B, h, T, d/h) -> softmax(q k^T / sqrt(d/h) + causal) v
              -> heads side by side (B, T, d) -> c_proj
        mlp:  c_fc (4d, d) -> gelu -> c_proj (d, 4d)
    ln_f(x) -> lm_head (V, d), no bias, = wte.weight when tied  ->  logits (B, T, V)

Every position predicts the token after it, so targets are ids shifted by one (B, T).
The names (`transformer.h.0.attn.c_attn.weight`, ...) are nanoGPT's, so a checkpoint saved here
loads into a PyTorch model written with those names, and back (docs/tinygpt.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_array, as_generator, positive_int
from minigrad.nn import functional as F
from minigrad.nn.layers import Dropout, Embedding, LayerNorm, Linear
from minigrad.nn.module import Module, ModuleDict, ModuleList, Parameter

INIT_STD = 0.02  # GPT-2's: every weight matrix and table starts N(0, 0.02^2), biases at zero


def _normal_(p: Parameter, std: float, g: np.random.Generator) -> None:
    p.data[...] = g.normal(0.0, std, p.shape)


def _linear(n_in: int, n_out: int, std: float, g: np.random.Generator, dtype: Any,
            bias: bool = True) -> Linear:
    layer = Linear(n_in, n_out, bias=bias, dtype=dtype, rng=g)
    _normal_(layer.weight, std, g)
    if layer.bias is not None:
        layer.bias.data[...] = 0
    return layer


class CausalSelfAttention(Module):
    """n_heads heads of causal softmax attention over (B, T, d), from one fused q/k/v projection."""

    def __init__(self, d_model: int, n_heads: int, proj_std: float, g: np.random.Generator, dtype: Any,
                 dropout: float):
        super().__init__()
        self.n_heads = n_heads
        self.c_attn = _linear(d_model, 3 * d_model, INIT_STD, g, dtype)
        self.c_proj = _linear(d_model, d_model, proj_std, g, dtype)
        self.resid_dropout = Dropout(dropout, rng=g)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        heads = lambda t: t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # noqa: E731
        q, k, v = (heads(t) for t in self.c_attn(x).split(C, dim=2))  # each (B, h, T, C/h)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # scale 1/sqrt(C/h)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(Module):
    """d -> 4d -> gelu -> d, at every position."""

    def __init__(self, d_model: int, proj_std: float, g: np.random.Generator, dtype: Any, dropout: float):
        super().__init__()
        self.c_fc = _linear(d_model, 4 * d_model, INIT_STD, g, dtype)
        self.c_proj = _linear(4 * d_model, d_model, proj_std, g, dtype)
        self.dropout = Dropout(dropout, rng=g)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(Module):
    """GPT-2's pre-LayerNorm block: each sub-layer reads a normalised copy and adds to x."""

    def __init__(self, d_model: int, n_heads: int, proj_std: float, g: np.random.Generator, dtype: Any,
                 dropout: float):
        super().__init__()
        self.ln_1 = LayerNorm(d_model, dtype=dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, proj_std, g, dtype, dropout)
        self.ln_2 = LayerNorm(d_model, dtype=dtype)
        self.mlp = MLP(d_model, proj_std, g, dtype, dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyGPT(Module):
    """A decoder-only transformer language model: ids (B, T) -> logits (B, T, vocab_size).

    context: the longest sequence (rows of wpe); d_model must divide into n_heads heads.
    tied: lm_head.weight is transformer.wte.weight (one Parameter read by the lookup and by the
          classifier); untied, the head has its own table. The token table's gradient from
          the lookup is row-sparse (Embedding's default here), as in TinyLM.
    dropout: on the embeddings and on each residual branch, in training only (default 0).
    Initialisation as GPT-2: N(0, 0.02^2) weights and tables, zero biases, and each residual
    projection (c_proj) at 0.02 / sqrt(2 n_layers), so the residual stream does not grow with depth.
    """

    def __init__(self, vocab_size: int, context: int, d_model: int, n_heads: int, n_layers: int,
                 tied: bool = True, dtype: Any = np.float32, rng: Any = 0, *, dropout: float = 0.0):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("context", context), ("d_model", d_model),
                            ("n_heads", n_heads), ("n_layers", n_layers)):
            positive_int("TinyGPT", name, value)
        if d_model % n_heads:
            raise ValueError(f"TinyGPT: d_model={d_model} is not divisible by n_heads={n_heads} "
                             "(each head gets d_model / n_heads dimensions)")
        g = as_generator(rng, "TinyGPT")
        self.vocab_size, self.context, self.d_model = vocab_size, context, d_model
        self.n_heads, self.n_layers, self.tied = n_heads, n_layers, tied
        proj_std = INIT_STD / math.sqrt(2 * n_layers)
        wte = Embedding(vocab_size, d_model, dtype=dtype, rng=g)
        wpe = Embedding(context, d_model, dtype=dtype, rng=g)
        _normal_(wte.weight, INIT_STD, g)
        _normal_(wpe.weight, INIT_STD, g)
        self.transformer = ModuleDict({
            "wte": wte,
            "wpe": wpe,
            "drop": Dropout(dropout, rng=g),
            "h": ModuleList(Block(d_model, n_heads, proj_std, g, dtype, dropout) for _ in range(n_layers)),
            "ln_f": LayerNorm(d_model, dtype=dtype),
        })
        self.lm_head = _linear(d_model, vocab_size, INIT_STD, g, dtype, bias=False)
        if tied:
            self.tie_weights()

    def tie_weights(self) -> TinyGPT:
        """Make lm_head's weight the token table wte's Parameter: one Parameter, two roles (what
        tied=True does when the model is built). Returns the model."""
        self.lm_head.weight = self.transformer.wte.weight
        self.tied = True
        return self

    @property
    def input_table(self) -> Parameter:
        """The (V, d) token table the lookup reads: transformer.wte.weight."""
        return self.transformer.wte.weight

    @property
    def output_table(self) -> Parameter:
        """The (V, d) output map that scores every token: lm_head.weight (the same Parameter when tied)."""
        return self.lm_head.weight

    def check_ids(self, ids: Any) -> np.ndarray:
        """ids as an int (B, T) array with T <= context, or an error naming the shape and limits."""
        array = np.asarray(as_array(ids))
        if array.ndim != 2:
            raise ValueError(f"TinyGPT: ids has shape {array.shape}, expected (B, T): a batch of "
                             f"token sequences, T <= context={self.context} (one sequence: ids[None])")
        if array.shape[1] > self.context:
            raise ValueError(f"TinyGPT: ids has shape {array.shape}: sequences of T={array.shape[1]} "
                             f"tokens, longer than context={self.context} (the rows of "
                             f"transformer.wpe); keep the last {self.context} tokens")
        if array.shape[1] == 0:
            raise ValueError(f"TinyGPT: ids has shape {array.shape}: sequences must have at least 1 token")
        return F.check_ids(array, self.vocab_size)

    def features(self, ids: Any) -> Tensor:
        """ids (B, T) int, T <= context -> (B, T, d_model): the rows lm_head turns into logits,
        after the blocks and ln_f. With F.linear_cross_entropy(features, output_table, targets)
        they give the loss's numbers without keeping the (B, T, V) logits."""
        ids = self.check_ids(ids)
        t = self.transformer
        x = t.drop(t.wte(ids) + t.wpe(np.arange(ids.shape[1])))
        for block in t.h:
            x = block(x)
        return t.ln_f(x)

    def forward(self, ids: Any) -> Tensor:
        """ids (B, T) int, T <= context -> logits (B, T, vocab_size); logits[:, t] predicts ids[:, t+1]."""
        return self.lm_head(self.features(ids))

    def loss(self, ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of every position's prediction; targets (B, T). The (B, T, V)
        logits go in as B*T rows of V classes, as PyTorch's cross_entropy takes them."""
        logits = self(ids)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), np.reshape(as_array(targets), -1))
