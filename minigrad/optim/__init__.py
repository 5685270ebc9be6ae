"""Optimizers, named as in `torch.optim`: SGD, Adam and AdamW, dense or lazy over row-sparse
gradients, with three semantics for weight decay on rows a gradient did not name; and the
learning-rate schedules of `torch.optim.lr_scheduler`."""

from minigrad.optim import lr_scheduler
from minigrad.optim.optimizers import DECAY_MODES, SGD, Adam, AdamW, Optimizer, PerformanceWarning

__all__ = ["DECAY_MODES", "SGD", "Adam", "AdamW", "Optimizer", "PerformanceWarning", "lr_scheduler"]
