"""The engine a learner reads in one sitting: Tensor, Function and Context, the backward
graph and the walk over it, the differentiable ops, and row-sparse gradients.

It imports nothing from the rest of minigrad."""

from minigrad.engine.autograd import Function, detect_anomaly, enable_grad, is_grad_enabled, no_grad
from minigrad.engine.ops import unbroadcast
from minigrad.engine.sparse import RowSparse
from minigrad.engine.tensor import Tensor, arange, ones, randn, tensor, zeros

__all__ = ["Function", "RowSparse", "Tensor", "arange", "detect_anomaly", "enable_grad",
           "is_grad_enabled", "no_grad", "ones", "randn", "tensor", "unbroadcast", "zeros"]
