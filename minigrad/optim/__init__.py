"""Optimizers, named as in `torch.optim`: SGD, Adam and AdamW, dense or lazy over row-sparse
gradients, with three semantics for weight decay on rows a gradient did not name; and the
learning-rate schedules of `torch.optim.lr_scheduler`.

optimizer.py: the base class with PyTorch's groups, state and checkpoints; rows.py: lesson 7's
row machinery (lazy rows, decay modes); optimizers.py: the update rules; lr_scheduler.py.
"""

from minigrad.optim import lr_scheduler
from minigrad.optim.optimizer import Optimizer
from minigrad.optim.optimizers import SGD, Adam, AdamW
from minigrad.optim.rows import DECAY_MODES, PerformanceWarning, RowOptimizer

__all__ = ["DECAY_MODES", "SGD", "Adam", "AdamW", "Optimizer", "PerformanceWarning", "RowOptimizer",
           "lr_scheduler"]
