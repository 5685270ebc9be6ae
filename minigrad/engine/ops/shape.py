"""Ops that move values without computing new ones: reshape, permute, indexing, setting items,
concatenation, stacking, narrowing, masking and selecting, flipping and expanding. Each backward
routes G back to the places the values came from (an index read twice gets both gradients)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arrays import Array, Gradients
from minigrad.engine.checks import ShapeError
from minigrad.engine.function import Context, Function
from minigrad.engine.ops.arithmetic import unbroadcast


class Reshape(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, shape: tuple[int, ...]) -> Array:
        ctx.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ShapeError(f"reshape: cannot reshape shape {a.shape} ({a.size} elements) "
                             f"into {shape}") from None

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad.reshape(ctx.in_shape)


class Permute(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, dims: tuple[int, ...]) -> Array:
        ctx.dims = dims
        return a.transpose(dims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # undo the permutation
        return grad.transpose(np.argsort(ctx.dims))


def own_index(index: Any) -> Any:
    """`index` with a copy of each array in it: an index tensor changed in place (or a buffer
    refilled) between forward and backward must not move the gradient. Slices and ints as they are."""
    if isinstance(index, np.ndarray):
        return index.copy()
    if isinstance(index, tuple):
        return tuple(i.copy() if isinstance(i, np.ndarray) else i for i in index)
    return index


class GetItem(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, index: Any) -> Array | np.generic:
        ctx.in_shape, ctx.index = a.shape, own_index(index)
        picked: Array | np.generic = a[index]  # one element: a numpy scalar (apply makes it 0-d)
        return picked

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        out = np.zeros(ctx.in_shape, dtype=grad.dtype)
        np.add.at(out, ctx.index, grad)  # an index picked twice gets both gradients
        return out


class SetItem(Function):
    """a with a[index] = value: the positions written take value's gradient, the rest keep a's."""

    @staticmethod
    def forward(ctx: Context, a: Array, value: Array, index: Any) -> Array:
        ctx.args = (own_index(index), np.shape(value))
        out = a.copy()
        out[index] = value
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # d a = G off the index, d value = G[index]
        index, value_shape = ctx.args
        need_a, need_value = ctx.needs_input_grad
        grad_a = grad_value = None
        if need_a:
            grad_a = grad.copy()
            grad_a[index] = 0
        if need_value:
            written = grad[index]
            # numpy lets a value have extra leading axes of size 1 (a[0] = v of shape (1, n))
            extra = len(value_shape) - written.ndim
            grad_value = (unbroadcast(written, value_shape[extra:]).reshape(value_shape) if extra > 0
                          else unbroadcast(written, value_shape))
        return grad_a, grad_value


class Concatenate(Function):
    @staticmethod
    def forward(ctx: Context, *arrays: Array, axis: int = 0) -> Array:
        ctx.axis = axis
        ctx.sizes = [a.shape[axis] for a in arrays]
        return np.concatenate(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:  # each input gets its slice of G
        cuts = np.cumsum(ctx.sizes)[:-1]
        return tuple(np.split(grad, cuts, axis=ctx.axis))


class Stack(Function):
    @staticmethod
    def forward(ctx: Context, *arrays: Array, axis: int = 0) -> Array:
        ctx.axis = axis
        return np.stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        return tuple(np.moveaxis(grad, ctx.axis, 0))


class Narrow(Function):
    """a[..., start:start + length, ...] along `axis` (a view, as torch.narrow); split and chunk
    are several of these. The gradient is G in that slice and zero elsewhere."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: int, start: int, length: int) -> Array:
        ctx.shape = a.shape
        ctx.index = index = (slice(None),) * axis + (slice(start, start + length),)
        return a[index]

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        out = np.zeros(ctx.shape, dtype=grad.dtype)
        out[ctx.index] = grad  # a basic slice names each element once: no np.add.at needed
        return out


class MaskedFill(Function):
    """a with `value` where mask is True (mask broadcasts to a's shape); the filled places get no
    gradient: da = G where not mask, else 0."""

    @staticmethod
    def forward(ctx: Context, a: Array, mask: Array, value: float = 0.0) -> Array:
        ctx.mask = np.array(mask, dtype=bool)  # our own copy: the caller may change its mask
        return np.where(mask, np.asarray(value, dtype=a.dtype), a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        return np.where(ctx.mask, np.zeros((), grad.dtype), grad), None


class Where(Function):
    """condition ? a : b, all three broadcast; da = G where condition, db = G elsewhere."""

    @staticmethod
    def forward(ctx: Context, condition: Array, a: Array, b: Array) -> Array:
        ctx.condition = np.array(condition, dtype=bool)  # our own copy, as MaskedFill's mask
        ctx.shapes = (np.shape(a), np.shape(b))
        return np.where(condition, a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        zero = np.zeros((), grad.dtype)
        a_shape, b_shape = ctx.shapes
        _, need_a, need_b = ctx.needs_input_grad
        grad_a = unbroadcast(np.where(ctx.condition, grad, zero), a_shape) if need_a else None
        grad_b = unbroadcast(np.where(ctx.condition, zero, grad), b_shape) if need_b else None
        return None, grad_a, grad_b



class Flip(Function):
    """a reversed along the given axes; G reversed back the same way."""

    @staticmethod
    def forward(ctx: Context, a: Array, axes: tuple[int, ...]) -> Array:
        ctx.axes = axes
        return np.flip(a, axes).copy()  # a copy, as torch.flip (not a view)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return np.flip(grad, ctx.axes)


class Expand(Function):
    """a broadcast to `shape` (size-1 axes stretched, new leading axes added), as a read-only view;
    G summed back over what was stretched or added."""

    @staticmethod
    def forward(ctx: Context, a: Array, shape: tuple[int, ...]) -> Array:
        ctx.in_shape = a.shape
        return np.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return unbroadcast(grad, ctx.in_shape)


class Repeat(Function):
    """a tiled `repeats[i]` times along each axis (torch's repeat, numpy's tile); repeats beyond
    a's axes add new leading axes. Every copy of an entry sends its G back: dA = the sum of G
    over the copies."""

    @staticmethod
    def forward(ctx: Context, a: Array, repeats: tuple[int, ...]) -> Array:
        ctx.in_shape = a.shape
        ctx.shape = (1,) * (len(repeats) - a.ndim) + a.shape  # a with the new leading axes
        ctx.repeats = repeats
        return np.tile(a.reshape(ctx.shape), repeats)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        # axis i of the result is (copy, entry) pairs: split it, then sum over the copies
        pairs = [n for copies, size in zip(ctx.repeats, ctx.shape) for n in (copies, size)]
        grad_a: Array = grad.reshape(pairs).sum(axis=tuple(range(0, len(pairs), 2))).reshape(ctx.in_shape)
        return grad_a


class Gather(Function):
    """out[i][j][k] = a[index[i][j][k]][j][k] for axis 0 (and so on for the others), as
    torch.gather: index has a's number of axes and, off the axis, sizes no larger than a's. Each
    entry read sends its G back to where it was read; an entry read twice gets both."""

    @staticmethod
    def forward(ctx: Context, a: Array, index: Array, axis: int = 0) -> Array:
        ctx.in_shape, ctx.picks = a.shape, _along_axis(index.copy(), axis)  # our copy: see Embedding
        gathered: Array = a[ctx.picks]
        return gathered

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:  # G added back where each was read
        out = np.zeros(ctx.in_shape, dtype=grad.dtype)
        np.add.at(out, ctx.picks, grad)
        return out


def _along_axis(index: Array, axis: int) -> tuple[Array, ...]:
    """The numpy index that reads, for each entry of `index`, the entry of that position with
    `axis` replaced by the index's value (torch.gather's rule)."""
    positions = np.indices(index.shape, sparse=True)
    return tuple(index if d == axis else positions[d] for d in range(index.ndim))


class ScatterAdd(Function):
    """out = a, then src[i][j][k] added at [index[i][j][k]][j][k] for axis 0 (torch.scatter_add):
    Gather's transpose. a receives G; each src entry the G of the place it was added to (the
    part of src that index covers; the rest of src got no place, so no gradient)."""

    @staticmethod
    def forward(ctx: Context, a: Array, src: Array, index: Array,
                axis: int = 0) -> Array:
        ctx.src_shape, ctx.picks = src.shape, _along_axis(index.copy(), axis)  # our copy: see Embedding
        covered = tuple(slice(0, n) for n in index.shape)
        out = a.copy()
        np.add.at(out, ctx.picks, src[covered])
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Gradients:
        src_grad = np.zeros(ctx.src_shape, dtype=grad.dtype)
        read = grad[ctx.picks]
        src_grad[tuple(slice(0, n) for n in read.shape)] = read
        return grad, src_grad
