"""Tensor: a numpy array that remembers how it was made, so gradients can flow back.

Also `Function.apply`, which makes tensors: it runs an op's forward on arrays and records the
op's node in the backward graph (graph.py), which sees only nodes and arrays.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from minigrad.engine import grad_mode, graph, ops
from minigrad.engine.function import Context, Function
from minigrad.engine.graph import AccumulateGrad, FunctionNode, Node


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

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Tensor:
    """A numpy array `data` with an optional gradient.

    A tensor made by the user is a *leaf*; one made by an op has `grad_fn`, the node of the
    backward graph that will send its gradient on to the op's inputs.
    """

    __array_priority__ = 1000  # `ndarray + Tensor` calls Tensor.__radd__, not numpy's add

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None):
        self.data: np.ndarray = _infer_array(data, dtype)
        self.grad: Any = None  # ndarray of self.shape, or a RowSparse for lookup tables
        self.grad_fn: Node | None = None
        self.name = name
        self._version_counter = VersionCounter()  # bumped by in-place ops, checked by backward
        self._accumulate: weakref.ref[AccumulateGrad] | None = None
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
        t._version_counter = VersionCounter()
        t._accumulate = None
        t.requires_grad = requires_grad
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

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.data if dtype is None else self.data.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.data)

    # ---- autograd ---------------------------------------------------------------------------
    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) * grad into every leaf's `.grad`."""
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

    # ---- in-place updates (bump the version so a pending backward notices) -----------------
    def _inplace(self, op: str) -> None:
        if grad_mode.is_grad_enabled() and self.requires_grad and self.is_leaf:
            raise RuntimeError(
                f"{op}: a leaf tensor that requires grad is used in an in-place operation; "
                "wrap the update in `with minigrad.no_grad():`"
            )
        self._version += 1

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        self._inplace("add_")
        self.data += alpha * np.asarray(as_array(other), dtype=self.dtype)
        return self

    def sub_(self, other: Any) -> Tensor:
        return self.add_(other, alpha=-1.0)

    def mul_(self, other: Any) -> Tensor:
        self._inplace("mul_")
        self.data *= np.asarray(as_array(other), dtype=self.dtype)
        return self

    def zero_(self) -> Tensor:
        self._inplace("zero_")
        self.data[...] = 0
        return self

    def copy_(self, other: Any) -> Tensor:
        self._inplace("copy_")
        self.data[...] = np.asarray(as_array(other), dtype=self.dtype)
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        self._inplace("__setitem__")
        self.data[_index_array(index)] = np.asarray(as_array(value), dtype=self.dtype)

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
        return ops.Reshape.apply(self, shape=tuple(int(s) for s in shape))

    view = reshape

    def permute(self, *dims: Any) -> Tensor:
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        if sorted(d % self.ndim for d in dims) != list(range(self.ndim)):
            raise ValueError(f"permute(): dims {dims} are not a permutation of {self.ndim} axes")
        return ops.Permute.apply(self, dims=tuple(d % self.ndim for d in dims))

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(dims)

    swapaxes = transpose

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def __getitem__(self, index: Any) -> Tensor:
        return ops.GetItem.apply(self, index=_index_array(index))


# ---- Function.apply: from tensors to arrays and back, recording the graph -------------------------

def _apply(cls: type[Function], *args: Any, **kwargs: Any) -> Tensor:
    """Run `cls.forward` on the inputs' arrays; when an input requires grad, record its node."""
    arrays, needs = [], []  # one pass over the inputs: unwrap tensors, note which need a gradient
    for a in args:
        if isinstance(a, Tensor):
            arrays.append(a.data)
            needs.append(a.requires_grad)
        else:
            arrays.append(a)
            needs.append(False)
    ctx = Context()
    ctx.needs_input_grad = tuple(needs)
    out = cls.forward(ctx, *arrays, **kwargs)
    requires_grad = True in needs and grad_mode.is_grad_enabled()
    result = Tensor._wrap(out, requires_grad=requires_grad)
    _share_version_with_viewed_input(result, args)
    if requires_grad:
        edges = tuple([a._grad_node() if need else None for a, need in zip(args, needs)])
        node = FunctionNode(cls, ctx, edges, result.shape)
        if ctx._saved:
            ctx.watch_versions([a for a in args if isinstance(a, Tensor)] + [result])
        if grad_mode.is_anomaly_enabled():
            graph.record_forward_trace(node)
        result.grad_fn = node
    return result


Function.apply = classmethod(_apply)  # type: ignore[assignment]


def _share_version_with_viewed_input(result: Tensor, args: tuple) -> None:
    """A result that is a view of an input's array (reshape, permute, basic slicing) shares that
    input's version counter, as in PyTorch: a change in place through either is seen by both."""
    data = result.data
    owner = data if data.base is None else data.base  # numpy views point at the array that owns
    for a in args:
        if isinstance(a, Tensor) and (a.data is owner or a.data.base is owner):
            result._version_counter = a._version_counter
            return


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
