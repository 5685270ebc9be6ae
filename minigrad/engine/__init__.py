"""The engine a learner reads in one sitting: Tensor, Function and Context, the backward
graph and the walk over it, the differentiable ops, row-sparse gradients, and the kernels the
ops call.

It imports nothing from the rest of minigrad. Everything above it imports engine names from
here (`from minigrad.engine import Tensor, no_grad`), not from the files inside, so the files
can be rearranged without touching the layers above.
"""

# function.py first: it ends by importing tensor.py, whose ops subclass its Function
from minigrad.engine.function import Context, Function, FunctionNode  # isort: skip
from minigrad.engine import dtype_names, kernels, ops, seam
from minigrad.engine.arrays import Array, as_array
from minigrad.engine.checks import (
    ArgumentError,
    ShapeError,
    broadcasts_to,
    check_broadcast,
    check_in_range,
    positive_int,
)
from minigrad.engine.dtypes import result_type
from minigrad.engine.grad_mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad, recording
from minigrad.engine.graph import AccumulateGrad, Node, count_dependencies
from minigrad.engine.ops import unbroadcast
from minigrad.engine.random import as_generator, manual_seed
from minigrad.engine.seam import use, whose
from minigrad.engine.sparse import RowSparse, add_grads, to_dense, zeroed
from minigrad.engine.tensor import (
    Tensor,
    arange,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from minigrad.engine.tensor_maths import broadcasting, cast, promote, reduced_in_float32

__all__ = [
    "AccumulateGrad", "ArgumentError", "Array", "Context", "Function", "FunctionNode", "Node",
    "RowSparse", "ShapeError", "Tensor", "add_grads", "arange", "as_array", "as_generator",
    "broadcasting", "broadcasts_to", "cast", "check_broadcast", "check_in_range", "count_dependencies",
    "detect_anomaly", "dtype_names", "enable_grad", "eye", "full", "full_like", "linspace",
    "is_grad_enabled", "kernels", "manual_seed", "no_grad", "ones", "ones_like", "ops", "positive_int",
    "promote", "randn", "recording", "reduced_in_float32", "result_type", "seam", "tensor", "to_dense",
    "unbroadcast", "use", "whose", "zeroed", "zeros", "zeros_like",
]
