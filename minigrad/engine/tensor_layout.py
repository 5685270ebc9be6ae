"""The layout of a tensor's data, mixed into Tensor (tensor.py): its shape and views of it
(reshape, permute, t[i], unsqueeze, split ...), and its dtype (to, float, long ...).

A view shares its base's memory, as in numpy and PyTorch. It remembers how it was made from its
base, so an in-place change of the base remakes the view's node too (PyTorch regenerates a
view's grad_fn the same way): reading the view never uses a stale graph.
"""

from __future__ import annotations

import typing
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from minigrad.engine import ops
from minigrad.engine.arguments import as_dtype, broadcast_shape, check_dim
from minigrad.engine.arrays import Array, ArrayHolder, as_array, index_array
from minigrad.engine.checks import ArgumentError, ShapeError, check_in_range

if TYPE_CHECKING:
    from typing_extensions import Self  # typing's own from Python 3.11

    from minigrad.engine.graph import Node
    from minigrad.engine.tensor import Tensor


class Sorted(NamedTuple):
    """What sort and topk return: the values and where each was (as torch.return_types)."""

    values: Tensor
    indices: Tensor


def _sort_order(a: Array, axis: int, descending: bool) -> Array:
    """The stable order along `axis`, NaN last (first when descending). Descending: sort the
    reversed array, then reverse the order, so equal entries still keep their first-come order."""
    if not descending:
        ascending: Array = np.argsort(a, axis=axis, kind="stable")
        return ascending
    order = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    descending_order: Array = a.shape[axis] - 1 - order
    return descending_order


class TensorLayout(ArrayHolder):
    """Mixed into Tensor."""

    _views: list[weakref.ref[TensorLayout]] | None = None
    _base: TensorLayout | None = None
    _from_base: Callable[[TensorLayout], Tensor] | None = None

    if TYPE_CHECKING:  # what the class this is mixed into provides
        grad_fn: Node | None

        def _new(self, array: Any) -> Tensor: ...
        def clone(self) -> Tensor: ...

    # ---- shapes and views -------------------------------------------------------------------
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
            raise ShapeError(f"permute(): dims {dims} are not a permutation of {self.ndim} axes")
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
        index = index_array(index)
        if _ints_among_arrays(index):  # PyTorch's reading: the ints first, as plain indexing
            ints = tuple(i if _is_int(i) or i is Ellipsis else slice(None) for i in index if i is not None
                         for _ in range(np.ndim(i) if _is_bool_array(i) else 1))
            return self[ints][tuple(i for i in index if not _is_int(i))]
        return self._view(lambda base: ops.GetItem.apply(base, index=index))


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
            raise ShapeError(f"flatten(): start_dim={start_dim} comes after end_dim={end_dim} "
                             f"for a tensor of shape {self.shape}")
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def unflatten(self, dim: int, sizes: Any) -> Tensor:
        """Axis `dim` split into `sizes` (whose product is its length; one may be -1)."""
        dim = check_dim("unflatten", dim, self.shape)
        sizes = tuple(int(n) for n in sizes)
        known = int(np.prod([n for n in sizes if n != -1], dtype=np.int64))
        if not sizes or sizes.count(-1) > 1 or (-1 not in sizes and known != self.shape[dim]) or \
                (-1 in sizes and (known == 0 or self.shape[dim] % known)):
            raise ShapeError(f"unflatten(): sizes {sizes} do not split dim {dim} of size "
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
            raise ShapeError(f"expand(): {len(sizes)} sizes {sizes} are fewer than the tensor's "
                             f"{self.ndim} axes (shape {self.shape})")
        shape = tuple(self.shape[i - added] if n == -1 and i >= added else n for i, n in enumerate(sizes))
        if any(n < 0 for n in shape) or broadcast_shape(self.shape, shape) != shape:
            raise ShapeError(f"expand(): shape {self.shape} cannot be expanded to {sizes} (only "
                             "axes of size 1 stretch; -1 keeps an existing axis)")
        return self._view(lambda base: ops.Expand.apply(base, shape=shape))

    def expand_as(self, other: Any) -> Tensor:
        return self.expand(other.shape)

    def repeat(self, *sizes: Any) -> Tensor:
        """Tiled: `sizes[i]` copies along axis i (torch's repeat, numpy's tile), more sizes than
        axes adding new axes in front; `t.repeat(2, 1)` of a (3, 4) tensor is (6, 4). A copy; the
        gradient sums over the copies."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        repeats = tuple(int(n) for n in sizes)
        if len(repeats) < self.ndim:
            raise ShapeError(f"repeat(): {len(repeats)} sizes {repeats} are fewer than the tensor's "
                             f"{self.ndim} axes (shape {self.shape}); give one per axis")
        if any(n < 0 for n in repeats):
            raise ValueError(f"repeat(): sizes {repeats} must not be negative")
        return ops.Repeat.apply(self, repeats=repeats)

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
                raise ShapeError(f"split(): sections {sections} add up to {sum(sections)}, but dim {dim} "
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
        mask = np.asarray(as_array(mask))
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill(): mask must be a bool array, got dtype {mask.dtype}")
        if broadcast_shape(mask.shape, self.shape) != self.shape:
            raise ShapeError(f"masked_fill(): mask of shape {mask.shape} does not broadcast to the "
                             f"tensor's shape {self.shape}")
        return ops.MaskedFill.apply(self, mask, value=float(value))

    def tril(self, diagonal: int = 0) -> Tensor:
        """The entries on and below the `diagonal`-th diagonal of the last two axes, zeros above
        (torch.tril: diagonal 0 is the main one, 1 the one above it); G passes where kept."""
        kept = np.tri(*self._last_two("tril"), k=diagonal, dtype=bool)
        return ops.MaskedFill.apply(self, ~kept, value=0)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The entries on and above the `diagonal`-th diagonal of the last two axes, zeros below."""
        kept = ~np.tri(*self._last_two("triu"), k=diagonal - 1, dtype=bool)
        return ops.MaskedFill.apply(self, ~kept, value=0)

    def _last_two(self, op: str) -> tuple[int, int]:
        if self.ndim < 2:
            raise ShapeError(f"{op}(): the tensor has shape {self.shape}; it needs at least 2 axes "
                             "(a matrix, or a batch of them)")
        return self.shape[-2], self.shape[-1]

    def gather(self, dim: int, index: Any) -> Tensor:
        """out[i][j][k] = self[index[i][j][k]][j][k] for dim 0 (and so on), as torch.gather: index
        is an int tensor with this tensor's number of axes, no larger off `dim`; G goes back to
        each entry read (summed where one is read twice)."""
        dim = check_dim("gather", dim, self.shape or (1,))
        idx = np.asarray(as_array(index))
        if idx.dtype.kind not in "iu":
            raise TypeError(f"gather(): index must hold integers, got dtype {idx.dtype}")
        too_large = any(n > m for d, (n, m) in enumerate(zip(idx.shape, self.shape)) if d != dim)
        if idx.ndim != self.ndim or too_large:
            raise ShapeError(f"gather(): index has shape {idx.shape}, which does not fit the tensor's "
                             f"shape {self.shape} (the same number of axes, none larger off dim {dim})")
        if self.ndim == 0:
            return self.reshape(1).gather(0, idx.reshape(1)).reshape(())
        check_in_range(idx, self.shape[dim], who="gather", item="index", name="index",
                       range_of=f"dim {dim} of size {self.shape[dim]}")
        return ops.Gather.apply(self, index=idx, axis=dim)

    def repeat_interleave(self, repeats: Any, dim: int | None = None) -> Tensor:
        """Each entry `repeats` times in a row along `dim` (of the flattened tensor when None), as
        torch's: [a, b] with 2 is [a, a, b, b] (repeat tiles instead: [a, b, a, b]). repeats: an
        int, or one count per entry along dim. The gradient sums over each entry's copies."""
        if dim is None or self.ndim == 0:
            return self.reshape(-1).repeat_interleave(repeats, 0)
        dim = check_dim("repeat_interleave", dim, self.shape)
        counts = np.asarray(as_array(repeats))
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave(): repeats must be an int or ints, got dtype {counts.dtype}")
        if counts.ndim > 1 or counts.ndim == 1 and counts.shape[0] != self.shape[dim]:
            raise ShapeError(f"repeat_interleave(): repeats has shape {counts.shape}; expected an int or "
                             f"one count per entry along dim {dim} ({self.shape[dim]})")
        if (counts < 0).any():
            raise ValueError(f"repeat_interleave(): repeats must not be negative, got {counts.tolist()}")
        picks = np.repeat(np.arange(self.shape[dim]), counts)
        return self[(slice(None),) * dim + (picks,)]

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        """Entries moved `shifts` places along `dims`, those pushed off the end coming back at the
        start (torch.roll); with dims None, along the flattened tensor, then reshaped back."""
        if dims is None:
            flat_shift = shifts if np.ndim(shifts) == 0 else tuple(shifts)
            if np.ndim(flat_shift) and len(flat_shift) != 1:
                raise ArgumentError(f"roll(): shifts {flat_shift} with dims None must be one number")
            return self.reshape(-1).roll(flat_shift, 0).reshape(self.shape)
        shifts, dims = np.atleast_1d(shifts).tolist(), np.atleast_1d(dims).tolist()
        if len(shifts) != len(dims):
            raise ArgumentError(f"roll(): shifts {shifts} and dims {dims} must have the same length")
        out = typing.cast("Tensor", self)
        for shift, d in zip(shifts, dims):
            d = check_dim("roll", d, self.shape)
            size = self.shape[d]
            if size:
                out = out[(slice(None),) * d + ((np.arange(size) - shift) % size,)]
        return out

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Sorted:
        """(values, indices) along `dim`, smallest first (largest with descending), as torch.sort.
        Equal entries keep their order (a stable sort, whatever `stable` says); NaN counts as the
        largest. The values are self.gather(dim, indices): G goes back to where each came from."""
        dim = check_dim("sort", dim, self.shape or (1,))
        order = _sort_order(self.data if self.ndim else self.data.reshape(1), dim, descending)
        if self.ndim == 0:
            order = order.reshape(())
        return Sorted(self.gather(dim, order), self._new(order))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
        """The indices that sort along `dim` (sort()'s second part)."""
        return self.sort(dim, descending, stable).indices

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Sorted:
        """(values, indices) of the k largest entries along `dim` (smallest with largest=False),
        in order, as torch.topk; the values pass G back to where they came from."""
        dim = check_dim("topk", dim, self.shape or (1,))
        size = self.shape[dim] if self.ndim else 1
        if not 0 <= k <= size:
            raise ArgumentError(f"topk(): k={k} is out of range for dim {dim} of size {size} "
                                f"(shape {self.shape})")
        values, indices = self.sort(dim, descending=largest)
        if self.ndim == 0:
            return Sorted(values, indices)
        return Sorted(values.narrow(dim, 0, k), indices.narrow(dim, 0, k))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The entries (i, i + offset) of the dim1 x dim2 matrices, on a new last axis, as
        torch.diagonal (offset > 0: above the main diagonal); G goes back to the diagonal."""
        dim1, dim2 = check_dim("diagonal", dim1, self.shape), check_dim("diagonal", dim2, self.shape)
        if dim1 == dim2:
            raise ArgumentError(f"diagonal(): dim1 and dim2 are both axis {dim1}; they must differ")
        rows, cols = self.shape[dim1], self.shape[dim2]
        count = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
        steps = np.arange(count)
        index: list[Any] = [slice(None)] * self.ndim
        index[dim1], index[dim2] = steps - min(offset, 0), steps + max(offset, 0)
        kept = [d for d in range(self.ndim) if d not in (dim1, dim2)]
        # moving both axes last first keeps the two index arrays together: their axis goes last
        return self.permute(*kept, dim1, dim2)[(..., index[dim1], index[dim2])]

    def diag(self, diagonal: int = 0) -> Tensor:
        """A 1-D tensor's entries on the `diagonal`-th diagonal of a square matrix (zeros elsewhere),
        or a matrix's diagonal as a 1-D tensor, as torch.diag."""
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise ShapeError(f"diag(): the tensor has shape {self.shape}; it must be 1-D or 2-D")
        size = self.shape[0] + abs(diagonal)
        picks = np.arange(self.shape[0])
        rows, cols = picks - min(diagonal, 0), picks + max(diagonal, 0)
        where_on = np.zeros((size, size), dtype=np.int64) - 1
        where_on[rows, cols] = picks  # each diagonal place: the entry it holds
        on = where_on >= 0
        return self.reshape(-1)[np.where(on, where_on, 0)] * on

    def masked_select(self, mask: Any) -> Tensor:
        """The entries where `mask` (broadcast with the tensor) is True, as a 1-D tensor."""
        keep = np.asarray(as_array(mask))
        if keep.dtype != np.bool_:
            raise TypeError(f"masked_select(): mask must be a bool tensor, got dtype {keep.dtype}")
        shape = broadcast_shape(self.shape, keep.shape)
        if shape is None:
            raise ShapeError(f"masked_select(): mask of shape {keep.shape} does not broadcast with the "
                             f"tensor's shape {self.shape}")
        return self.expand(shape)[np.broadcast_to(keep, shape)]

    def nonzero(self, as_tuple: bool = False) -> Any:
        """The indices of the nonzero entries: an int64 (count, ndim) tensor, or with as_tuple one
        1-D tensor per axis (numpy's nonzero)."""
        if self.ndim == 0:  # one entry and no axes: (1, 0) or (0, 0), as PyTorch
            found = self.reshape(1).nonzero(as_tuple)
            return found if as_tuple else self._new(np.zeros((found.shape[0], 0), np.int64))
        found = np.nonzero(self.data)
        if as_tuple:
            return tuple(self._new(axis.astype(np.int64)) for axis in found)
        return self._new(np.stack(found, axis=1).astype(np.int64))

    def scatter_add(self, dim: int, index: Any, src: Any) -> Tensor:
        """A copy of self with each src[i][j][k] added at [index[i][j][k]][j][k] (for dim 0; as
        torch.scatter_add): gather run backwards. self gets G, src gets G read back at index."""
        dim = check_dim("scatter_add", dim, self.shape or (1,))
        idx = np.asarray(as_array(index))
        if idx.dtype.kind not in "iu":
            raise TypeError(f"scatter_add(): index must hold integers, got dtype {idx.dtype}")
        src_shape = np.shape(as_array(src))
        sizes = enumerate(zip(idx.shape, src_shape, self.shape))
        fits = idx.ndim == self.ndim == len(src_shape) and all(
            n <= m and (d == dim or n <= k) for d, (n, m, k) in sizes)
        if not fits:
            raise ShapeError(f"scatter_add(): index has shape {idx.shape}, which does not fit src's shape "
                             f"{src_shape} and the tensor's {self.shape} (the same number of axes, none "
                             f"larger than src's, nor than the tensor's off dim {dim})")
        check_in_range(idx, self.shape[dim], who="scatter_add", item="index", name="index",
                       range_of=f"dim {dim} of size {self.shape[dim]}")
        if not isinstance(src, ArrayHolder):
            src = np.asarray(src, dtype=self.dtype)
        elif src.data.dtype != self.dtype:
            raise ArgumentError(f"scatter_add(): src has dtype {src.data.dtype}, the tensor {self.dtype}; "
                                "they must be the same (as PyTorch)")
        return ops.ScatterAdd.apply(self, src, index=idx, axis=dim)

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return int(self.data.size)

    def tolist(self) -> Any:
        return self.data.tolist()

    def contiguous(self) -> Self | Tensor:
        """This tensor if its array is C-contiguous, else a contiguous copy (with gradient)."""
        return self if self.data.flags.c_contiguous else ops.Clone.apply(self)

    # ---- remembering views -------------------------------------------------------------------
    def _view(self, make: Callable[[TensorLayout], Tensor]) -> Tensor:
        """make(self), remembered as a view when it shares self's memory: an in-place op that
        rebases the base's history then remakes the view's node from the new history (as PyTorch
        regenerates a view's grad_fn), so reading the view never uses a stale graph."""
        out = make(self)
        if out.data.base is not None and np.may_share_memory(out.data, self.data):
            root, parent = self._base, self._from_base  # both set when self is a view itself
            if root is None or parent is None:
                root = self
                out._base, out._from_base = root, make
            else:  # a view of a view: remade from the first base, through both ops
                out._base, out._from_base = root, lambda base: make(parent(base))
            views = root._views
            if views is None:
                views = root._views = []
            views.append(weakref.ref(out))
            if len(views) > 8:  # a base viewed every step (E.T): drop the views that are gone
                views[:] = root._live_views()
        return out

    def _live_views(self) -> list[weakref.ref[TensorLayout]]:
        return [ref for ref in self._views or () if ref() is not None]

    def _remake_views(self) -> None:
        for ref in self._live_views():
            view = ref()
            if view is not None and view._from_base is not None:  # (set for every view)
                remade = view._from_base(self)
                view.grad_fn, view.requires_grad = remade.grad_fn, remade.requires_grad


    # ---- dtype conversions ------------------------------------------------------------------
    def to(self, *args: Any, dtype: Any = None, device: Any = None, copy: bool = False) -> Self | Tensor:
        """This tensor in another dtype (`t.to(mg.float64)`, `t.to(other_tensor)`); devices other
        than "cpu" are refused. Float-to-float keeps the gradient; the same dtype returns self
        unless copy=True, as PyTorch."""
        for arg in args:
            if isinstance(arg, ArrayHolder):
                arg = arg.data.dtype
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

    def _cast(self, dtype: np.dtype[Any], copy: bool) -> Self | Tensor:
        if dtype == self.dtype:
            return self.clone() if copy else self
        if dtype.kind == "f" and self.dtype.kind == "f":
            return ops.Cast.apply(self, dtype=dtype)  # the gradient goes back as self's dtype
        return self._new(self.data.astype(dtype))  # to or from ints and bools: no gradient

    def float(self) -> Self | Tensor:
        return self._cast(np.dtype(np.float32), False)

    def double(self) -> Self | Tensor:
        return self._cast(np.dtype(np.float64), False)

    def half(self) -> Self | Tensor:
        return self._cast(np.dtype(np.float16), False)

    def long(self) -> Self | Tensor:
        return self._cast(np.dtype(np.int64), False)

    def int(self) -> Self | Tensor:
        return self._cast(np.dtype(np.int32), False)

    def bool(self) -> Self | Tensor:
        return self._cast(np.dtype(np.bool_), False)



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


# ---- indexing with ints and arrays together ---------------------------------------------------------
# numpy counts an int as an advanced index when an array is in the index too, and when the
# advanced indices are apart (x[1, :, ids]) it moves their axes to the front; PyTorch indexes
# with the ints first, as plain indexing, so ids' axes stay where ids is.

def _is_int(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _is_bool_array(item: Any) -> bool:
    return isinstance(item, np.ndarray) and item.dtype == np.bool_


def _ints_among_arrays(index: Any) -> bool:
    """Whether `index` holds an int and, apart from it, an array index (where numpy and PyTorch
    place the result's axes differently)."""
    if not isinstance(index, tuple):
        return False
    has_int = any(_is_int(i) for i in index)
    return has_int and any(isinstance(i, np.ndarray) and i.ndim > 0 for i in index)
