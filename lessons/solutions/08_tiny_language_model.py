"""Lesson 8 reference answers."""

import numpy as np


def tiny_lm_parameter_count(vocab_size: int, embedding_dim: int, hidden: int, context: int,
                            tied: bool) -> int:
    """Trained numbers of TinyLM(vocab_size, embedding_dim, hidden, context, tied), each counted once."""
    V, d, H, C = vocab_size, embedding_dim, hidden, context
    table = V * d
    up = C * d * H + H          # weight (H, C*d) and bias (H,)
    down = H * d + d            # weight (d, H) and bias (d,)
    head = 0 if tied else d * V  # weight (V, d), no bias; tied: the table itself, already counted
    return table + up + down + head


def unigram_loss(counts: np.ndarray) -> float:
    """-sum_i p_i log p_i over the entries that occur, with p_i = counts_i / N (nats per token)."""
    counts = np.asarray(counts, dtype=np.float64)
    p = counts[counts > 0] / counts.sum()  # 0 log 0 = 0: absent entries are never a target
    return float(-(p * np.log(p)).sum())
