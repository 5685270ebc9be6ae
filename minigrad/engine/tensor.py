"""Tensor: a numpy array that remembers how it was made, so gradients can flow back."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine import autograd, ops
from minigrad.engine.autograd import AccumulateGrad, Node


def _infer_array(data: Any, dtype: Any = None) -> np.ndarray:
    """Dtypes as PyTorch infers them: numpy arrays keep theirs; Python floats become float32."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, (np.ndarray, np.generic)):
        return np.array(data, dtype=dtype, copy=True)
    array = np.array(data, dtype=dtype)
    if dtype is None:
        if array.dtype.kind == "f":
            array = array.astype(np.float32)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
        elif array.dtype.kind not in "b":
            raise TypeError(f"tensor(): cannot make a tensor from data of type {type(data).__name__}")
    return array


def as_array(x: Any) -> Any:
    """The array inside a Tensor; anything else unchanged (an ndarray's own .data is a buffer)."""
    return x.data if isinstance(x, Tensor) else x


def _check_can_require_grad(array: np.ndarray) -> None:
    if array.dtype.kind != "f":
        raise TypeError(
            f"only floating-point tensors can require grad, but this one has dtype {array.dtype}; "
            "pass dtype=np.float32 or np.float64"
        )


class Tensor:
    """A numpy array `data` with an optional gradient.

    A tensor made by the user is a *leaf*; one made by an op has `grad_fn`, the node of the
    backward graph that will send its gradient on to the op's inputs.
    """

    __array_priority__ = 1000  # `ndarray + Tensor` calls Tensor.__radd__, not numpy's add
    # Views (indexing, reshape, transpose that share memory), as PyTorch tracks them: a view keeps
    # its base (the tensor that is not itself a view) and the ops that remake it from that base;
    # the base knows its views weakly. Class-level defaults: most tensors are neither.
    _views: list[weakref.ref] | None = None
    _base: Tensor | None = None
    _from_base: Callable[[Tensor], Tensor] | None = None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None):
        self.data: np.ndarray = _infer_array(data, dtype)
        self.grad: Any = None  # ndarray of self.shape, or a RowSparse for lookup tables
        self.grad_fn: Node | None = None
        self.name = name
        self._version = 0  # bumped by in-place ops, checked by backward
        self._accumulate: AccumulateGrad | None = None
        self.requires_grad = False
        if requires_grad:
            _check_can_require_grad(self.data)
            self.requires_grad = True

    @classmethod
    def _wrap(cls, array: np.ndarray, requires_grad: bool = False) -> Tensor:
        """A tensor around an op's result array, without copying or inferring dtype."""
        t = cls.__new__(cls)
        t.data = array if type(array) is np.ndarray else np.asarray(array)
        t.grad = None
        t.grad_fn = None
        t.name = None
        t._version = 0
        t._accumulate = None
        t.requires_grad = requires_grad
        return t

    def _grad_node(self) -> Node:
        """Where gradient for this tensor goes: its grad_fn, or the leaf's one AccumulateGrad."""
        if self.grad_fn is not None:
            return self.grad_fn
        if self._accumulate is None:
            self._accumulate = AccumulateGrad(self)
        return self._accumulate

    # ---- basic properties -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def __len__(self) -> int:
        return len(self.data)

    def item(self) -> float:
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    def detach(self) -> Tensor:
        """The same values, cut from the graph (shares memory, like PyTorch)."""
        return Tensor._wrap(self.data)

    def clone(self) -> Tensor:
        return ops.Clone.apply(self)

    def __repr__(self) -> str:
        extra = f", grad_fn=<{self.grad_fn.name}>" if self.grad_fn else (
            ", requires_grad=True" if self.requires_grad else "")
        name = f", name={self.name!r}" if self.name else ""
        body = np.array2string(self.data, precision=4, separator=", ", prefix="tensor(")
        return f"tensor({body}{extra}{name})"

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """numpy 2's protocol: copy=True always copies, False never does, None when it must."""
        if copy:
            return np.array(self.data, dtype=dtype, copy=True)
        if copy is False and dtype is not None and np.dtype(dtype) != self.dtype:
            raise ValueError(
                f"__array__: a tensor of dtype {self.dtype} cannot be viewed as {np.dtype(dtype)} "
                "without a copy, but copy=False was asked for"
            )
        return np.asarray(self.data, dtype=dtype)

    def __bool__(self) -> bool:
        return bool(self.data)

    # ---- autograd ---------------------------------------------------------------------------
    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) * grad into every leaf's `.grad`."""
        autograd.backward(self, grad, retain_graph=retain_graph)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad:
            _check_can_require_grad(self.data)
        if not self.is_leaf:
            raise RuntimeError("requires_grad_(): only a leaf tensor's flag can be changed")
        self.requires_grad = requires_grad
        return self

    # ---- in-place updates --------------------------------------------------------------------
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
        if self._records_in_place("mul_", other):  # Mul's backward reads the old values: a copy
            return self._rebase("mul_", ops.Mul, self._history(copy=True), self._operand(other))
        self.data *= self._plain(other)
        return self._bumped()

    def div_(self, other: Any) -> Tensor:
        if self._records_in_place("div_", other):
            return self._rebase("div_", ops.Div, self._history(copy=True), self._operand(other))
        self.data /= self._plain(other)
        return self._bumped()

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
        if self._records_in_place(op, other):
            step = self._operand(other)
            return self._rebase(op, ops.Add, self._history(copy=False), step if alpha == 1 else step * alpha)
        self.data += alpha * self._plain(other)
        return self._bumped()

    def _copy(self, op: str, source: Any) -> Tensor:
        if self._records_in_place(op, source):
            return self._rebase(op, ops.Copy, self._history(copy=False), self._operand(source))
        self.data[...] = self._plain(source)
        return self._bumped()

    def _records_in_place(self, op: str, *sources: Any) -> bool:
        """Whether the in-place op `op` must rebase self's history onto itself; refuses the cases
        that cannot be recorded: a leaf that requires grad, and a view of another tensor."""
        if not autograd.is_grad_enabled():
            return False
        if self.requires_grad and self.is_leaf:
            raise RuntimeError(
                f"{op}: a leaf tensor that requires grad is used in an in-place operation; "
                "wrap the update in `with minigrad.no_grad():`"
            )
        if not (self.requires_grad or any(isinstance(s, Tensor) and s.requires_grad for s in sources)):
            return False
        if self.data.base is not None:
            raise RuntimeError(
                f"{op}: this tensor (shape {self.shape}) shares its memory with another tensor (it "
                "was made by indexing, reshape or transpose) and the op must record a gradient; "
                "writing into it would change the other tensor behind its graph's back. Use the "
                "out-of-place op (y = y * 3), or clone() the view first."
            )
        _check_can_require_grad(self.data)
        return True

    def _history(self, copy: bool) -> Tensor:
        """A stand-in for self as it is now, for the op that rebases it: the same grad_fn, and a
        copy of the values when that op's backward reads them (self.data is about to change)."""
        old = Tensor._wrap(self.data.copy() if copy else self.data, requires_grad=self.requires_grad)
        old.grad_fn = self.grad_fn
        return old

    def _operand(self, other: Any) -> Any:
        """A tensor stays a tensor (its gradient is recorded); anything else takes self's dtype."""
        return other if isinstance(other, Tensor) else np.asarray(other, dtype=self.dtype)

    def _plain(self, other: Any) -> np.ndarray:
        return np.asarray(as_array(other), dtype=self.dtype)

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

    # ---- arithmetic -------------------------------------------------------------------------
    def _lift(self, other: Any) -> Any:
        """Python scalars take this tensor's dtype, so float32 stays float32 (as in PyTorch)."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, (int, float, bool)):
            return np.asarray(other, dtype=self.dtype)
        return np.asarray(other)

    def __add__(self, other: Any) -> Tensor:
        return ops.Add.apply(self, self._lift(other))

    def __radd__(self, other: Any) -> Tensor:
        return ops.Add.apply(self._lift(other), self)

    def __sub__(self, other: Any) -> Tensor:
        return ops.Sub.apply(self, self._lift(other))

    def __rsub__(self, other: Any) -> Tensor:
        return ops.Sub.apply(self._lift(other), self)

    def __mul__(self, other: Any) -> Tensor:
        return ops.Mul.apply(self, self._lift(other))

    def __rmul__(self, other: Any) -> Tensor:
        return ops.Mul.apply(self._lift(other), self)

    def __truediv__(self, other: Any) -> Tensor:
        return ops.Div.apply(self, self._lift(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        return ops.Div.apply(self._lift(other), self)

    def __pow__(self, exponent: float) -> Tensor:
        if isinstance(exponent, Tensor) or np.ndim(exponent) != 0:
            raise TypeError("** supports a scalar exponent only (tensor ** 2.0); use exp/log otherwise")
        return ops.Pow.apply(self, exponent=float(exponent))

    def __matmul__(self, other: Any) -> Tensor:
        return ops.MatMul.apply(self, self._lift(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return ops.MatMul.apply(self._lift(other), self)

    def __neg__(self) -> Tensor:
        return ops.Neg.apply(self)

    # comparisons give plain boolean arrays: they have no gradient
    def __eq__(self, other: Any) -> np.ndarray:  # type: ignore[override]
        return self.data == np.asarray(as_array(other))

    def __lt__(self, other: Any) -> np.ndarray:
        return self.data < np.asarray(as_array(other))

    def __gt__(self, other: Any) -> np.ndarray:
        return self.data > np.asarray(as_array(other))

    __hash__ = object.__hash__

    # ---- reductions -------------------------------------------------------------------------
    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return ops.Sum.apply(self, axis=_axis(axis), keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return ops.Mean.apply(self, axis=_axis(axis), keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return ops.Max.apply(self, axis=_axis(axis), keepdims=keepdims)

    # ---- elementwise ------------------------------------------------------------------------
    def exp(self) -> Tensor:
        return ops.Exp.apply(self)

    def log(self) -> Tensor:
        return ops.Log.apply(self)

    def tanh(self) -> Tensor:
        return ops.Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return ops.Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return ops.ReLU.apply(self)

    def gelu(self, approximate: str = "none") -> Tensor:
        return ops.GELU.apply(self, approximate=approximate)

    def softmax(self, axis: int = -1) -> Tensor:
        return ops.Softmax.apply(self, axis=axis)

    def log_softmax(self, axis: int = -1) -> Tensor:
        return ops.LogSoftmax.apply(self, axis=axis)

    # ---- shape ------------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        return self._view(lambda base: ops.Reshape.apply(base, shape=shape))

    view = reshape

    def permute(self, *dims: Any) -> Tensor:
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        if sorted(d % self.ndim for d in dims) != list(range(self.ndim)):
            raise ValueError(f"permute(): dims {dims} are not a permutation of {self.ndim} axes")
        dims = tuple(d % self.ndim for d in dims)
        return self._view(lambda base: ops.Permute.apply(base, dims=dims))

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        """Swap two axes. As in PyTorch, a 0-d tensor counts as having one axis (-1 or 0)."""
        axes = max(self.ndim, 1)
        for dim in (dim0, dim1):
            if not -axes <= dim < axes:
                raise IndexError(
                    f"transpose(): dimension {dim} is out of range for a tensor of shape "
                    f"{self.shape} (expected in [{-axes}, {axes - 1}]); a 1-D tensor has no "
                    "second axis to swap with (its .T is itself)"
                )
        if self.ndim == 0:
            return self.permute(())
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(dims)

    swapaxes = transpose

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def __getitem__(self, index: Any) -> Tensor:
        index = _index_array(index)
        return self._view(lambda base: ops.GetItem.apply(base, index=index))

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


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _index_array(index: Any) -> Any:
    """Tensors inside an index become their arrays (an index has no gradient)."""
    if isinstance(index, tuple):
        return tuple(_index_array(i) for i in index)
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, list):
        return np.asarray(index)
    return index


# ---- factories --------------------------------------------------------------------------------

def tensor(data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None) -> Tensor:
    """A new leaf tensor; copies `data`. Python floats give float32, numpy arrays keep their dtype."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, name=name)


def _shape(shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def zeros(*shape: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def ones(*shape: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_shape(shape), dtype=dtype), requires_grad=requires_grad)


def randn(*shape: Any, rng: Any = None, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    """Standard normal draws; `rng` is a seed or a numpy Generator, so results repeat."""
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return Tensor(generator.standard_normal(_shape(shape)).astype(dtype), requires_grad=requires_grad)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if dtype is None:
        dtype = np.float32 if values.dtype.kind == "f" else np.int64
    return Tensor(values.astype(dtype), requires_grad=requires_grad)
