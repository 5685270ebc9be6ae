"""minigrad: a small reverse-mode autograd engine on numpy, for learning how token
embeddings, unembeddings and weight tying really learn."""

from minigrad import nn, optim
from minigrad.engine import (
    Function,
    RowSparse,
    Tensor,
    arange,
    detect_anomaly,
    enable_grad,
    is_grad_enabled,
    no_grad,
    ones,
    randn,
    tensor,
    zeros,
)
from minigrad.engine.ops import unbroadcast
from minigrad.nn.functional import cat, concatenate, stack, where
from minigrad.tools.gradcheck import GradcheckError, GradcheckReport, gradcheck
from minigrad.tools.io import CheckpointError, load, save
from minigrad.tools.ledger import Ledger, ledger
from minigrad.tools.viz import draw

__version__ = "0.1.0"

__all__ = [
    "Function", "GradcheckError", "GradcheckReport", "RowSparse", "Tensor", "arange",
    "detect_anomaly", "enable_grad", "gradcheck", "is_grad_enabled", "nn", "no_grad", "ones", "optim",
    "randn", "tensor", "unbroadcast", "zeros",
    "Ledger", "draw", "ledger",
    "CheckpointError", "load", "save", "cat", "concatenate", "stack", "where",
]
