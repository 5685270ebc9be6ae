"""Tensor: a numpy array that remembers how it was made, so gradients can flow back.

This file is the core: making a tensor, its gradient and `backward`, and the arithmetic
operators, each of which calls an op (ops/). The rest of the class lives beside it, one concern a
file, and is mixed in:

    tensor_maths.py    comparisons, reductions (sum, max, var ...), elementwise maths (exp, tanh ...)
    tensor_layout.py   shapes, views, indexing and dtype conversions (reshape, t[i], to ...)
    tensor_inplace.py  in-place updates (+=, add_, t[i] = v), kept right when a graph reads them

`Function.apply` (function.py) makes the tensors that ops return.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import graph, ops
from minigrad.engine.arguments import check_can_require_grad
from minigrad.engine.arrays import Array, as_array
from minigrad.engine.checks import ArgumentError, ShapeError
from minigrad.engine.dtypes import is_number, result_type
from minigrad.engine.graph import AccumulateGrad, Node
from minigrad.engine.random import as_generator
from minigrad.engine.tensor_inplace import TensorInPlace
from minigrad.engine.tensor_layout import Size, TensorLayout
from minigrad.engine.tensor_maths import TensorMaths, promote, raise_shape_error

if TYPE_CHECKING:
    from minigrad.engine.function import Function


def _infer_array(data: Any, dtype: Any = None) -> Array:
    """Dtypes as PyTorch infers them: numpy arrays keep theirs; Python floats become float32."""
    data = as_array(data)
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


class VersionCounter:
    """How many times a tensor's array was changed in place; shared by a tensor and its views."""

    value = 0  # a class-level default, overridden on the first bump: making one runs no Python


class Tensor(TensorMaths, TensorLayout, TensorInPlace):
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

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None):
        self.data: Array = _infer_array(data, dtype)
        self._version_counter = VersionCounter()  # bumped by in-place ops, checked by backward
        if name is not None:
            self.name = name
        if requires_grad:
            check_can_require_grad(self.data)
            self.requires_grad = True

    @classmethod
    def _wrap(cls, array: Any, requires_grad: bool = False) -> Tensor:
        """A tensor around an op's result array, without copying or inferring dtype."""
        t = cls.__new__(cls)
        t.data = array if type(array) is np.ndarray else np.asarray(array)
        t._version_counter = VersionCounter()
        if requires_grad:
            t.requires_grad = True
        return t

    def _new(self, array: Any) -> Tensor:
        """A plain tensor (not of a subclass such as Parameter) around `array`, with no history."""
        return Tensor._wrap(array)

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
    def size(self) -> Size:
        """numpy's `t.size` (the element count, an int) that PyTorch's `t.size()` can also call."""
        return Size(self.data.shape)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def __len__(self) -> int:
        return len(self.data)

    def numpy(self) -> Array:
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

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
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
            check_can_require_grad(self.data)
        if not self.is_leaf:
            raise RuntimeError("requires_grad_(): only a leaf tensor's flag can be changed")
        self.requires_grad = requires_grad
        return self

    # ---- arithmetic -------------------------------------------------------------------------
    def _operands(self, other: Any, reflected: bool = False, floating: bool = False) -> tuple[Any, Any]:
        """(self, other) as the op's operands, in the dtype PyTorch's promotion gives (dtypes.py):
        float32 meets a Python number as float32, an int tensor times 0.5 is float32."""
        dtype = self.data.dtype
        if dtype.kind == "f" and type(other) in (float, int, bool):  # x * 0.5: the common cases first
            pair: tuple[Any, Any] = self, np.asarray(other, dtype=dtype)
        elif isinstance(other, Tensor) and other.data.dtype is dtype and (dtype.kind == "f" or not floating):
            pair = self, other
        else:
            pair = promote(self, other, floating)  # floating: true division of ints gives floats
        return (pair[1], pair[0]) if reflected else pair

    def _arithmetic(self, op: type[Function], other: Any, reflected: bool = False,
                    floating: bool = False) -> Tensor:
        """op on (self, other), or (other, self) when reflected, promoted as `_operands` says.
        A half tensor meets a number (or a 0-d tensor) at float32 precision and only the result
        is rounded, as in PyTorch: for x = 0.001, x * 1e5 is 100.06, where rounding 1e5 to
        float16 first (65504 is its largest) would give inf."""
        if self.data.dtype.char == "e" and np.ndim(other) == 0:  # "e": float16, either byte order
            return self.float()._arithmetic(op, other, reflected, floating).half()
        operands = self._operands(other, reflected, floating)
        try:  # broadcasting(op, ...) written out: this runs for every `a * b`, one call fewer
            return op.apply(*operands)
        except ValueError as error:
            raise_shape_error(error, op.__name__.lower(), operands)
            raise

    def __add__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Add, other)

    def __radd__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Add, other, reflected=True)

    def __sub__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Sub, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Sub, other, reflected=True)

    def __mul__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Mul, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Mul, other, reflected=True)

    def __truediv__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Div, other, floating=True)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Div, other, reflected=True, floating=True)

    def __floordiv__(self, other: Any) -> Tensor:
        """self / other rounded down (Python's //); no gradient flows through it (G 0)."""
        return self._arithmetic(ops.RoundedDivide, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.RoundedDivide, other, reflected=True)

    def __mod__(self, other: Any) -> Tensor:
        """The remainder of //, with other's sign (Python's %, torch.remainder)."""
        return self._arithmetic(ops.Remainder, other)

    def __rmod__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.Remainder, other, reflected=True)

    def __pow__(self, exponent: Any) -> Tensor:
        if isinstance(exponent, Tensor) or np.ndim(exponent) != 0:
            return self._pow_tensor(exponent)  # tensor ** tensor (tensor_maths.py)
        base, n = self._operands(exponent)  # an int tensor ** 0.5 is float32; ** 2 stays an int
        if base.dtype.kind in "biu" and exponent < 0:  # an int exponent (a float made base float)
            raise ArgumentError(f"pow: an integer tensor ({self.dtype}) to a negative integer power "
                                f"({exponent}) is not allowed (as PyTorch); use a float tensor, "
                                f"e.g. x.float() ** {exponent}")
        return ops.Pow.apply(base, exponent=n.item())

    def __matmul__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.MatMul, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return self._arithmetic(ops.MatMul, other, reflected=True)

    def __neg__(self) -> Tensor:
        return ops.Neg.apply(self)

    __hash__ = object.__hash__  # tensors are dict keys by identity (== is elementwise)


def share_version_with_viewed_input(result: Tensor, inputs: list[Tensor]) -> None:
    """A result that is a view of an input's array (reshape, permute, basic slicing) shares that
    input's version counter, as in PyTorch: a change in place through either is seen by both."""
    owner = result.data.base  # numpy views point at the array that owns the memory
    for a in inputs:
        if a.data is owner or a.data.base is owner:
            result._version_counter = a._version_counter
            result._views_input = True  # so an in-place op that records a gradient refuses it
            return


# ---- factories --------------------------------------------------------------------------------

def tensor(data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None) -> Tensor:
    """A new leaf tensor; copies `data`. Python floats give float32, numpy arrays keep their dtype."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, name=name)


def _shape(shape: tuple[Any, ...], who: str = "tensor") -> tuple[int, ...]:
    """The sizes given one by one or as one tuple, as ints; a negative size is refused (numpy's
    ValueError and PyTorch's RuntimeError both catch it)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    sizes = tuple(int(s) for s in shape)
    if any(s < 0 for s in sizes):
        raise ShapeError(f"{who}: size {sizes} has a negative dimension; sizes must be >= 0")
    return sizes


def zeros(*shape: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_shape(shape, "zeros"), dtype=dtype), requires_grad=requires_grad)


def ones(*shape: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_shape(shape, "ones"), dtype=dtype), requires_grad=requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` (a tuple, or an int) with every entry fill_value. Its dtype, when
    not given, follows the value as PyTorch's does: a Python float gives float32, an int int64,
    a bool bool."""
    value = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    if not is_number(value):
        raise TypeError(f"full: fill_value must be a number, got {type(fill_value).__name__}")
    dtype = result_type(value) if dtype is None else dtype
    shape = _shape((size,), "full")
    return Tensor(np.full(shape, value, dtype=dtype), requires_grad=requires_grad)


def full_like(other: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of other's shape and dtype (or `dtype`) with every entry fill_value."""
    return full(np.shape(other), fill_value, dtype=as_array(other).dtype if dtype is None else dtype,
                requires_grad=requires_grad)


def zeros_like(other: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full_like(other, 0, dtype=dtype, requires_grad=requires_grad)


def ones_like(other: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full_like(other, 1, dtype=dtype, requires_grad=requires_grad)


def randn(*shape: Any, rng: Any = None, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    """Standard normal draws; `rng` is a seed or a numpy Generator, so results repeat."""
    generator = as_generator(rng, "randn")
    values = generator.standard_normal(_shape(shape, "randn")).astype(dtype)
    return Tensor(values, requires_grad=requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    """The n x m identity matrix (n x n when m is None): ones on the main diagonal (torch.eye)."""
    m = n if m is None else m
    for name, size in (("n", n), ("m", m)):
        if int(size) < 0:
            raise ArgumentError(f"eye: {name} must be >= 0, got {size}")
    return Tensor(np.eye(int(n), int(m), dtype=dtype), requires_grad=requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = np.float32,
             requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced numbers from start to end, both included (torch.linspace); an
    integer dtype truncates each towards 0, as PyTorch's does."""
    if int(steps) < 0:
        raise ArgumentError(f"linspace: steps must be >= 0, got {steps}")
    if np.dtype(dtype) == np.bool_:
        raise ArgumentError("linspace: dtype bool is not supported (as PyTorch); use a number dtype")
    return Tensor(np.linspace(start, end, int(steps)).astype(dtype), requires_grad=requires_grad)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if dtype is None:
        dtype = np.float32 if values.dtype.kind == "f" else np.int64
    return Tensor(values.astype(dtype), requires_grad=requires_grad)
