"""The maths a tensor does, mixed into Tensor (tensor.py): comparisons and logic, reductions,
elementwise functions, and the dtype promotion they share. numpy's spellings (`t.sum(axis=0)`)
and PyTorch's (`t.sum(dim=0)`, `t.amax(1)`, `t.var(unbiased=False)`) both work, with PyTorch's
meaning.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from minigrad.engine import ops
from minigrad.engine.arguments import axis_args, check_dim, softmax_axis
from minigrad.engine.arrays import Array, ArrayHolder, arrays_in, as_array, is_tensor
from minigrad.engine.checks import ArgumentError, ShapeError, check_broadcast
from minigrad.engine.dtypes import float_dtype, is_number, result_type

if TYPE_CHECKING:
    from minigrad.engine.function import Function
    from minigrad.engine.tensor import Tensor


def broadcasting(op: type[Function], who: str, *operands: Any, **kwargs: Any) -> Tensor:
    """op.apply(*operands, **kwargs) for an op whose operands broadcast: numpy's error for shapes
    that do not becomes a ShapeError naming `who` and the shapes, as PyTorch users catch it."""
    try:
        return op.apply(*operands, **kwargs)
    except ValueError as error:
        raise_shape_error(error, who, operands)
        raise


def raise_shape_error(error: ValueError, who: str, operands: tuple[Any, ...]) -> None:
    """Raise a ShapeError naming `who` and the operands' shapes when they do not broadcast (what
    numpy's ValueError `error` most likely said); return if `error` was something else."""
    if not isinstance(error, ShapeError):
        check_broadcast(who, *(np.shape(x) for x in operands if x is not None))


Op = TypeVar("Op", bound=Callable[..., Any])


def reduced_in_float32(op: Op) -> Op:
    """Decorator for the ops that reduce (norms, softmax, losses, var): given a float16 tensor
    as its first argument, the op runs on float32 copies of every float16 tensor it is given and
    its result is rounded back to float16, as PyTorch computes half tensors' reductions. In
    float16 a sum of squares overflows past 256 (65504 is its largest number), and its 3 digits
    lose a softmax's small probabilities. Gradients flow through the casts both ways."""

    def widened(x: Any) -> Any:
        return x.float() if is_tensor(x) and x.dtype == np.float16 else x

    @functools.wraps(op)
    def run(x: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(x, "dtype", None) != np.float16:
            return op(x, *args, **kwargs)
        result = op(widened(x), *map(widened, args), **{k: widened(v) for k, v in kwargs.items()})
        return result.half()

    return run  # type: ignore[return-value]  # wraps(op): run is called as op is


class TensorMaths(ArrayHolder):
    """Mixed into Tensor."""

    if TYPE_CHECKING:  # what the class this is mixed into provides
        def _new(self, array: Any) -> Tensor: ...
        def reshape(self, *shape: Any) -> Tensor: ...
        def __pow__(self, exponent: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def to(self, *args: Any, **kwargs: Any) -> Tensor: ...
        def _operands(self, other: Any, reflected: bool = False,
                      floating: bool = False) -> tuple[Any, Any]: ...

    # ---- comparisons and logic: bool tensors that never require grad ----------------------
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]  # elementwise, not a bool
        return self._compare(np.equal, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]  # elementwise, not a bool
        return self._compare(np.not_equal, other)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(np.less, other)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(np.less_equal, other)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(np.greater, other)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(np.greater_equal, other)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__  # PyTorch's names

    def _compare(self, test: np.ufunc, other: Any) -> Tensor:
        return self._new(np.asarray(test(self.data, np.asarray(as_array(other)))))

    def _logic(self, op: str, combine: Any, *others: Any) -> Tensor:
        """A bitwise or logical op of bool (or int) tensors: no gradient; floats are refused."""
        arrays = [self.data, *(np.asarray(as_array(o)) for o in others)]
        for a in arrays:
            if a.dtype.kind not in "biu":
                raise TypeError(f"{op}: needs bool or integer tensors, got dtype {a.dtype} (compare "
                                f"first, e.g. (x > 0) {op} (x < 1))")
        return self._new(np.asarray(combine(*arrays)))

    def __invert__(self) -> Tensor:
        return self._logic("~", np.invert)

    def __and__(self, other: Any) -> Tensor:
        return self._logic("&", np.bitwise_and, other)

    def __or__(self, other: Any) -> Tensor:
        return self._logic("|", np.bitwise_or, other)

    def __xor__(self, other: Any) -> Tensor:
        return self._logic("^", np.bitwise_xor, other)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def logical_not(self) -> Tensor:
        return self._new(np.logical_not(self.data))

    # ---- numbers, and numpy's functions -----------------------------------------------------
    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """f"{loss:.3f}" formats the number of a one-element tensor, as PyTorch."""
        return format(self.item(), spec) if spec and self.data.size == 1 else object.__format__(self, spec)

    def __array_function__(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """numpy's functions (np.sum, np.mean, np.any, np.where, ...) read a tensor as its array
        and return plain arrays, outside the graph: `np.mean(pred == y)` is an accuracy, as when
        comparisons gave arrays. (Without this, numpy would call t.sum(dtype=..., out=...).)"""
        return func(*arrays_in(args), **arrays_in(kwargs))

    # ---- reductions -------------------------------------------------------------------------
    def sum(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None, dtype: Any = None) -> Tensor:
        """The sum over `axis` (or `dim`); `dtype` casts first, as PyTorch's (float64 sums of
        float32 entries, say)."""
        if dtype is not None:
            return self.to(dtype).sum(axis, keepdims, dim=dim, keepdim=keepdim)
        axis, keepdims = axis_args("sum", axis, keepdims, dim, keepdim)
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
             keepdim: bool | None = None) -> Tensor:
        axis, keepdims = axis_args("mean", axis, keepdims, dim, keepdim)
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        """The largest entry (along `axis`/`dim`): values only; ties share the gradient."""
        axis, keepdims = axis_args("max", axis, keepdims, dim, keepdim)
        return ops.Max.apply(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor:
        """The smallest entry (along `axis`/`dim`): values only, as `max`; ties share the gradient."""
        axis, keepdims = axis_args("min", axis, keepdims, dim, keepdim)
        return ops.Min.apply(self, axis=axis, keepdims=keepdims)

    def amax(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return ops.Max.apply(self, axis=_reduce_axis("amax", dim, self.shape), keepdims=keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return ops.Min.apply(self, axis=_reduce_axis("amin", dim, self.shape), keepdims=keepdim)

    # PyTorch's dim=/keepdim= first; numpy's axis=/keepdims= too, by keyword (as sum's)
    def prod(self, dim: int | None = None, keepdim: bool | None = None, *, axis: Any = None,
             keepdims: bool = False, dtype: Any = None) -> Tensor:
        """The product of all entries, or along one `dim`; exact gradients where entries are 0.
        `dtype` casts first."""
        if dtype is not None:
            return self.to(dtype).prod(dim, keepdim, axis=axis, keepdims=keepdims)
        dim, keepdims = axis_args("prod", axis, keepdims, dim, keepdim)
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"prod(): dim must be one int (as PyTorch), got {dim!r}")
        return ops.Prod.apply(self, axis=_reduce_axis("prod", dim, self.shape), keepdims=keepdims)

    @reduced_in_float32
    def logsumexp(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
                  keepdims: bool = False) -> Tensor:
        """log sum exp over `dim` (an int or a tuple; PyTorch requires one, here None means all)."""
        dim, keepdims = axis_args("logsumexp", axis, keepdims, dim, keepdim)
        return ops.LogSumExp.apply(self, axis=_reduce_axis("logsumexp", dim, self.shape), keepdims=keepdims)

    @reduced_in_float32
    def var(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool | None = None, *,
            correction: float | None = None, axis: Any = None, keepdims: bool = False) -> Tensor:
        """sum (x - mean)^2 / (n - correction) over `dim`; correction=1 (unbiased=True) by default,
        as PyTorch; unbiased=False is correction=0."""
        dim, keepdims = axis_args("var", axis, keepdims, dim, keepdim)
        return ops.Var.apply(self, axis=_reduce_axis("var", dim, self.shape),
                             correction=_correction("var", unbiased, correction), keepdims=keepdims)

    @reduced_in_float32
    def std(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool | None = None, *,
            correction: float | None = None, axis: Any = None, keepdims: bool = False) -> Tensor:
        """The square root of `var` (same arguments)."""
        dim, keepdims = axis_args("std", axis, keepdims, dim, keepdim)
        return self.var(dim, unbiased, keepdims, correction=correction).sqrt()

    def var_mean(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool | None = None, *,
                 correction: float | None = None, axis: Any = None, keepdims: bool = False
                 ) -> tuple[Tensor, Tensor]:
        """(var, mean) over `dim`, as torch.var_mean (var's arguments)."""
        dim, keepdims = axis_args("var_mean", axis, keepdims, dim, keepdim)
        return self.var(dim, unbiased, keepdims, correction=correction), self.mean(dim=dim, keepdim=keepdims)

    def std_mean(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool | None = None, *,
                 correction: float | None = None, axis: Any = None, keepdims: bool = False
                 ) -> tuple[Tensor, Tensor]:
        """(std, mean) over `dim`, as torch.std_mean."""
        dim, keepdims = axis_args("std_mean", axis, keepdims, dim, keepdim)
        return self.std(dim, unbiased, keepdims, correction=correction), self.mean(dim=dim, keepdim=keepdims)

    def all(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool = False) -> Tensor:
        """True where every entry (along `dim`) is nonzero: a bool tensor."""
        dim, keepdims = axis_args("all", axis, keepdims, dim, keepdim)
        axis = _reduce_axis("all", dim, self.shape)
        return self._new(np.asarray(self.data.all(axis=axis, keepdims=keepdims)))

    def any(self, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None,
            keepdims: bool = False) -> Tensor:
        """True where some entry (along `dim`) is nonzero: a bool tensor."""
        dim, keepdims = axis_args("any", axis, keepdims, dim, keepdim)
        axis = _reduce_axis("any", dim, self.shape)
        return self._new(np.asarray(self.data.any(axis=axis, keepdims=keepdims)))

    def neg(self) -> Tensor:
        """-self (PyTorch's name)."""
        return -self

    def cumsum(self, dim: int | None = None, *, axis: int | None = None) -> Tensor:
        """The running sum along `dim` (or numpy's `axis`): out_i = x_0 + ... + x_i."""
        dim = axis_args("cumsum", axis, False, dim, None)[0]
        if dim is None:
            raise TypeError("cumsum(): dim is required (as PyTorch); flatten() first to run over every entry")
        dim = check_dim("cumsum", dim, self.shape or (1,))  # a 0-d tensor: its one place
        if self.ndim == 0:
            return ops.Cumsum.apply(self.reshape(1), axis=0).reshape(())
        return ops.Cumsum.apply(self, axis=dim)

    def isnan(self) -> Tensor:
        return self._new(np.isnan(self.data))

    def isinf(self) -> Tensor:
        return self._new(np.isinf(self.data))

    def isfinite(self) -> Tensor:
        return self._new(np.isfinite(self.data))

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

    # ---- elementwise --------------------------------------------------------------------------
    def exp(self) -> Tensor:
        return ops.Exp.apply(self)

    def log(self) -> Tensor:
        return ops.Log.apply(self)

    def sqrt(self) -> Tensor:
        return ops.Sqrt.apply(self)

    def abs(self) -> Tensor:
        return ops.Abs.apply(self)

    def tanh(self) -> Tensor:
        return ops.Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return ops.Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return ops.ReLU.apply(self)

    def gelu(self, approximate: str = "none") -> Tensor:
        return ops.GELU.apply(self, approximate=approximate)

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

    def tan(self) -> Tensor:
        return ops.Tan.apply(self)

    def sinh(self) -> Tensor:
        return ops.Sinh.apply(self)

    def cosh(self) -> Tensor:
        return ops.Cosh.apply(self)

    def asin(self) -> Tensor:
        return ops.Asin.apply(self)

    def acos(self) -> Tensor:
        return ops.Acos.apply(self)

    def atan(self) -> Tensor:
        return ops.Atan.apply(self)

    def asinh(self) -> Tensor:
        return ops.Asinh.apply(self)

    def acosh(self) -> Tensor:
        return ops.Acosh.apply(self)

    def atanh(self) -> Tensor:
        return ops.Atanh.apply(self)

    def log10(self) -> Tensor:
        return ops.Log10.apply(self)

    def floor(self) -> Tensor:
        """The largest whole number <= each entry; its gradient is 0 (a step function)."""
        return ops.Round.apply(self, how="floor")

    def ceil(self) -> Tensor:
        return ops.Round.apply(self, how="ceil")

    def trunc(self) -> Tensor:
        """Each entry with its fraction dropped (towards 0)."""
        return ops.Round.apply(self, how="trunc")

    def round(self, decimals: int = 0) -> Tensor:
        """Each entry to `decimals` places, a half to the even neighbour (2.5 -> 2), as PyTorch."""
        return ops.Round.apply(self, how="round", decimals=int(decimals))

    def lerp(self, end: Any, weight: Any) -> Tensor:
        """self + weight (end - self): weight 0 gives self, 1 gives end (torch.lerp)."""
        moved: Tensor = self + weight * (end - self)
        return moved

    def logaddexp(self, other: Any) -> Tensor:
        """log(e^self + e^other), without overflow: both are shifted by the larger one first (the
        shift is a constant, so the gradient is e^self / (e^self + e^other), as without it)."""
        a, b = (x if isinstance(x, ArrayHolder) else self._new(x)
                for x in promote(self, _check_tensor_like("logaddexp", other), floating=True))
        with np.errstate(invalid="ignore"):
            shift = np.fmax(a.data, b.data)
        shift = np.where(np.isfinite(shift), shift, 0).astype(shift.dtype)  # inf - inf would be NaN
        total: Tensor = ((a - shift).exp() + (b - shift).exp()).log() + shift
        return total

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """|self - other| <= atol + rtol |other|, entry by entry (a bool tensor, no gradient)."""
        return self._new(np.asarray(np.isclose(self.data, np.asarray(as_array(other)), rtol=rtol,
                                               atol=atol, equal_nan=equal_nan)))

    def sign(self) -> Tensor:
        return ops.Sign.apply(self)

    @reduced_in_float32
    def softmax(self, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        """Along `axis` (or `dim`), the last one by default."""
        return ops.Softmax.apply(self, axis=softmax_axis("softmax", axis, dim))

    @reduced_in_float32
    def log_softmax(self, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        return ops.LogSoftmax.apply(self, axis=softmax_axis("log_softmax", axis, dim))

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """min(max(self, min), max); each bound a number or a tensor (broadcast), or None. Where
        min > max the result is max, as PyTorch."""
        if min is None and max is None:
            raise RuntimeError("clamp(): at least one of min and max must be given (not both None)")
        dtype = result_type(self, *(bound for bound in (min, max) if bound is not None))  # as PyTorch
        bounded = (None if x is None else cast(x, dtype) for x in (self, min, max))
        return broadcasting(ops.Clamp, "clamp", *bounded)

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Tensor:
        return self.clamp(max=max)

    def maximum(self, other: Any) -> Tensor:
        """The larger of self and other, elementwise; at a tie each gets half the gradient."""
        return broadcasting(ops.Maximum, "maximum", *promote(self, _check_tensor_like("maximum", other)))

    def minimum(self, other: Any) -> Tensor:
        """The smaller of self and other, elementwise; at a tie each gets half the gradient."""
        return broadcasting(ops.Minimum, "minimum", *promote(self, _check_tensor_like("minimum", other)))

    def pow(self, exponent: float | Tensor | Array) -> Tensor:
        return self ** exponent

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """self / other; rounding_mode "floor" rounds the quotient down (as //) and "trunc" towards
        0, both with gradient 0 (as PyTorch) and in the operands' dtype (ints stay ints)."""
        if rounding_mode is None:
            quotient: Tensor = self / other
            return quotient
        if rounding_mode not in ("floor", "trunc"):
            raise ArgumentError(f"div(): rounding_mode must be None, 'floor' or 'trunc', "
                                f"got {rounding_mode!r}")
        return broadcasting(ops.RoundedDivide, "div", *self._operands(other), rounding=rounding_mode)

    divide = div

    def floor_divide(self, other: Any) -> Tensor:
        quotient: Tensor = self // other
        return quotient

    def remainder(self, other: Any) -> Tensor:
        left: Tensor = self % other
        return left

    def fmod(self, other: Any) -> Tensor:
        """The remainder of division rounded towards 0, with self's sign (C's fmod): a gets G, b
        gets -G trunc(a / b)."""
        return broadcasting(ops.Remainder, "fmod", *self._operands(other), how="fmod")

    def _pow_tensor(self, exponent: Any) -> Tensor:
        """self ** exponent for an exponent that is a tensor or an array (tensor ** tensor)."""
        return broadcasting(ops.PowTensor, "pow", *promote(self, exponent))

    def __rpow__(self, base: Any) -> Tensor:
        """base ** self for a number (or array) base: d/dself = G base^self log(base)."""
        return ops.PowTensor.apply(*promote(base, self))


# ---- dtype promotion: an op's operands in one dtype ---------------------------------------------

def promote(a: Any, b: Any, floating: bool = False) -> tuple[Any, Any]:
    """(a, b) as the operands of an elementwise op, both of result_type(a, b) (of a float dtype
    when `floating`: true division). Numbers and arrays become arrays of that dtype, as does a
    tensor that needs no gradient; a tensor that requires grad is cast by an op, so its gradient
    still reaches it."""
    dtype = getattr(a, "dtype", None)
    if dtype is not None and (dtype.kind == "f" or not floating) and getattr(b, "dtype", None) is dtype:
        return a, b  # one dtype already: nothing to decide
    dtype = float_dtype(result_type(a, b)) if floating else result_type(a, b)
    return cast(a, dtype), cast(b, dtype)


def cast(x: Any, dtype: np.dtype[Any]) -> Any:
    """`x` as `dtype`: itself when it has that dtype already."""
    if is_number(x):  # an int wraps around as in PyTorch: uint8 tensor + (-3) is uint8
        return np.asarray(x, dtype=dtype) if dtype.kind in "fc" else np.asarray(x).astype(dtype)
    if not isinstance(x, ArrayHolder):  # an array or a list
        return np.asarray(x, dtype=dtype)
    if x.data.dtype == dtype:
        return x
    if getattr(x, "requires_grad", False):  # copied into a new array of `dtype`; the gradient flows back to x
        return ops.Copy.apply(np.empty(x.data.shape, dtype), x)
    return x.data.astype(dtype)


# ---- reading PyTorch's arguments -------------------------------------------------------------------

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

