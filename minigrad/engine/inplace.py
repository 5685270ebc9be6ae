"""In-place updates and views: the part of Tensor that keeps a graph right when memory changes.

Without a graph to keep (no_grad, or nothing requires grad) an in-place op just writes into
self.data. With one, it is rebased as in PyTorch: the out-of-place op computes the new values and
a node whose edge goes to the old grad_fn; the values are written into self.data (so every alias
sees them) and self.grad_fn becomes that node. Either way the version is bumped, so a backward
that saved the old values refuses to use them. A view (indexing, reshape, transpose that share
memory) remembers its base and how it was made from it, so an in-place change of the base remakes
the view's node too (PyTorch regenerates a view's grad_fn the same way).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine import grad_mode
from minigrad.engine.arguments import check_can_require_grad
from minigrad.engine.dtypes import can_cast, float_dtype, is_number, result_type
from minigrad.engine.seam import ops

Tensor = Any  # the class this is mixed into (tensor.py), named for the hints only


class InPlaceAndViews:
    """Mixed into Tensor: add_, sub_, mul_, div_, zero_, copy_, item assignment, and views."""

    data: np.ndarray
    _views: list[weakref.ref] | None = None
    _base: Tensor | None = None
    _from_base: Callable[[Tensor], Tensor] | None = None
    # True when Function.apply found this tensor's array to be a view of an input's memory (as
    # numpy's .base says); a copy that numpy gives a .base of its own (y[:, [0, 2]]) is not one
    _views_input = False

    # Without a graph to keep (no_grad, or nothing requires grad) an in-place op just writes into
    # self.data. With one, it is rebased as in PyTorch: the out-of-place op computes the new values
    # and a node whose edge goes to the old grad_fn; the values are written into self.data (so
    # every alias sees them) and self.grad_fn becomes that node. Either way the version is bumped,
    # so a backward that saved the old values refuses to use them.

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        return self._add("add_", other, alpha)

    def sub_(self, other: Any, alpha: float = 1.0) -> Tensor:
        return self._add("sub_", other, -alpha)

    def mul_(self, other: Any) -> Tensor:
        return self._scale("mul_", ops.Mul, np.multiply, other)

    def div_(self, other: Any) -> Tensor:
        return self._scale("div_", ops.Div, np.divide, other)

    # `w -= lr * w.grad` updates w itself, as in PyTorch (Python would otherwise rebind w to a
    # new tensor, without requires_grad): the same rules as add_, sub_, mul_ and div_
    def __iadd__(self, other: Any) -> Tensor:
        return self._add("+=", other, 1.0)

    def __isub__(self, other: Any) -> Tensor:
        return self._add("-=", other, -1.0)

    def __imul__(self, other: Any) -> Tensor:
        return self._scale("*=", ops.Mul, np.multiply, other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._scale("/=", ops.Div, np.divide, other)

    def zero_(self) -> Tensor:
        return self._copy("zero_", np.zeros((), dtype=self.dtype))

    def copy_(self, other: Any) -> Tensor:
        return self._copy("copy_", other)

    def __setitem__(self, index: Any, value: Any) -> None:
        index = _index_array(index)
        if self._records_in_place("__setitem__", value):
            self._rebase("__setitem__", ops.SetItem, self._history(copy=False), self._operand(value),
                         index=index)
            return
        self.data[index] = self._plain(value)
        self._bumped()

    def _add(self, op: str, other: Any, alpha: float) -> Tensor:
        self._check_result_fits(op, other)
        if self._records_in_place(op, other):
            step = self._operand(other)
            return self._rebase(op, ops.Add, self._history(copy=False), step if alpha == 1 else step * alpha)
        step = self._step(other)
        if alpha == -1:
            np.subtract(self.data, step, out=self.data, casting="unsafe")  # the kind was checked
        else:
            np.add(self.data, step if alpha == 1 else np.multiply(alpha, step), out=self.data,
                   casting="unsafe")
        return self._bumped()

    def _scale(self, op: str, function: type, ufunc: np.ufunc, other: Any) -> Tensor:
        self._check_result_fits(op, other, floating=function is ops.Div)
        if self._records_in_place(op, other):  # Mul's and Div's backward read the old values: a copy
            return self._rebase(op, function, self._history(copy=True), self._operand(other))
        ufunc(self.data, self._step(other), out=self.data, casting="unsafe")
        return self._bumped()

    def _step(self, other: Any) -> Any:
        """The operand of an in-place op with no graph to keep: a number in this tensor's dtype
        (wrapping around as PyTorch: a uint8 tensor += -3 is -3 mod 256), an array as it is (numpy
        computes in the wider dtype, then stores in this one)."""
        return np.asarray(other).astype(self.data.dtype) if is_number(other) else _array_of(other)

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

    def _copy(self, op: str, source: Any) -> Tensor:
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
                or any(isinstance(s, InPlaceAndViews) and s.requires_grad for s in sources)):
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
        return other if isinstance(other, InPlaceAndViews) else np.asarray(other, dtype=self.dtype)

    def _plain(self, other: Any) -> np.ndarray:
        return np.asarray(_array_of(other), dtype=self.dtype)

    def _rebase(self, op: str, function: type, *inputs: Any, **kwargs: Any) -> Tensor:
        result = function.apply(*inputs, **kwargs)
        if result.shape != self.shape:
            raise ValueError(
                f"{op}: the result has shape {result.shape}, but an in-place op cannot change "
                f"this tensor's shape {self.shape}"
            )
        self.data[...] = result.data
        self.grad_fn = result.grad_fn
        self.requires_grad = True
        self._remake_views()
        return self._bumped()

    def _bumped(self) -> Tensor:
        self._version += 1
        return self



    def _view(self, make: Callable[[Tensor], Tensor]) -> Tensor:
        """make(self), remembered as a view when it shares self's memory: an in-place op that
        rebases the base's history then remakes the view's node from the new history (as PyTorch
        regenerates a view's grad_fn), so reading the view never uses a stale graph."""
        out = make(self)
        if out.data.base is not None and np.may_share_memory(out.data, self.data):
            if self._base is None:
                out._base, out._from_base = self, make
            else:  # a view of a view: remade from the first base, through both ops
                parent = self._from_base
                out._base, out._from_base = self._base, lambda base: make(parent(base))
            views = out._base._views
            if views is None:
                views = out._base._views = []
            views.append(weakref.ref(out))
            if len(views) > 8:  # a base viewed every step (E.T): drop the views that are gone
                views[:] = out._base._live_views()
        return out

    def _live_views(self) -> list[weakref.ref]:
        return [ref for ref in self._views or () if ref() is not None]

    def _remake_views(self) -> None:
        for ref in self._live_views():
            view = ref()
            if view is not None:
                remade = view._from_base(self)
                view.grad_fn, view.requires_grad = remade.grad_fn, remade.requires_grad


def _array_of(x: Any) -> Any:
    return x.data if isinstance(x, InPlaceAndViews) else x  # every Tensor is an InPlaceAndViews


def _index_array(index: Any) -> Any:
    """Tensors inside an index become their arrays (an index has no gradient)."""
    if isinstance(index, tuple):
        return tuple(_index_array(i) for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return _array_of(index)
