"""Row-sparse gradients: the gradient of a table lookup names only the rows it touched.

`RowSparse(indices, values, shape)` stands for the dense `(V, d)` array that is zero except
`dense[indices[k]] += values[k]`. Repeated indices are allowed until `coalesce()` sums them.

Layout rules (what `add_grads` does, and so what a parameter's `.grad` becomes):

    sparse + sparse -> sparse, coalesced (unique sorted rows): a table's `.grad` holds at most
                       one row per id ever touched, however many lookups or backward calls
                       contributed, and never the (V, d) zeros of the untouched rows.
    sparse + dense  -> dense: a tied table densifies as soon as the classifier path arrives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import kernels
from minigrad.engine.arrays import Array, DType
from minigrad.engine.checks import check_in_range


class RowSparse:
    """A `(V, *row_shape)` gradient stored as the rows that are present.

    indices: (n,) int64 row ids in [0, V), possibly repeated unless coalesced
    values:  (n, *row_shape) one row of gradient per index
    shape:   the dense shape (V, *row_shape)
    coalesced: pass True only for unique, sorted indices (checked)
    """

    __slots__ = ("indices", "values", "shape", "coalesced")
    indices: Array
    values: Array
    shape: tuple[int, ...]
    coalesced: bool
    # `ndarray + RowSparse` must reach RowSparse.__radd__, not broadcast us as an object scalar
    __array_ufunc__ = None

    def __init__(self, indices: Any, values: Any, shape: tuple[int, ...], coalesced: bool = False):
        indices = np.asarray(indices)
        if indices.size and indices.dtype.kind not in "iu":
            raise TypeError(f"RowSparse: indices must be integer row ids, got dtype {indices.dtype}")
        indices = indices.astype(np.int64, copy=False).reshape(-1)
        values = np.asarray(values)
        shape = tuple(int(s) for s in shape)
        if len(shape) == 0:
            raise ValueError("RowSparse: shape must have at least one axis (the rows), got ()")
        if values.shape != (indices.size, *shape[1:]):
            raise ValueError(
                f"RowSparse: values has shape {values.shape}, expected "
                f"{(indices.size, *shape[1:])} (one row of shape {shape[1:]} per index)"
            )
        check_in_range(indices, shape[0], who="RowSparse", item="row index", name="indices",
                       range_of=f"{shape[0]} rows")
        if coalesced and np.any(indices[1:] <= indices[:-1]):
            raise ValueError("RowSparse: coalesced=True needs unique, sorted indices")
        self.indices = indices
        self.values = values
        self.shape = shape
        self.coalesced = coalesced

    @classmethod
    def zeros(cls, shape: tuple[int, ...], dtype: Any = np.float32) -> RowSparse:
        """The all-zero gradient of a `shape` table: no rows stored (e.g. a batch of no tokens)."""
        shape = tuple(int(s) for s in shape)
        return cls(np.zeros(0, np.int64), np.zeros((0, *shape[1:]), dtype), shape, coalesced=True)

    @property
    def dtype(self) -> DType:
        return self.values.dtype

    @property
    def nnz_rows(self) -> int:
        """How many distinct rows are present (the rows a dense gradient would not be zero in)."""
        if self.coalesced:
            return int(self.indices.size)
        return int(np.unique(self.indices).size)

    @property
    def nbytes(self) -> int:
        """Bytes held: the indices plus the stored rows (compare with the dense V * d * itemsize)."""
        return int(self.indices.nbytes + self.values.nbytes)

    def coalesce(self) -> RowSparse:
        """Unique sorted rows with duplicates summed (never `dense[idx] += g`, which drops repeats).

        kernels.segment_sums sorts the ids stably (each row's contributions are added in the order
        they came) and sums each run of one id. Two coalesced gradients concatenated are two sorted
        runs, which the stable sort (timsort) merges in linear time: accumulating into a `.grad`
        stays cheap.
        """
        if self.coalesced:
            return self
        if self.indices.size == 0:
            return RowSparse.zeros(self.shape, self.dtype)
        unique, sums = kernels.segment_sums(self.indices, self.values)
        return RowSparse(unique, sums, self.shape, coalesced=True)

    def to_dense(self) -> Array:
        """The full `shape` array (this is where the untouched rows' zeros get materialised)."""
        out = np.zeros(self.shape, dtype=self.values.dtype)
        c = self.coalesce()
        out[c.indices] = c.values  # unique ids after coalesce, so assignment is exact
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> Array:
        # numpy would otherwise wrap us as a 0-d object array. Densifying here would hide the
        # cost the sparse layout exists to avoid (V rows, most of them zero), so ask for it.
        raise TypeError(
            f"RowSparse ({self.nnz_rows} of {self.shape[0]} rows stored, shape {self.shape}) is not "
            "converted to a numpy array implicitly: call .to_dense() for the full array (zeros "
            "in the rows not stored), or read .indices and .values"
        )

    def astype(self, dtype: Any) -> RowSparse:
        """A copy with values of `dtype` (always a fresh copy, so it may be owned by a `.grad`)."""
        values = self.values.astype(dtype, copy=True)
        return RowSparse(self.indices.copy(), values, self.shape, self.coalesced)

    def __add__(self, other: Any) -> Any:
        return add_grads(self, other)

    __radd__ = __add__

    def __mul__(self, scalar: float) -> RowSparse:
        if isinstance(scalar, RowSparse) or np.ndim(scalar) != 0:
            raise TypeError("RowSparse: * supports a scalar only; use to_dense() for elementwise products")
        return RowSparse(self.indices, self.values * scalar, self.shape, self.coalesced)

    __rmul__ = __mul__

    def __neg__(self) -> RowSparse:
        return self * -1

    def __repr__(self) -> str:
        return (
            f"RowSparse(rows={self.indices.size}, shape={self.shape}, dtype={self.values.dtype}"
            f"{', coalesced' if self.coalesced else ''})"
        )


def add_grads(a: Any, b: Any) -> Any:
    """Sum two gradients: sparse + sparse stays sparse (and coalesced), anything + dense is dense."""
    if isinstance(a, RowSparse) and isinstance(b, RowSparse):
        _check_same_shape(a.shape, b.shape, "RowSparse", "RowSparse")
        both = RowSparse(
            np.concatenate([a.indices, b.indices]),
            np.concatenate([a.values, b.values]),
            a.shape,
        )
        return both.coalesce()
    if isinstance(a, RowSparse):
        a, b = b, a
    if isinstance(b, RowSparse):
        a = np.asarray(a)
        _check_same_shape(a.shape, b.shape, "dense", "RowSparse")
        out = np.array(a, dtype=np.result_type(a, b.values), copy=True)
        add_into(out, b)
        return out
    return np.asarray(a + b)  # 0-d + 0-d is a numpy scalar: keep gradients arrays


def add_into(total: Array, g: Any) -> None:
    """total += g in place, for a dense `total` and a dense or RowSparse `g` of its shape."""
    if isinstance(g, RowSparse):
        rows = g.coalesce()
        total[rows.indices] += rows.values  # unique ids after coalesce, so += is exact
    else:
        total += g


def _check_same_shape(a: tuple[int, ...], b: tuple[int, ...], a_kind: str, b_kind: str) -> None:
    if tuple(a) != tuple(b):
        raise ValueError(f"cannot add a {a_kind} gradient of shape {tuple(a)} and a {b_kind} "
                         f"gradient of shape {tuple(b)}: gradients of one tensor share its shape")


def to_dense(grad: Any) -> Any:
    return grad.to_dense() if isinstance(grad, RowSparse) else grad


def zeroed(grad: Any) -> Any:
    """`grad` set to zero in its own layout (for zero_grad(set_to_none=False)): None stays None,
    an array is zeroed in place (as in PyTorch), a RowSparse keeps its shape and names no row."""
    if grad is None:
        return None
    if isinstance(grad, RowSparse):
        return RowSparse.zeros(grad.shape, grad.values.dtype)
    if isinstance(grad, np.ndarray) and grad.flags.writeable:
        grad[...] = 0
        return grad
    return np.zeros_like(grad)  # a 0-d numpy scalar or a read-only array cannot change in place
