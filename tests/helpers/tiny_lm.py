"""A tiny language model shared by the tying and save/load tests.

Tokens are read through an embedding E (V, d), mixed by one tanh layer, and said through a
head whose weight is E itself when tied: logits = tanh(E[ids] W^T + b) E^T.
"""

from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad import nn
from minigrad.learn.train import next_token_loss
from minigrad.nn import functional as F

V, D = 7, 4
IDS = np.array([[1, 4, 1], [0, 1, 3]])  # row 1 read three times; rows 2, 5, 6 never read
TARGETS = np.array([[4, 2, 2], [6, 1, 0]])


class TinyLM(nn.Module):
    def __init__(self, tied: bool = True, dtype=np.float64, seed: int = 0, padding_idx=None):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.emb = nn.Embedding(V, D, padding_idx=padding_idx, dtype=dtype, rng=rng)
        self.mix = nn.Linear(D, D, dtype=dtype, rng=rng)
        self.head = nn.Linear(D, V, bias=False, dtype=dtype, rng=rng)
        if tied:
            self.head.weight = self.emb.weight

    def forward(self, ids) -> mg.Tensor:
        return self.head(self.mix(self.emb(ids)).tanh())

    def loss(self, ids=IDS, targets=TARGETS) -> mg.Tensor:
        return next_token_loss(self(ids), targets)


def lm_loss(E_read, E_say, W, b, ids=IDS, targets=TARGETS) -> mg.Tensor:
    """The same loss, functional: pass one table twice to tie, or a constant copy to cut a path."""
    hidden = F.linear(F.embedding(ids, E_read), W, b).tanh()
    return next_token_loss(F.linear(hidden, E_say), targets)
