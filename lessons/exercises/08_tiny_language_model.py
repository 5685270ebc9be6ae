"""Lesson 8 exercise: the training step and the evaluation that every training run is made of.

Fill in the two functions below, then run `minigrad check 8`. Once your copy passes, lesson 8's
`train()` takes its steps with your `train_step` and measures with your `mean_loss`, and so do
the models of lessons 9 to 13.
"""

import numpy as np

import minigrad as mg
from minigrad.nn import functional as F  # noqa: F401 (F.cross_entropy: the loss of both functions)


def train_step(model: mg.nn.Module, optimizer, ids: np.ndarray, targets: np.ndarray) -> float:
    """One step of training on one batch.

    model:     a language model: model(ids) gives logits, (B, V) for TinyLM (one prediction per
               window) or (B, C, V) for TinyGPT (a prediction at every position).
    optimizer: what updates the model's parameters from their .grad, for example
               mg.optim.AdamW(model.parameters(), lr=3e-3): it has zero_grad() and step().
    ids:       (B, C) int, B windows of C tokens.
    targets:   (B,) int, the token after each window, or (B, C) for a prediction at every position.
    returns:   the batch's loss, the mean cross-entropy over its predicted positions before the
               update, as a Python float. F.cross_entropy takes PyTorch's layout, logits (N, V)
               and targets (N,): a model's (B, C, V) logits are B * C rows of V scores.

    Think about the order: what must be forgotten before the gradients are computed, what
    computes them, and what uses them.
    """
    raise NotImplementedError("lesson 8: write train_step(model, optimizer, ids, targets)")


def mean_loss(model: mg.nn.Module, ids: np.ndarray, targets: np.ndarray, batch_size: int = 1024) -> float:
    """The model's mean cross-entropy over every target of a set of windows (held-out text).

    ids, targets: as in train_step, N windows instead of B.
    batch_size:   the most predicted positions to run the model on at once (the logits of a
                  whole held-out text need not fit in memory): run it on chunks of whole
                  windows, at least one window a chunk.
    returns:      a Python float, the mean over every target (each predicted position counts
                  once, whatever chunk it was in).

    Measuring must leave the model as it was, and need not remember anything for a backward.
    """
    raise NotImplementedError("lesson 8: write mean_loss(model, ids, targets, batch_size)")
