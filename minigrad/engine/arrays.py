"""Arrays, and the array inside a tensor: the names the engine's lower modules share.

`Array` is the type of a numpy array of any dtype and shape, for the type hints. `ArrayHolder`
is the base class of Tensor: it lets a module tell a tensor from a plain value without importing
tensor.py. `as_array` and `index_array` are the one way each to take the arrays out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


class ArrayHolder:
    """What every Tensor is at bottom: a holder of a numpy array, `data`."""

    __slots__ = ()
    data: Array


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
