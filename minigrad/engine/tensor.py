"""Tensor: a numpy array that remembers how it was made, so gradients can flow back.

Also `Function.apply`, which makes tensors: it runs an op's forward on arrays and records the
op's node in the backward graph (graph.py), which sees only nodes and arrays.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine import fast, grad_mode, graph, ops
from minigrad.engine.function import Context, Function
from minigrad.engine.graph import AccumulateGrad, FunctionNode, Node
from minigrad.engine.random import as_generator


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


class VersionCounter:
    """How many times a tensor's array was changed in place; shared by a tensor and its views."""

    value = 0  # a class-level default, overridden on the first bump: making one runs no Python


class Tensor:
    """A numpy array `data` with an optional gradient.

    A tensor made by the user is a *leaf*; one made by an op has `grad_fn`, the node of the
    backward graph that will send its gradient on to the op's inputs.
    """

    __array_priority__ = 1000  # `ndarray + Tensor` calls Tensor.__radd__, not numpy's add
    # Class-level defaults, overridden per tensor only when set: most tensors an op makes never
    # get a name, a .grad or views, and one op costs a few microseconds.
    grad: Any = None  # ndarray of self.shape, or a RowSparse for lookup tables
    grad_fn: Node | None = None
    name: str | None = None
    requires_grad = False
    _accumulate: weakref.ref[AccumulateGrad] | None = None  # a leaf's AccumulateGrad, while alive
    # Views (indexing, reshape, transpose that share memory), as PyTorch tracks them: a view keeps
    # its base (the tensor that is not itself a view) and the ops that remake it from that base;
    # the base knows its views weakly.
    _views: list[weakref.ref] | None = None
    _base: Tensor | None = None
    _from_base: Callable[[Tensor], Tensor] | None = None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None):
        self.data: np.ndarray = _infer_array(data, dtype)
        self._version_counter = VersionCounter()  # bumped by in-place ops, checked by backward
        if name is not None:
            self.name = name
        if requires_grad:
            _check_can_require_grad(self.data)
            self.requires_grad = True

    @classmethod
    def _wrap(cls, array: np.ndarray, requires_grad: bool = False) -> Tensor:
        """A tensor around an op's result array, without copying or inferring dtype."""
        t = cls.__new__(cls)
        t.data = array if type(array) is np.ndarray else np.asarray(array)
        t._version_counter = VersionCounter()
        if requires_grad:
            t.requires_grad = True
        return t

    @property
    def _version(self) -> int:
        return self._version_counter.value

    @_version.setter
    def _version(self, value: int) -> None:
        self._version_counter.value = value

    def _grad_node(self) -> Node:
        """Where gradient for this tensor goes: its grad_fn, or the leaf's one AccumulateGrad.

        A leaf keeps its AccumulateGrad by weak reference (the graph's edges keep it alive): every
        op reading the leaf while a graph is alive shares that one node, and a leaf and its node
        never hold each other, so both are freed by reference counting alone.
        """
        if self.grad_fn is not None:
            return self.grad_fn
        node = self._accumulate() if self._accumulate is not None else None
        if node is None:
            node = AccumulateGrad(self)
            self._accumulate = weakref.ref(node)
        return node

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
    def size(self) -> Size:
        """numpy's `t.size` (the element count, an int) that PyTorch's `t.size()` can also call."""
        return Size(self.data.shape)

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
        """The same values, cut from the graph (shares memory and the version counter, like PyTorch)."""
        detached = Tensor._wrap(self.data)
        detached._version_counter = self._version_counter
        return detached

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
    def backward(self, gradient: Any = None, retain_graph: bool = False, *, grad: Any = None) -> None:
        """Accumulate d(self)/d(leaf) * gradient into every leaf's `.grad` (`grad=` is the same)."""
        if grad is not None and gradient is not None:
            raise TypeError("backward(): got both gradient= and grad=; they are one argument")
        grad = grad if gradient is None else gradient
        if not self.requires_grad:
            raise RuntimeError(
                "backward(): this tensor does not require grad and has no grad_fn; did you create "
                "it under no_grad(), or forget requires_grad=True on a leaf?"
            )
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward(): grad can be implicitly created only for a single-element "
                    f"output, but the output has shape {self.shape}; pass grad= of that shape."
                )
            grad = np.ones_like(self.data)
        else:
            grad = np.array(as_array(grad), dtype=self.dtype)  # a copy the walk may add into
            if grad.shape != self.shape:
                raise ValueError(
                    f"backward(): grad has shape {grad.shape} but the output has shape {self.shape}"
                )
        graph.backward(self._grad_node(), grad, retain_graph=retain_graph)

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
        if not grad_mode.is_grad_enabled():
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
            lifted = fast.scalar(other, self.data.dtype)
            return lifted if lifted is not None else np.asarray(other, dtype=self.data.dtype)
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
    def sum(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        axis, keepdims = _axis_args("sum", axis, keepdims, dim, keepdim)
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        axis, keepdims = _axis_args("mean", axis, keepdims, dim, keepdim)
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        axis, keepdims = _axis_args("max", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims)

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

    def softmax(self, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        """Along `axis` (or `dim`), the last one by default."""
        return ops.Softmax.apply(self, axis=_softmax_axis("softmax", axis, dim))

    def log_softmax(self, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        return ops.LogSoftmax.apply(self, axis=_softmax_axis("log_softmax", axis, dim))

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

    # ==== PyTorch spellings and transformer ops (TinyGPT) ====================================
    # Appended as one section: numpy's names above stay; these are the names a learner
    # brings from PyTorch, with PyTorch's meaning.
    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return self.data.size

    def tolist(self) -> Any:
        return self.data.tolist()

    def contiguous(self) -> Tensor:
        """This tensor if its array is C-contiguous, else a contiguous copy (with gradient)."""
        return self if self.data.flags.c_contiguous else ops.Clone.apply(self)

    def sqrt(self) -> Tensor:
        return ops.Sqrt.apply(self)

    def abs(self) -> Tensor:
        return ops.Abs.apply(self)

    def argmax(self, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None) -> Tensor:
        """Index of the largest entry along `dim` (of the flattened tensor if None); no gradient."""
        dim, keepdim = _axis_args("argmax", axis, keepdim, dim, None)
        if dim is None:
            return Tensor._wrap(np.asarray(self.data.argmax(), dtype=np.int64))
        dim = _check_dim("argmax", dim, self.shape)
        return Tensor._wrap(self.data.argmax(axis=dim, keepdims=keepdim).astype(np.int64))

    def __ne__(self, other: Any) -> np.ndarray:  # type: ignore[override]
        return self.data != np.asarray(as_array(other))

    def __le__(self, other: Any) -> np.ndarray:
        return self.data <= np.asarray(as_array(other))

    def __ge__(self, other: Any) -> np.ndarray:
        return self.data >= np.asarray(as_array(other))

    def unsqueeze(self, dim: int) -> Tensor:
        """A new axis of size 1 at `dim` (in [-ndim - 1, ndim], as PyTorch)."""
        dim = _check_dim("unsqueeze", dim, self.shape + (1,))  # one more place than axes
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Tensor:
        """Drop axes of size 1: all of them, or those in `dim` (a named axis of another size stays,
        as in PyTorch)."""
        if dim is None:
            dims = set(range(self.ndim))
        else:
            dims = {_check_dim("squeeze", d, self.shape) for d in (dim if isinstance(dim, tuple) else (dim,))}
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge axes start_dim..end_dim (inclusive) into one."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = (_check_dim("flatten", d, self.shape) for d in (start_dim, end_dim))
        if start > end:
            raise ValueError(f"flatten(): start_dim={start_dim} comes after end_dim={end_dim} "
                             f"for a tensor of shape {self.shape}")
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """Entries start..start + length - 1 along `dim`."""
        dim = _check_dim("narrow", dim, self.shape)
        size = self.shape[dim]
        if not (0 <= start <= size and 0 <= length <= size - start):
            raise IndexError(f"narrow(): start={start}, length={length} does not fit dim {dim} of "
                             f"size {size} (shape {self.shape})")
        start, length = int(start), int(length)
        return self._view(lambda base: ops.Narrow.apply(base, axis=dim, start=start, length=length))

    def split(self, split_size_or_sections: int | list[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces along `dim`: of size split_size_or_sections each (the last may be smaller), or of
        the listed sizes, which must add up to the axis."""
        dim = _check_dim("split", dim, self.shape)
        size = self.shape[dim]
        if isinstance(split_size_or_sections, (int, np.integer)):
            step = int(split_size_or_sections)
            if step < 1:
                raise ValueError(f"split(): split_size must be a positive int, got {step}")
            sections = [min(step, size - start) for start in range(0, size, step)] or [0]
        else:
            sections = [int(n) for n in split_size_or_sections]
            if sum(sections) != size or min(sections, default=0) < 0:
                raise ValueError(f"split(): sections {sections} add up to {sum(sections)}, but dim {dim} "
                                 f"has size {size} (shape {self.shape})")
        starts = np.cumsum([0] + sections[:-1])
        return tuple(self.narrow(dim, int(a), n) for a, n in zip(starts, sections))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """At most `chunks` pieces of equal size along `dim` (the last may be smaller), as PyTorch."""
        if not isinstance(chunks, (int, np.integer)) or chunks < 1:
            raise ValueError(f"chunk(): chunks must be a positive int, got {chunks!r}")
        dim = _check_dim("chunk", dim, self.shape)
        return self.split(max(1, -(-self.shape[dim] // int(chunks))), dim)

    def masked_fill(self, mask: Any, value: float) -> Tensor:
        """`value` where mask is True; mask (bool) broadcasts to this tensor's shape. A value of
        -inf before a softmax gives those places probability exactly 0."""
        mask = np.asarray(as_array(mask))
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill(): mask must be a bool array, got dtype {mask.dtype}")
        if _broadcast_shape(mask.shape, self.shape) != self.shape:
            raise ValueError(f"masked_fill(): mask of shape {mask.shape} does not broadcast to the "
                             f"tensor's shape {self.shape}")
        return ops.MaskedFill.apply(self, mask, value=float(value))


class Size(int):
    """A tensor's element count (numpy's `t.size`) that also answers PyTorch's `t.size()`, the
    shape, and `t.size(dim)`, one axis's length."""

    shape: tuple[int, ...]

    def __new__(cls, shape: tuple[int, ...]) -> Size:
        count = super().__new__(cls, int(np.prod(shape, dtype=np.int64)))
        count.shape = tuple(shape)
        return count

    def __call__(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[_check_dim("size", dim, self.shape)]


def _check_dim(op: str, dim: Any, shape: tuple[int, ...]) -> int:
    """`dim` as an axis in [0, len(shape)), counted from the end when negative."""
    ndim = len(shape)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): dim must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}(): dim {dim} is out of range for shape {shape} (expected "
                         f"{-ndim} <= dim < {ndim})")
    return int(dim) % ndim


def _broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


# ---- Function.apply: from tensors to arrays and back, recording the graph -------------------------

def _apply(cls: type[Function], *args: Any, **kwargs: Any) -> Tensor:
    """Run `cls.forward` on the inputs' arrays; when an input requires grad, record its node."""
    arrays, needs, tensors = [], [], []  # one pass over the inputs: unwrap, note who needs grad
    for a in args:
        if isinstance(a, Tensor):
            arrays.append(a.data)
            needs.append(a.requires_grad)
            tensors.append(a)
        else:
            arrays.append(a)
            needs.append(False)
    ctx = Context()
    ctx.needs_input_grad = tuple(needs)
    result = Tensor._wrap(cls.forward(ctx, *arrays, **kwargs))
    if result.data.base is not None:  # a numpy view, maybe of an input's array
        _share_version_with_viewed_input(result, tensors)
    if True in needs and grad_mode.is_grad_enabled():
        edges = []
        for a, need in zip(args, needs):
            edges.append(a._grad_node() if need else None)
        result.grad_fn = FunctionNode(cls, ctx, tuple(edges), result.data.shape)
        result.requires_grad = True
        if ctx._saved:
            tensors.append(result)
            ctx.watch_versions(tensors)
        if grad_mode.is_anomaly_enabled():
            graph.record_forward_trace(result.grad_fn)
    return result


Function.apply = classmethod(_apply)  # type: ignore[assignment]


def _share_version_with_viewed_input(result: Tensor, inputs: list[Tensor]) -> None:
    """A result that is a view of an input's array (reshape, permute, basic slicing) shares that
    input's version counter, as in PyTorch: a change in place through either is seen by both."""
    owner = result.data.base  # numpy views point at the array that owns the memory
    for a in inputs:
        if a.data is owner or a.data.base is owner:
            result._version_counter = a._version_counter
            return


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _axis_args(op: str, axis: Any, keepdims: bool, dim: Any, keepdim: bool | None) -> tuple[Any, bool]:
    """numpy's axis=/keepdims= or PyTorch's dim=/keepdim= (one of each pair), as (axis, keepdims)."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}(): got both axis={axis!r} and dim={dim!r}; they are one argument")
        axis = dim
    if keepdim is not None:
        if keepdims:
            raise TypeError(f"{op}(): got both keepdims= and keepdim=; they are one argument")
        keepdims = keepdim
    return _axis(axis), bool(keepdims)


def _softmax_axis(op: str, axis: int | None, dim: int | None) -> int:
    axis = _axis_args(op, axis, False, dim, None)[0]
    return -1 if axis is None else axis


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
    generator = as_generator(rng, "randn")
    return Tensor(generator.standard_normal(_shape(shape)).astype(dtype), requires_grad=requires_grad)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if dtype is None:
        dtype = np.float32 if values.dtype.kind == "f" else np.int64
    return Tensor(values.astype(dtype), requires_grad=requires_grad)
