"""The engine a learner reads in one sitting: Tensor, Function and Context, the backward
graph and the walk over it, the differentiable ops, and row-sparse gradients.

It imports nothing from the rest of minigrad. Everything above it imports engine names from
here (`from minigrad.engine import Tensor, no_grad`), not from the files inside, so the files
can be rearranged without touching the layers above.
"""

from minigrad.engine import dtype_names, fast, fast_ops, ops, seam  # ops, fast_ops register at the seam
from minigrad.engine.checks import check_in_range, positive_int
from minigrad.engine.dtypes import promote, result_type
from minigrad.engine.function import Context, Function, FunctionNode
from minigrad.engine.grad_mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad, recording
from minigrad.engine.graph import AccumulateGrad, Node, count_dependencies
from minigrad.engine.ops import unbroadcast
from minigrad.engine.random import as_generator, manual_seed
from minigrad.engine.seam import use, whose
from minigrad.engine.sparse import RowSparse, add_grads, to_dense, zeroed
from minigrad.engine.tensor import Tensor, arange, as_array, ones, randn, tensor, zeros

__all__ = [
    "AccumulateGrad", "Context", "Function", "FunctionNode", "Node", "RowSparse", "Tensor",
    "add_grads", "arange", "as_array", "as_generator", "check_in_range", "count_dependencies",
    "detect_anomaly", "dtype_names", "enable_grad", "fast", "is_grad_enabled", "manual_seed", "no_grad",
    "ones", "positive_int", "promote", "randn", "recording", "result_type", "seam", "tensor", "to_dense",
    "unbroadcast", "use", "whose", "zeroed", "zeros", "fast_ops", "ops",
]
