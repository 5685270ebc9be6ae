"""PyTorch's spellings: the names a learner brings from PyTorch, with PyTorch's meaning.

numpy's names (`t.shape`, `t.size`, `t.sum(axis=...)`) live on the Tensor itself; this class,
mixed into Tensor, adds PyTorch's (`t.dim()`, `t.numel()`, `t.size(1)`, `t.unsqueeze(0)`, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arguments import as_dtype, axis_args, broadcast_shape, check_dim
from minigrad.engine.dtypes import cast, promote, result_type
from minigrad.engine.seam import ops

Tensor = Any  # the class this is mixed into (tensor.py), named for the hints only


class PyTorchSpellings:
    """Mixed into Tensor."""

    data: np.ndarray

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
        return self._arg_extreme("argmax", dim, keepdim, axis)

    def argmin(self, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None) -> Tensor:
        """Index of the smallest entry along `dim` (of the flattened tensor if None); no gradient."""
        return self._arg_extreme("argmin", dim, keepdim, axis)

    def _arg_extreme(self, which: str, dim: Any, keepdim: bool, axis: Any) -> Tensor:
        dim, keepdim = axis_args(which, axis, keepdim, dim, None)
        if dim is None:
            return self._new(np.asarray(getattr(self.data, which)(), dtype=np.int64))
        dim = check_dim(which, dim, self.shape or (1,))  # a 0-d tensor has the one place 0
        if self.ndim == 0:
            return self._new(np.zeros((), np.int64))
        return self._new(getattr(self.data, which)(axis=dim, keepdims=keepdim).astype(np.int64))

    # ---- comparisons and logic: bool tensors that never require grad ----------------------
    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(np.not_equal, other)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(np.less_equal, other)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(np.greater_equal, other)

    def _compare(self, test: np.ufunc, other: Any) -> Tensor:
        return self._new(np.asarray(test(self.data, np.asarray(_array_of(other)))))

    def eq(self, other: Any) -> Tensor:
        return self._compare(np.equal, other)

    def ne(self, other: Any) -> Tensor:
        return self._compare(np.not_equal, other)

    def lt(self, other: Any) -> Tensor:
        return self._compare(np.less, other)

    def le(self, other: Any) -> Tensor:
        return self._compare(np.less_equal, other)

    def gt(self, other: Any) -> Tensor:
        return self._compare(np.greater, other)

    def ge(self, other: Any) -> Tensor:
        return self._compare(np.greater_equal, other)

    def _logic(self, op: str, combine: Any, *others: Any) -> Tensor:
        """A bitwise or logical op of bool (or int) tensors: no gradient; floats are refused."""
        arrays = [self.data, *(np.asarray(_array_of(o)) for o in others)]
        for a in arrays:
            if a.dtype.kind not in "biu":
                raise TypeError(f"{op}: needs bool or integer tensors, got dtype {a.dtype} (compare "
                                "first, e.g. (x > 0) {op} (x < 1))".replace("{op}", op))
        return self._new(np.asarray(combine(*arrays)))

    def __invert__(self) -> Tensor:
        return self._logic("~", np.invert)

    def __and__(self, other: Any) -> Tensor:
        return self._logic("&", np.bitwise_and, other)

    __rand__ = __and__

    def __or__(self, other: Any) -> Tensor:
        return self._logic("|", np.bitwise_or, other)

    __ror__ = __or__

    def __xor__(self, other: Any) -> Tensor:
        return self._logic("^", np.bitwise_xor, other)

    __rxor__ = __xor__

    def logical_not(self) -> Tensor:
        return self._new(np.logical_not(self.data))

    # ---- numbers and numpy's functions ------------------------------------------------------
    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """f"{loss:.3f}" formats the number of a one-element tensor, as PyTorch."""
        return format(self.item(), spec) if spec and self.data.size == 1 else object.__format__(self, spec)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        """numpy's functions (np.sum, np.mean, np.any, np.where, ...) read a tensor as its array
        and return plain arrays, outside the graph: `np.mean(pred == y)` is an accuracy, as when
        comparisons gave arrays. (Without this, numpy would call t.sum(dtype=..., out=...).)"""
        return func(*_arrays_in(args), **_arrays_in(kwargs))

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """True where every entry (along `dim`) is nonzero: a bool tensor."""
        axis = _reduce_axis("all", dim, self.shape)
        return self._new(np.asarray(self.data.all(axis=axis, keepdims=keepdim)))

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """True where some entry (along `dim`) is nonzero: a bool tensor."""
        axis = _reduce_axis("any", dim, self.shape)
        return self._new(np.asarray(self.data.any(axis=axis, keepdims=keepdim)))

    # ---- elementwise ------------------------------------------------------------------------
    def sin(self) -> Tensor:
        return ops.Sin.apply(self)

    def cos(self) -> Tensor:
        return ops.Cos.apply(self)

    def erf(self) -> Tensor:
        return ops.Erf.apply(self)

    def exp2(self) -> Tensor:
        return ops.Exp2.apply(self)

    def log2(self) -> Tensor:
        return ops.Log2.apply(self)

    def rsqrt(self) -> Tensor:
        return ops.Rsqrt.apply(self)

    def sign(self) -> Tensor:
        return ops.Sign.apply(self)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """min(max(self, min), max); each bound a number or a tensor (broadcast), or None. Where
        min > max the result is max, as PyTorch."""
        if min is None and max is None:
            raise RuntimeError("clamp(): at least one of min and max must be given (not both None)")
        dtype = result_type(self, *(bound for bound in (min, max) if bound is not None))  # as PyTorch
        return ops.Clamp.apply(*(None if x is None else cast(x, dtype) for x in (self, min, max)))

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Tensor:
        return self.clamp(max=max)

    def maximum(self, other: Any) -> Tensor:
        """The larger of self and other, elementwise; at a tie each gets half the gradient."""
        return ops.Maximum.apply(*promote(self, _check_tensor_like("maximum", other)))

    def minimum(self, other: Any) -> Tensor:
        """The smaller of self and other, elementwise; at a tie each gets half the gradient."""
        return ops.Minimum.apply(*promote(self, _check_tensor_like("minimum", other)))

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def _pow_tensor(self, exponent: Any) -> Tensor:
        """self ** exponent for an exponent that is a tensor or an array (tensor ** tensor)."""
        return ops.PowTensor.apply(*promote(self, exponent))

    def __rpow__(self, base: Any) -> Tensor:
        """base ** self for a number (or array) base: d/dself = G base^self log(base)."""
        return ops.PowTensor.apply(*promote(base, self))

    # ---- reductions -------------------------------------------------------------------------
    def min(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        """The smallest entry (along `axis`/`dim`): values only, as `max`; ties share the gradient."""
        axis, keepdims = axis_args("min", axis, keepdims, dim, keepdim)
        return ops.Min.apply(self, axis=axis, keepdims=keepdims)

    def amax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return ops.Max.apply(self, axis=_reduce_axis("amax", dim, self.shape), keepdims=keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return ops.Min.apply(self, axis=_reduce_axis("amin", dim, self.shape), keepdims=keepdim)

    def prod(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The product of all entries, or along one `dim`; exact gradients where entries are 0."""
        if dim is not None:
            if isinstance(dim, (tuple, list)):
                raise TypeError(f"prod(): dim must be one int (as PyTorch), got {dim!r}")
            dim = _reduce_axis("prod", dim, self.shape)
        return ops.Prod.apply(self, axis=dim, keepdims=keepdim)

    def logsumexp(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """log sum exp over `dim` (an int or a tuple; PyTorch requires one, here None means all)."""
        return ops.LogSumExp.apply(self, axis=_reduce_axis("logsumexp", dim, self.shape), keepdims=keepdim)

    def var(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: float | None = None) -> Tensor:
        """sum (x - mean)^2 / (n - correction) over `dim`; correction=1 (unbiased=True) by default,
        as PyTorch; unbiased=False is correction=0."""
        return ops.Var.apply(self, axis=_reduce_axis("var", dim, self.shape),
                             correction=_correction("var", unbiased, correction), keepdims=keepdim)

    def std(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: float | None = None) -> Tensor:
        """The square root of `var` (same arguments)."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    # ---- dtype conversions ------------------------------------------------------------------
    def to(self, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False) -> Tensor:
        """This tensor in another dtype (`t.to(mg.float64)`, `t.to(other_tensor)`); devices other
        than "cpu" are refused. Float-to-float keeps the gradient; the same dtype returns self
        unless copy=True, as PyTorch."""
        for arg in args:
            if isinstance(arg, PyTorchSpellings):
                arg = arg.dtype
            if isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda", "mps", "meta"):
                device = arg
            elif dtype is None:
                dtype = arg
            else:
                raise TypeError(f"to(): got two dtypes, {dtype!r} and {arg!r}")
        if device is not None and str(device) != "cpu":
            raise ValueError(f"to(): minigrad runs on the CPU only, got device={device!r}")
        if dtype is None:
            return self.clone() if copy else self
        return self._cast(as_dtype("to", dtype), copy)

    def type(self, dtype: Any = None) -> Any:
        """With no argument the dtype's name (e.g. 'float32'); with one, `to(dtype)`."""
        return str(self.dtype) if dtype is None else self._cast(as_dtype("type", dtype), False)

    def float(self) -> Tensor:
        return self._cast(np.dtype(np.float32), False)

    def double(self) -> Tensor:
        return self._cast(np.dtype(np.float64), False)

    def half(self) -> Tensor:
        return self._cast(np.dtype(np.float16), False)

    def long(self) -> Tensor:
        return self._cast(np.dtype(np.int64), False)

    def int(self) -> Tensor:
        return self._cast(np.dtype(np.int32), False)

    def bool(self) -> Tensor:
        return self._cast(np.dtype(np.bool_), False)

    def _cast(self, dtype: np.dtype, copy: bool) -> Tensor:
        if dtype == self.dtype:
            return self.clone() if copy else self
        if dtype.kind == "f" and self.dtype.kind == "f":
            return ops.Cast.apply(self, dtype=dtype)  # the gradient goes back as self's dtype
        return self._new(self.data.astype(dtype))  # to or from ints and bools: no gradient

    def unsqueeze(self, dim: int) -> Tensor:
        """A new axis of size 1 at `dim` (in [-ndim - 1, ndim], as PyTorch)."""
        dim = check_dim("unsqueeze", dim, self.shape + (1,))  # one more place than axes
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Tensor:
        """Drop axes of size 1: all of them, or those in `dim` (a named axis of another size stays,
        as in PyTorch)."""
        if self.ndim == 0:  # a 0-d tensor has one place, 0 (or -1): squeezing it returns it
            for d in () if dim is None else (dim if isinstance(dim, tuple) else (dim,)):
                check_dim("squeeze", d, (1,))
            return self.reshape(())
        if dim is None:
            dims = set(range(self.ndim))
        else:
            dims = {check_dim("squeeze", d, self.shape) for d in (dim if isinstance(dim, tuple) else (dim,))}
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge axes start_dim..end_dim (inclusive) into one."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = (check_dim("flatten", d, self.shape) for d in (start_dim, end_dim))
        if start > end:
            raise ValueError(f"flatten(): start_dim={start_dim} comes after end_dim={end_dim} "
                             f"for a tensor of shape {self.shape}")
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def unflatten(self, dim: int, sizes: Any) -> Tensor:
        """Axis `dim` split into `sizes` (whose product is its length; one may be -1)."""
        dim = check_dim("unflatten", dim, self.shape)
        sizes = tuple(int(n) for n in sizes)
        known = int(np.prod([n for n in sizes if n != -1], dtype=np.int64))
        if not sizes or sizes.count(-1) > 1 or (-1 not in sizes and known != self.shape[dim]) or \
                (-1 in sizes and (known == 0 or self.shape[dim] % known)):
            raise ValueError(f"unflatten(): sizes {sizes} do not split dim {dim} of size "
                             f"{self.shape[dim]} (shape {self.shape})")
        return self.reshape(self.shape[:dim] + sizes + self.shape[dim + 1:])

    def flip(self, *dims: Any) -> Tensor:
        """Reversed along each of `dims` (a copy, as PyTorch)."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        axes = tuple(check_dim("flip", d, self.shape or (1,)) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"flip(): dims {dims} name an axis twice")  # RuntimeError, as PyTorch
        return ops.Flip.apply(self, axes=axes if self.ndim else ())

    def expand(self, *sizes: Any) -> Tensor:
        """A read-only view with size-1 axes stretched to `sizes` (-1 keeps an axis), new axes
        in front: no copy; the gradient sums back over what was stretched."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        sizes = tuple(int(n) for n in sizes)
        added = len(sizes) - self.ndim
        if added < 0:
            raise ValueError(f"expand(): {len(sizes)} sizes {sizes} are fewer than the tensor's "
                             f"{self.ndim} axes (shape {self.shape})")
        shape = tuple(self.shape[i - added] if n == -1 and i >= added else n for i, n in enumerate(sizes))
        if any(n < 0 for n in shape) or broadcast_shape(self.shape, shape) != shape:
            raise ValueError(f"expand(): shape {self.shape} cannot be expanded to {sizes} (only "
                             "axes of size 1 stretch; -1 keeps an existing axis)")
        return self._view(lambda base: ops.Expand.apply(base, shape=shape))

    def expand_as(self, other: Any) -> Tensor:
        return self.expand(other.shape)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """Entries start..start + length - 1 along `dim`."""
        dim = check_dim("narrow", dim, self.shape)
        size = self.shape[dim]
        if not (0 <= start <= size and 0 <= length <= size - start):
            raise IndexError(f"narrow(): start={start}, length={length} does not fit dim {dim} of "
                             f"size {size} (shape {self.shape})")
        start, length = int(start), int(length)
        return self._view(lambda base: ops.Narrow.apply(base, axis=dim, start=start, length=length))

    def split(self, split_size_or_sections: int | list[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces along `dim`: of size split_size_or_sections each (the last may be smaller), or of
        the listed sizes, which must add up to the axis."""
        dim = check_dim("split", dim, self.shape)
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
        dim = check_dim("chunk", dim, self.shape)
        return self.split(max(1, -(-self.shape[dim] // int(chunks))), dim)

    def masked_fill(self, mask: Any, value: float) -> Tensor:
        """`value` where mask is True; mask (bool) broadcasts to this tensor's shape. A value of
        -inf before a softmax gives those places probability exactly 0."""
        mask = np.asarray(_array_of(mask))
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill(): mask must be a bool array, got dtype {mask.dtype}")
        if broadcast_shape(mask.shape, self.shape) != self.shape:
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
        return self.shape if dim is None else self.shape[check_dim("size", dim, self.shape)]


def _array_of(x: Any) -> Any:
    return x.data if isinstance(x, PyTorchSpellings) else x  # every Tensor is a PyTorchSpellings


def _arrays_in(value: Any) -> Any:
    """`value` with every tensor in it (inside tuples, lists and dicts too) replaced by its array."""
    if isinstance(value, PyTorchSpellings):
        return value.data
    if isinstance(value, (tuple, list)):
        return type(value)(_arrays_in(v) for v in value)
    if isinstance(value, dict):
        return {k: _arrays_in(v) for k, v in value.items()}
    return value


def _reduce_axis(op: str, dim: Any, shape: tuple[int, ...]) -> Any:
    """PyTorch's dim for a reduction (None, an int or a tuple), checked against shape."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(check_dim(op, d, shape or (1,)) for d in dim)
    return check_dim(op, dim, shape or (1,))  # a 0-d tensor reduces over its one place


def _correction(op: str, unbiased: bool | None, correction: float | None) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): got both unbiased= and correction=; pass one "
                        "(unbiased=True is correction=1, False is 0)")
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _check_tensor_like(op: str, other: Any) -> Any:
    if other is None:
        raise TypeError(f"{op}(): other must be a tensor or a number, got None")
    return other
