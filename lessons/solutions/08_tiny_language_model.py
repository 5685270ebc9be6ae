"""Lesson 8 reference answers."""

import numpy as np

import minigrad as mg
from minigrad.nn import functional as F


def next_token_loss(logits: mg.Tensor, targets: np.ndarray, reduction: str = "mean") -> mg.Tensor:
    """Cross-entropy with every predicted position a row: (..., V) logits as (N, V), targets (N,)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction=reduction)


def train_step(model: mg.nn.Module, optimizer, ids: np.ndarray, targets: np.ndarray) -> float:
    """Forget the last batch's gradients, compute this batch's, let the optimizer use them."""
    loss = next_token_loss(model(ids), targets)  # the mean over the batch's predicted positions
    optimizer.zero_grad()  # .grad adds up across backward calls: start from nothing
    loss.backward()
    optimizer.step()
    return loss.item()  # a float: the tensor would keep the whole graph of the step alive


def mean_loss(model: mg.nn.Module, ids: np.ndarray, targets: np.ndarray, batch_size: int = 1024) -> float:
    """Sum of every chunk's summed loss, over the number of targets; no graph is recorded."""
    per_window = 1 if targets.ndim == 1 else targets.shape[1]
    rows = max(1, batch_size // per_window)  # whole windows, at least one a chunk
    total = 0.0
    with mg.no_grad():
        for start in range(0, len(ids), rows):
            logits = model(ids[start:start + rows])
            total += next_token_loss(logits, targets[start:start + rows], reduction="sum").item()
    return total / targets.size
