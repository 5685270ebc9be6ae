"""Which dtype an op's result has when its operands' dtypes differ: PyTorch's promotion rules,
on numpy dtypes (the table is in docs/engine.md).

numpy and PyTorch agree when two arrays of one kind meet (float16 with float32 gives float32),
and disagree elsewhere: numpy gives float64 for `int64 array * 0.5`, for `float32 + int64` and
for `exp` of an int array, where PyTorch gives its default float dtype, float32. Here:

1. Kinds are ordered bool < integer < floating. An operand of a higher kind wins the kind.
2. Operands are ranked: tensors with at least one axis, then 0-d tensors, then Python numbers.
   Within a kind, only the highest-ranked operands decide the width: `float32 tensor * 0.5`
   stays float32, `float32 tensor * float64 0-d tensor` too, `int32 tensor + 2` stays int32.
3. A number that lifts the kind takes that kind's default dtype: a float is float32, an int
   int64. So `int tensor * 0.5` is float32 and `bool tensor * 2` is int64.
4. True division and the float functions (exp, log, sqrt, tanh, sigmoid, softmax, mean...) of
   a bool or integer tensor give float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arrays import Array, DType

DEFAULT_FLOAT = np.dtype(np.float32)  # PyTorch's default dtype: what a Python float becomes
_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_NUMBER_DTYPE = {0: np.dtype(np.bool_), 1: np.dtype(np.int64), 2: DEFAULT_FLOAT,
                 3: np.dtype(np.complex64)}


def kind_order(dtype: DType) -> int:
    """0 for bool, 1 for the integers, 2 for the floats (3 complex)."""
    return _KIND_ORDER[dtype.kind]


def promote_types(a: DType, b: DType) -> DType:
    """The dtype that holds both: the wider of one kind (numpy's rule), else the higher kind's
    (int64 with float16 is float16, where numpy says float64)."""
    ka, kb = kind_order(a), kind_order(b)
    if ka == kb:
        return np.promote_types(a, b)
    return a if ka > kb else b


def is_number(x: Any) -> bool:
    """A Python or numpy scalar, which ranks below every tensor (numpy scalars as in PyTorch)."""
    return isinstance(x, (bool, int, float, complex, np.generic))


def _number_kind(x: Any) -> int:
    """kind_order of a number, read from its type (a Python int of any size is an integer)."""
    if isinstance(x, np.generic):
        return kind_order(x.dtype)
    return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2 if isinstance(x, float) else 3


def result_type(*operands: Any) -> DType:
    """The dtype of an elementwise op on `operands` (tensors, arrays, Python or numpy numbers)."""
    ranked: list[DType | None] = [None, None, None]  # tensors with axes, 0-d tensors, numbers
    for x in operands:
        if is_number(x):
            rank, dtype = 2, _NUMBER_DTYPE[_number_kind(x)]
        else:
            x = x if hasattr(x, "ndim") else np.asarray(x)  # a Tensor or array; a list
            rank, dtype = (0 if x.ndim else 1), np.dtype(x.dtype)
        held = ranked[rank]
        ranked[rank] = dtype if held is None else promote_types(held, dtype)
    result: DType | None = None
    for candidate in ranked:  # a lower rank counts only when it lifts the kind
        if result is None or (candidate is not None and kind_order(candidate) > kind_order(result)):
            result = candidate
    assert result is not None, "result_type() needs at least one operand"
    return result


def float_dtype(dtype: DType) -> DType:
    """`dtype` if it is a float, else the default float (true division, exp, mean of an int)."""
    return dtype if dtype.kind == "f" else DEFAULT_FLOAT


def as_float(a: Array) -> Array:
    """`a` itself when it holds floats; a bool or integer array as float32 (as PyTorch's exp)."""
    return a if a.dtype.kind == "f" else a.astype(DEFAULT_FLOAT)


def can_cast(result: DType, into: DType) -> bool:
    """Whether an in-place op may store a `result` into a tensor of dtype `into` (PyTorch's rule:
    never into a lower kind, so an int tensor cannot take `* 0.5` in place)."""
    return kind_order(result) <= kind_order(into)
