"""Lesson 8 exercise: two numbers to know before training a language model.

Fill in the functions below, then run `minigrad check 8`.
"""

import numpy as np


def tiny_lm_parameter_count(vocab_size: int, embedding_dim: int, hidden: int, context: int,
                            tied: bool) -> int:
    """How many numbers minigrad.models.TinyLM(vocab_size, embedding_dim, hidden, context, tied) trains.

    The model, with V = vocab_size, d = embedding_dim, H = hidden, C = context:
        ids (N, C) -> emb: a (V, d) table      -> concatenate the C rows: (N, C*d)
                   -> up: Linear(C*d, H), then tanh -> down: Linear(H, d)
                   -> head: Linear(d, V, bias=False): logits (N, V)
    nn.Linear(i, o) holds a weight (o, i) and a bias (o,). When tied, head.weight IS emb.weight:
    one Parameter with two names.
    returns: an int, each trained number counted once.
    """
    raise NotImplementedError("lesson 8: write tiny_lm_parameter_count(vocab_size, embedding_dim, hidden, "
                              "context, tied)")


def unigram_loss(counts: np.ndarray) -> float:
    """The mean cross-entropy, in nats per token, of the best model that ignores context.

    counts: (V,) int, how often each vocabulary entry occurs in a text (some may be 0).
    Such a model predicts the same distribution at every position; the best one uses the
    text's own frequencies p_i = counts_i / N, where N = counts.sum(). Its loss on that text
    is the average over the N tokens of -log p(token).
    returns: a float (natural log, as F.cross_entropy uses).

    Hints: group the N tokens by vocabulary entry. An entry that never occurs contributes
    nothing. If every count is equal, the answer is log V: the loss of a uniform model,
    which is where an untrained model starts.
    """
    raise NotImplementedError("lesson 8: write unigram_loss(counts)")
