"""Skip-gram with negative sampling (word2vec's SGNS): a static embedding, two tables, no tower.

    centres (B,)  -> v = in_embed[centres]                         (B, d)
    contexts (B,), negatives (B, K) -> u = out_embed[[o, n_1..n_K]] (B, 1 + K, d)
    scores = u . v  per row                                        (B, 1 + K)
    loss = mean over B of -[log s(u_o . v) + sum_k log s(-u_k . v)]

Each pair asks one yes/no question ("does o occur near the centre word?") and K noise words
drawn from the unigram distribution get the answer no. Both tables are read by row, so both
gradients are RowSparse: a step touches B rows of in_embed and at most B (1 + K) of out_embed.
Initialisation as word2vec's: in_embed uniform in +-0.5 / d, out_embed zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine import Tensor, as_generator, positive_int
from minigrad.nn import functional as F
from minigrad.nn.layers import Embedding
from minigrad.nn.module import Module, Parameter


class SkipGram(Module):
    """Two (vocab_size, dim) tables: `in_embed` (the word vectors used afterwards), `out_embed`."""

    def __init__(self, vocab_size: int, dim: int, dtype: Any = np.float32, rng: Any = 0):
        super().__init__()
        g = as_generator(rng, "SkipGram")
        self.vocab_size = positive_int("SkipGram", "vocab_size", vocab_size)
        self.dim = positive_int("SkipGram", "dim", dim)
        self.in_embed = Embedding(vocab_size, dim, sparse=True, dtype=dtype, rng=g)
        self.in_embed.weight.data[...] = g.uniform(-0.5 / dim, 0.5 / dim, (vocab_size, dim))
        self.out_embed = Embedding(vocab_size, dim, sparse=True, dtype=dtype, rng=g)
        self.out_embed.weight.data[...] = 0

    @property
    def input_table(self) -> Parameter:
        """The (V, d) table of centre words, the one word2vec keeps: in_embed.weight."""
        return self.in_embed.weight

    @property
    def output_table(self) -> Parameter:
        """The (V, d) table of context words, which scores the pairs: out_embed.weight."""
        return self.out_embed.weight

    def loss(self, centres: Any, contexts: Any, negatives: Any, on_rows: RowsLoss | None = None) -> Tensor:
        """The mean negative-sampling loss of B pairs; centres, contexts (B,), negatives (B, K).
        on_rows: the loss on the rows read (see negative_sampling_loss)."""
        return negative_sampling_loss(self.in_embed.weight, self.out_embed.weight, centres, contexts,
                                      negatives, on_rows)


def loss_on_rows(v: Tensor, u: Tensor) -> Tensor:
    """-[log s(u_o . v) + sum_k log s(-u_k . v)] averaged over B pairs, on the rows read:
    v (B, d) the centres' rows, u (B, 1 + K, d) each pair's context row then its K noise rows."""
    B, d = v.shape
    scores = (u * v.reshape(B, 1, d)).sum(axis=2)  # (B, 1 + K)
    sign = np.ones(scores.shape, dtype=scores.dtype)
    sign[:, 1:] = -1  # the true context should score high, the noise words low
    return -F.logsigmoid(scores * sign).sum() / B


RowsLoss = Callable[[Tensor, Tensor], Tensor]


def negative_sampling_loss(in_table: Tensor, out_table: Tensor, centres: Any, contexts: Any,
                           negatives: Any, on_rows: RowsLoss | None = None) -> Tensor:
    """-[log s(u_o . v) + sum_k log s(-u_k . v)], averaged over B pairs, with v = in_table[centre],
    u_o = out_table[context], u_k = out_table[negative k].

    in_table, out_table: (V, d); centres, contexts: (B,) ids; negatives: (B, K) ids.
    on_rows(v, u): the loss on the rows read (`loss_on_rows`, or lesson 13's `NegativeSamplingLoss.apply`).
    Both tables' gradients are RowSparse (the rows read).
    """
    V = in_table.shape[0]
    centres, contexts, negatives = (F.check_ids(ids, V) for ids in (centres, contexts, negatives))
    if centres.ndim != 1 or contexts.shape != centres.shape or negatives.ndim != 2 \
            or len(negatives) != len(centres):
        raise ValueError(f"negative_sampling_loss: centres {centres.shape}, contexts {contexts.shape}, "
                         f"negatives {negatives.shape}; expected (B,), (B,) and (B, K)")
    if out_table.shape != in_table.shape:
        raise ValueError(f"negative_sampling_loss: in_table {in_table.shape} and out_table "
                         f"{out_table.shape} must have the same shape (V, d)")
    v = F.embedding(centres, in_table)  # (B, d)
    u = F.embedding(np.concatenate([contexts[:, None], negatives], axis=1), out_table)  # (B, 1 + K, d)
    return (on_rows or loss_on_rows)(v, u)
