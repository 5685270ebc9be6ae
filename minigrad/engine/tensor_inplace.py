"""In-place updates, mixed into Tensor (tensor.py): add_, sub_, mul_, div_, +=, -=, *=, /=, zero_,
copy_ and item assignment, kept right when a graph reads the tensor.

Without a graph to keep (no_grad, or nothing requires grad) an in-place op just writes into
self.data. With one, it is rebased as in PyTorch: the out-of-place op computes the new values and
a node whose edge goes to the old grad_fn; the values are written into self.data (so every alias
sees them) and self.grad_fn becomes that node. Either way the version is bumped, so a backward
that saved the old values refuses to use them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import grad_mode, ops
from minigrad.engine.arguments import check_can_require_grad
from minigrad.engine.arrays import Array, ArrayHolder, as_array, index_array
from minigrad.engine.checks import ShapeError, broadcasts_to
from minigrad.engine.dtypes import can_cast, float_dtype, is_number, result_type

if TYPE_CHECKING:
    from typing_extensions import Self  # typing's own from Python 3.11

    from minigrad.engine.function import Function
    from minigrad.engine.graph import Node
    from minigrad.engine.tensor import Tensor


class TensorInPlace(ArrayHolder):
    """Mixed into Tensor."""

    # True when Function.apply found this tensor's array to be a view of an input's memory (as
    # numpy's .base says); a copy that numpy gives a .base of its own (y[:, [0, 2]]) is not one
    _views_input = False

    if TYPE_CHECKING:  # what the class this is mixed into provides
        grad_fn: Node | None
        _version: int

        def _new(self, array: Any) -> Tensor: ...
        def _remake_views(self) -> None: ...
        def _arithmetic(self, op: type[Function], other: Any, reflected: bool = False,
                        floating: bool = False) -> Tensor: ...
        @property
        def is_leaf(self) -> bool: ...

    def add_(self, other: Any, alpha: float = 1.0) -> Self:
        return self._add("add_", other, alpha)

    def sub_(self, other: Any, alpha: float = 1.0) -> Self:
        return self._add("sub_", other, -alpha)

    def mul_(self, other: Any) -> Self:
        return self._scale("mul_", ops.Mul, np.multiply, other)

    def div_(self, other: Any) -> Self:
        return self._scale("div_", ops.Div, np.divide, other)

    # `w -= lr * w.grad` updates w itself, as in PyTorch (Python would otherwise rebind w to a
    # new tensor, without requires_grad): the same rules as add_, sub_, mul_ and div_
    def __iadd__(self, other: Any) -> Self:
        return self._add("+=", other, 1.0)

    def __isub__(self, other: Any) -> Self:
        return self._add("-=", other, -1.0)

    def __imul__(self, other: Any) -> Self:
        return self._scale("*=", ops.Mul, np.multiply, other)

    def __itruediv__(self, other: Any) -> Self:
        return self._scale("/=", ops.Div, np.divide, other)

    def zero_(self) -> Self:
        return self._copy("zero_", np.zeros((), dtype=self.dtype))

    def copy_(self, other: Any) -> Self:
        return self._copy("copy_", other)

    def __setitem__(self, index: Any, value: Any) -> None:
        index = index_array(index)
        with self._value_fits("__setitem__", value, index):
            if self._records_in_place("__setitem__", value):
                self._rebase("__setitem__", ops.SetItem, self._history(copy=False), self._operand(value),
                             index=index)
                return
            self.data[index] = self._plain(value)
        self._bumped()

    def _add(self, op: str, other: Any, alpha: float) -> Self:
        self._check_result_fits(op, other)
        with self._value_fits(op, other):
            if self._records_in_place(op, other):
                step = self._arithmetic_operand(other)
                step = step if alpha == 1 else step * alpha
                return self._take(op, self._history(copy=False)._arithmetic(ops.Add, step))
            step = self._step(other)
            if alpha == -1:
                np.subtract(self.data, step, out=self.data, casting="unsafe")  # the kind was checked
            else:
                np.add(self.data, step if alpha == 1 else np.multiply(alpha, step), out=self.data,
                       casting="unsafe")
        return self._bumped()

    def _scale(self, op: str, function: type[Function], ufunc: np.ufunc, other: Any) -> Self:
        self._check_result_fits(op, other, floating=function is ops.Div)
        with self._value_fits(op, other):
            if self._records_in_place(op, other):  # Mul's and Div's backward read the old values: a copy
                operand = self._arithmetic_operand(other)
                return self._take(op, self._history(copy=True)._arithmetic(function, operand))
            ufunc(self.data, self._step(other), out=self.data, casting="unsafe")
        return self._bumped()

    @contextlib.contextmanager
    def _value_fits(self, op: str, value: Any, index: Any = None) -> Iterator[None]:
        """numpy's error for a value whose shape does not fit where it is written, as a ShapeError
        naming the op and both shapes (PyTorch raises RuntimeError)."""
        try:
            yield
        except ValueError as error:
            into = self.shape if index is None else np.shape(self.data[index])
            if isinstance(error, ShapeError) or broadcasts_to(np.shape(value), into):
                raise  # already named, or not about shapes (a string that is not a number)
            what = "this tensor's shape" if index is None else "the shape of the entries it is written to"
            raise ShapeError(f"{op}: a value of shape {tuple(np.shape(value))} does not broadcast to "
                             f"{tuple(into)}, {what}") from None

    def _step(self, other: Any) -> Any:
        """The operand of an in-place op with no graph to keep: a number in this tensor's dtype
        (wrapping around as PyTorch: a uint8 tensor += -3 is -3 mod 256), an array as it is (numpy
        computes in the wider dtype, then stores in this one)."""
        if is_number(other):
            return np.asarray(other).astype(self._number_dtype())
        return as_array(other)

    def _number_dtype(self) -> np.dtype[Any]:
        """The dtype a number takes to meet this tensor: its own, but float32 for float16 (PyTorch
        computes with the number at float32 precision and rounds only the result)."""
        return np.dtype(np.float32) if self.data.dtype == np.float16 else self.data.dtype

    def _check_result_fits(self, op: str, other: Any, floating: bool = False) -> None:
        """Refuse, as PyTorch does, a result of a higher kind than this tensor's dtype: an int
        tensor cannot take `*= 0.5` (nor `/= 2`) in place, a bool tensor cannot take `+= 1`."""
        if self.data.dtype.kind == "f":  # every real result fits a float tensor
            return
        result = result_type(self, other)
        result = float_dtype(result) if floating else result
        if not can_cast(result, self.data.dtype):
            raise RuntimeError(
                f"{op}: the result has dtype {result}, which cannot be stored in place in this "
                f"tensor of dtype {self.data.dtype}; use the out-of-place op (y = y * 0.5), "
                f"which gives a new tensor of dtype {result}"
            )

    def _copy(self, op: str, source: Any) -> Self:
        with self._value_fits(op, source):
            if self._records_in_place(op, source):
                return self._rebase(op, ops.Copy, self._history(copy=False), self._operand(source))
            self.data[...] = self._plain(source)
        return self._bumped()

    def _records_in_place(self, op: str, *sources: Any) -> bool:
        """Whether the in-place op `op` must rebase self's history onto itself; refuses the cases
        that cannot be recorded: a leaf that requires grad, and a view of another tensor."""
        if not grad_mode.is_grad_enabled():
            return False
        if self.requires_grad and self.is_leaf:
            raise RuntimeError(
                f"{op}: a leaf tensor that requires grad is used in an in-place operation; "
                "wrap the update in `with minigrad.no_grad():`"
            )
        if not (self.requires_grad
                or any(isinstance(s, ArrayHolder) and s.requires_grad for s in sources)):
            return False
        if self._views_input:
            raise RuntimeError(
                f"{op}: this tensor (shape {self.shape}) shares its memory with another tensor (it "
                "was made by indexing, reshape or transpose) and the op must record a gradient; "
                "writing into it would change the other tensor behind its graph's back. Use the "
                "out-of-place op (y = y * 3; for y[i] += v, y[i] = y[i] + v), or clone() the view "
                "first."
            )
        check_can_require_grad(self.data)
        return True

    def _history(self, copy: bool) -> Tensor:
        """A stand-in for self as it is now, for the op that rebases it: the same grad_fn, and a
        copy of the values when that op's backward reads them (self.data is about to change)."""
        old = self._new(self.data.copy() if copy else self.data)
        old.requires_grad = self.requires_grad
        old.grad_fn = self.grad_fn
        return old

    def _operand(self, other: Any) -> Any:
        """A tensor stays a tensor (its gradient is recorded); anything else takes self's dtype."""
        return other if isinstance(other, ArrayHolder) else np.asarray(other, dtype=self.dtype)

    def _arithmetic_operand(self, other: Any) -> Any:
        """As `_operand`, but a number stays a number: `_arithmetic` gives it the precision
        PyTorch does (float32 for a float16 tensor)."""
        return other if is_number(other) else self._operand(other)

    def _plain(self, other: Any) -> Array:
        return np.asarray(as_array(other), dtype=self.dtype)

    def _rebase(self, op: str, function: type[Function], *inputs: Any, **kwargs: Any) -> Self:
        return self._take(op, function.apply(*inputs, **kwargs))

    def _take(self, op: str, result: Tensor) -> Self:
        """Make `result`, computed from self's history, self's new value and history."""
        if result.shape != self.shape:
            raise ShapeError(
                f"{op}: the result has shape {result.shape}, but an in-place op cannot change "
                f"this tensor's shape {self.shape}"
            )
        self.data[...] = result.data
        self.grad_fn = result.grad_fn
        self.requires_grad = True
        self._remake_views()
        return self._bumped()

    def _bumped(self) -> Self:
        self._version += 1
        return self

