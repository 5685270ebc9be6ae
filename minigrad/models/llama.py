"""A Llama-style model: the block that small modern language models use, tied by default.

    ids (B, T) -> embed_tokens[ids]                                        x (B, T, d)
    num_hidden_layers times (pre-RMSNorm):
        x = x + self_attn(input_layernorm(x))         q, k, v projections, rotary on q and k,
                                                      causal attention, o_proj; no biases
        x = x + mlp(post_attention_layernorm(x))      SwiGLU: down(silu(gate(x)) * up(x))
    norm(x) -> lm_head (V, d), = embed_tokens.weight when tied              logits (B, T, V)

Next to GPT-2's block (TinyGPT): RMSNorm instead of LayerNorm, positions enter by rotating q and k
(no position table), a gated feed-forward, and no biases anywhere. The parameter names are those
of transformers' LlamaForCausalLM (`model.layers.0.self_attn.q_proj.weight`, ...), and the rotary
convention is its own ("halves"), so a checkpoint saved here loads into LlamaForCausalLM with the
matching config (`LlamaConfig.to_transformers()`), and back, without permuting any weight
(docs/llama.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_array, as_generator, positive_int
from minigrad.nn import functional as F
from minigrad.nn.layers import CausalSelfAttention, Embedding, Linear, RMSNorm, RotaryEmbedding, SwiGLU
from minigrad.nn.module import Module, ModuleList

INIT_STD = 0.02  # transformers' initializer_range: every matrix and the table start N(0, 0.02^2)


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama-style model, with transformers' LlamaConfig field names.

    intermediate_size: SwiGLU's hidden width; None takes about 8/3 of hidden_size (the width
        that gives a gated feed-forward the parameters of a 4x plain one), rounded up to a
        multiple of 64.
    head_dim: None for hidden_size / num_attention_heads.
    rope_style: "halves" (transformers' Llama: weights carry over unpermuted) or "pairs" (the
        RoPE paper, Meta's original code, CS336).
    tie_word_embeddings: lm_head.weight is model.embed_tokens.weight (as Llama 3.2 1B and 3B).
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    max_position_embeddings: int
    intermediate_size: int | None = None
    head_dim: int | None = None
    rope_theta: float = 10000.0
    rope_style: str = "halves"
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "max_position_embeddings"):
            positive_int("LlamaConfig", name, getattr(self, name))
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise ValueError(f"LlamaConfig: hidden_size={self.hidden_size} is not divisible by "
                             f"num_attention_heads={self.num_attention_heads} (or pass head_dim)")
        head_dim = self.hidden_size // self.num_attention_heads if self.head_dim is None else self.head_dim
        object.__setattr__(self, "head_dim", head_dim)
        if head_dim % 2:
            raise ValueError(f"LlamaConfig: head_dim={head_dim} must be even (rotary turns pairs)")
        if self.intermediate_size is None:
            object.__setattr__(self, "intermediate_size", 64 * math.ceil(8 * self.hidden_size / 3 / 64))
        positive_int("LlamaConfig", "intermediate_size", self.intermediate_size)
        if self.rope_style not in ("halves", "pairs"):
            raise ValueError(f"LlamaConfig: rope_style must be 'halves' or 'pairs', got {self.rope_style!r}")
        for name in ("rope_theta", "rms_norm_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"LlamaConfig: {name} must be positive, got {getattr(self, name)!r}")

    def to_transformers(self) -> dict[str, Any]:
        """Keyword arguments for transformers.LlamaConfig describing the same network (only the
        "halves" style: transformers' Llama rotates halves). rope_theta is given both ways
        (transformers 4 reads `rope_theta`, 5 reads `rope_parameters`)."""
        if self.rope_style != "halves":
            raise ValueError("LlamaConfig.to_transformers: transformers' Llama rotates halves; this "
                             "model rotates pairs (rope_style='pairs'): convert it first with "
                             "model.with_rope_style('halves'), which permutes q_proj's and k_proj's rows")
        fields = asdict(self)
        del fields["rope_style"]
        return {**fields, "num_key_value_heads": self.num_attention_heads, "hidden_act": "silu",
                "attention_bias": False, "mlp_bias": False,
                "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta}}


class LlamaBlock(Module):
    """One decoder layer: x + self_attn(input_layernorm(x)), then + mlp(post_attention_layernorm(x)).

    x (..., T, hidden_size) -> the same shape; positions (T,) or (..., T), default 0..T-1. Only
    the config's layer fields matter here (hidden_size, heads, head_dim, intermediate_size,
    rope_theta, rope_style, rms_norm_eps).
    """

    def __init__(self, config: LlamaConfig, dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        c, g = config, as_generator(rng, "LlamaBlock")
        assert c.head_dim is not None and c.intermediate_size is not None  # set by __post_init__
        self.self_attn = CausalSelfAttention(c.hidden_size, c.num_attention_heads, head_dim=c.head_dim,
                                             rotary=RotaryEmbedding(c.head_dim, c.rope_theta, c.rope_style),
                                             dtype=dtype, rng=g)
        self.mlp = SwiGLU(c.hidden_size, c.intermediate_size, dtype=dtype, rng=g)
        self.input_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps, dtype=dtype)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps, dtype=dtype)

    def forward(self, x: Tensor, positions: Any = None) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x), positions)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(Module):
    """The decoder without its head: embed_tokens, layers, norm (transformers' `model.` prefix)."""

    def __init__(self, config: LlamaConfig, dtype: Any = np.float32, rng: Any = None):
        super().__init__()
        g = as_generator(rng, "LlamaModel")
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size, dtype=dtype, rng=g)
        self.layers = ModuleList(LlamaBlock(config, dtype, g) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps, dtype=dtype)

    def forward(self, ids: np.ndarray) -> Tensor:
        """ids (B, T) -> the normalised last hidden states (B, T, d)."""
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class Llama(Module):
    """A Llama-style language model: ids (B, T) -> logits (B, T, vocab_size).

    Llama(config) or Llama(vocab_size=..., hidden_size=..., ...) with LlamaConfig's fields.
    The token table's gradient from the lookup is row-sparse (as in TinyGPT); tied, the lookup's
    rows and the head's dense (V, d) gradient meet in one table. Initialisation as transformers':
    N(0, 0.02^2) for the table and every projection, ones for the RMSNorm weights.
    """

    def __init__(self, config: LlamaConfig | None = None, *, dtype: Any = np.float32, rng: Any = 0,
                 **fields: Any):
        super().__init__()
        if config is None:
            config = LlamaConfig(**fields)
        elif fields:
            raise TypeError(f"Llama: pass a LlamaConfig or its fields, not both (got {sorted(fields)})")
        g = as_generator(rng, "Llama")
        self.config = config
        self.model = LlamaModel(config, dtype, g)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False, dtype=dtype, rng=g)
        for p in self.parameters():
            if p.ndim == 2:  # the matrices and the table; the RMSNorm weights stay ones
                p.data[...] = g.normal(0.0, INIT_STD, p.shape)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter, two roles

    def check_ids(self, ids: Any) -> np.ndarray:
        """ids as an int (B, T) array with 1 <= T <= max_position_embeddings, or an error."""
        array = np.asarray(as_array(ids))
        limit = self.config.max_position_embeddings
        if array.ndim != 2 or array.shape[1] == 0:
            raise ValueError(f"Llama: ids has shape {array.shape}, expected (B, T) with 1 <= T <= "
                             f"max_position_embeddings={limit} (one sequence: ids[None])")
        if array.shape[1] > limit:
            raise ValueError(f"Llama: ids has shape {array.shape}: sequences of T={array.shape[1]} "
                             f"tokens, longer than max_position_embeddings={limit}; keep the last "
                             f"{limit} tokens")
        return F.check_ids(array, self.config.vocab_size)

    def forward(self, ids: Any) -> Tensor:
        """ids (B, T) int -> logits (B, T, vocab_size); logits[:, t] predicts ids[:, t+1]."""
        return self.lm_head(self.model(self.check_ids(ids)))

    def with_rope_style(self, style: str) -> Llama:
        """The same function with the other rotary convention: a new model whose q_proj and
        k_proj rows are reordered within each head (pairs (2i, 2i+1) <-> halves (i, i + hd/2)).

        Reordering q's and k's entries alike leaves every score q . k unchanged, and turning
        the reordered pairs is turning the original ones, reordered (docs/llama.md). This is
        what converting Meta's original checkpoints to transformers does.
        """
        if style not in ("halves", "pairs"):
            raise ValueError(f"Llama.with_rope_style: style must be 'halves' or 'pairs', got {style!r}")
        c = self.config
        assert c.head_dim is not None  # set by LlamaConfig.__post_init__
        other = Llama(replace(c, rope_style=style), dtype=self.lm_head.weight.dtype)
        state = {name: array.copy() for name, array in self.state_dict().items()}
        if style != c.rope_style:
            pairs_in_halves_order = np.r_[np.arange(0, c.head_dim, 2), np.arange(1, c.head_dim, 2)]
            order = pairs_in_halves_order if style == "halves" else np.argsort(pairs_in_halves_order)
            rows = (np.arange(c.num_attention_heads)[:, None] * c.head_dim + order).ravel()
            for name in state:
                if name.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")):
                    state[name] = state[name][rows]
        if c.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]  # the tie, as one array
        other.load_state_dict(state)
        return other

    def loss(self, ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of every position's prediction; targets (B, T). The head and the
        loss as one op (F.linear_cross_entropy): the same numbers as F.cross_entropy of the
        logits as (B*T, V) rows, without keeping the logits."""
        return F.linear_cross_entropy(self.model(self.check_ids(ids)), self.lm_head.weight, targets)
