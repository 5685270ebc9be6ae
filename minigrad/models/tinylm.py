"""A tiny next-token model: the smallest network in which both maps of a vocabulary learn.

    ids (N, C) -> E[ids] (N, C, d) -> concat (N, C*d) -> tanh(Linear) (N, H) -> Linear (N, d) = h
    logits = h W^T (N, V), with W = E when tied (one table read and said) or its own table

With context C = 1 this is the training step of the performance benchmark.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_array, as_generator, positive_int
from minigrad.nn import functional as F
from minigrad.nn.layers import Embedding, Linear
from minigrad.nn.module import Module, Parameter


class TinyLM(Module):
    """A word-level language model with an optional tie between embedding and unembedding."""

    def __init__(self, vocab_size: int, embedding_dim: int = 32, hidden: int = 64, context: int = 1,
                 tied: bool = True, sparse: bool = True, dtype: Any = np.float32, rng: Any = 0):
        super().__init__()
        g = as_generator(rng, "TinyLM")
        self.context, self.tied = context, tied
        self.emb = Embedding(vocab_size, embedding_dim, sparse=sparse, dtype=dtype, rng=g)
        # small rows: a N(0, 1) table would make the first logits huge once it is also the head
        self.emb.weight.data *= np.asarray(1.0 / np.sqrt(embedding_dim), dtype=dtype)
        self.up = Linear(context * embedding_dim, hidden, dtype=dtype, rng=g)
        self.down = Linear(hidden, embedding_dim, dtype=dtype, rng=g)
        self.head = Linear(embedding_dim, vocab_size, bias=False, dtype=dtype, rng=g)
        if tied:
            self.tie_weights()

    def tie_weights(self) -> TinyLM:
        """Make the output map's weight the token table's Parameter: one Parameter, two roles (what
        tied=True does when the model is built). Returns the model."""
        self.head.weight = self.emb.weight
        self.tied = True
        return self

    @property
    def input_table(self) -> Parameter:
        """The (V, d) table the lookup reads: emb.weight."""
        return self.emb.weight

    @property
    def output_table(self) -> Parameter:
        """The (V, d) output map that scores every token: head.weight (the same Parameter when tied)."""
        return self.head.weight

    def forward(self, ids: Any) -> Tensor:
        """ids (N, C) int -> logits (N, V)."""
        ids = np.asarray(as_array(ids))
        if ids.ndim == 1 and self.context == 1:
            ids = ids[:, None]
        if ids.ndim != 2 or ids.shape[1] != self.context:
            raise ValueError(
                f"TinyLM: ids has shape {ids.shape}, expected (N, {self.context}) "
                f"(N positions, context={self.context} previous tokens each)"
            )
        x = self.emb(ids).reshape(ids.shape[0], -1)
        h = self.down(self.up(x).tanh())
        return self.head(h)

    def loss(self, ids: Any, targets: Any) -> Tensor:
        return F.cross_entropy(self(ids), targets)


def next_token_windows(tokens: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (previous `context` tokens, next token) pair: (n - C, C) ids and (n - C,) targets."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.ndim != 1 or tokens.size <= context:
        raise ValueError(
            f"next_token_windows: need a 1-D token array longer than context={context}, "
            f"got shape {tokens.shape}"
        )
    windows = np.lib.stride_tricks.sliding_window_view(tokens[:-1], context)
    return np.ascontiguousarray(windows), tokens[context:]


def random_batch(tokens: Any, batch_size: int, context_length: int, rng: Any = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """`batch_size` windows of `context_length` tokens, each starting at a random place in the 1-D
    `tokens`, and the same windows shifted by one (the next token at every position): (B, C) ids
    and (B, C) targets, as Stanford CS336's `get_batch`. rng: a seed or numpy Generator."""
    tokens = np.asarray(tokens)
    batch_size = positive_int("random_batch", "batch_size", batch_size)
    context_length = positive_int("random_batch", "context_length", context_length)
    if tokens.ndim != 1 or tokens.dtype.kind not in "iu" or tokens.size <= context_length:
        raise ValueError(f"random_batch: need a 1-D integer token array longer than context_length="
                         f"{context_length}, got dtype {tokens.dtype} and shape {tokens.shape}")
    starts = as_generator(rng, "random_batch").integers(0, tokens.size - context_length, batch_size)
    offsets = starts[:, None] + np.arange(context_length + 1)
    windows = tokens[offsets].astype(np.int64)
    return windows[:, :-1], windows[:, 1:]
