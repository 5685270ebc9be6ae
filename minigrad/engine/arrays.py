"""Arrays, and the array inside a tensor: the names the engine's lower modules share.

`Array` is the type of a numpy array of any dtype and shape, for the type hints (`DType`, of its
dtype); `Gradients`, the type of what a backward returns (one gradient per input: an array, a
RowSparse, or None). `ArrayHolder` is the base class of Tensor: it lets a module tell a tensor
from a plain value without importing tensor.py. `as_array` and `index_array` are the one way each
to take the arrays out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing's own from Python 3.13

    from minigrad.engine.sparse import RowSparse
    from minigrad.engine.tensor import Tensor

Array: TypeAlias = npt.NDArray[Any]
DType: TypeAlias = np.dtype[Any]
Gradients: TypeAlias = "tuple[Array | RowSparse | None, ...]"


class ArrayHolder:
    """What every Tensor is at bottom: a holder of a numpy array, `data`, that may require grad,
    and the facts it reads off that array (shape, dtype, ndim, item)."""

    __slots__ = ()
    data: Array
    requires_grad: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def item(self) -> Any:
        return self.data.item()


def is_tensor(x: object) -> TypeIs[Tensor]:
    """Whether `x` is a Tensor (the one kind of ArrayHolder), told without importing tensor.py."""
    return isinstance(x, ArrayHolder)


def as_array(x: Any) -> Any:
    """The array inside a Tensor; anything else unchanged (an ndarray's own .data is a buffer)."""
    return x.data if isinstance(x, ArrayHolder) else x


def index_array(index: Any) -> Any:
    """An index with its tensors as their arrays and its lists as arrays (an index has no gradient)."""
    if isinstance(index, tuple):
        return tuple(index_array(i) for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return as_array(index)


def arrays_in(value: Any) -> Any:
    """`value` with every tensor in it (inside tuples, lists and dicts too) replaced by its array."""
    if isinstance(value, (tuple, list)):
        return type(value)(arrays_in(v) for v in value)
    if isinstance(value, dict):
        return {k: arrays_in(v) for k, v in value.items()}
    return as_array(value)
