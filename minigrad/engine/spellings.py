"""PyTorch's spellings: the names a learner brings from PyTorch, with PyTorch's meaning.

numpy's names (`t.shape`, `t.size`, `t.sum(axis=...)`) live on the Tensor itself; this class,
mixed into Tensor, adds PyTorch's (`t.dim()`, `t.numel()`, `t.size(1)`, `t.unsqueeze(0)`, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arguments import axis_args, broadcast_shape, check_dim
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
        dim, keepdim = axis_args("argmax", axis, keepdim, dim, None)
        if dim is None:
            return self._new(np.asarray(self.data.argmax(), dtype=np.int64))
        dim = check_dim("argmax", dim, self.shape)
        return self._new(self.data.argmax(axis=dim, keepdims=keepdim).astype(np.int64))

    def __ne__(self, other: Any) -> np.ndarray:  # type: ignore[override]
        return self.data != np.asarray(_array_of(other))

    def __le__(self, other: Any) -> np.ndarray:
        return self.data <= np.asarray(_array_of(other))

    def __ge__(self, other: Any) -> np.ndarray:
        return self.data >= np.asarray(_array_of(other))

    def unsqueeze(self, dim: int) -> Tensor:
        """A new axis of size 1 at `dim` (in [-ndim - 1, ndim], as PyTorch)."""
        dim = check_dim("unsqueeze", dim, self.shape + (1,))  # one more place than axes
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    def squeeze(self, dim: int | tuple[int, ...] | None = None) -> Tensor:
        """Drop axes of size 1: all of them, or those in `dim` (a named axis of another size stays,
        as in PyTorch)."""
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
