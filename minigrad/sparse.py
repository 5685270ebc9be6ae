"""Row-sparse gradients: the gradient of a table lookup names only the rows it touched.

`RowSparse(indices, values, shape)` stands for the dense `(V, d)` array that is zero except
`dense[indices[k]] += values[k]`. Repeated indices are allowed until `coalesce()` sums them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RowSparse:
    """A `(V, *row_shape)` gradient stored as the rows that are present.

    indices: (n,) int64 row ids, possibly repeated, in [0, V)
    values:  (n, *row_shape) one row of gradient per index
    shape:   the dense shape (V, *row_shape)
    """

    __slots__ = ("indices", "values", "shape", "coalesced")

    def __init__(self, indices: Any, values: Any, shape: tuple[int, ...], coalesced: bool = False):
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        values = np.asarray(values)
        shape = tuple(int(s) for s in shape)
        if values.shape != (indices.size, *shape[1:]):
            raise ValueError(
                f"RowSparse: values has shape {values.shape}, expected "
                f"{(indices.size, *shape[1:])} (one row of shape {shape[1:]} per index)"
            )
        if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
            bad = indices[(indices < 0) | (indices >= shape[0])][0]
            raise IndexError(
                f"RowSparse: row index {bad} is out of range for {shape[0]} rows "
                f"(indices must be in [0, {shape[0]}))"
            )
        self.indices = indices
        self.values = values
        self.shape = shape
        self.coalesced = coalesced

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nnz_rows(self) -> int:
        """How many distinct rows are present."""
        return int(self.coalesce().indices.size)

    @property
    def nbytes(self) -> int:
        return int(self.indices.nbytes + self.values.nbytes)

    def coalesce(self) -> RowSparse:
        """Unique sorted rows with duplicates summed (never `dense[idx] += g`, which drops repeats)."""
        if self.coalesced:
            return self
        order = np.argsort(self.indices, kind="stable")
        sorted_ids = self.indices[order]
        # start of each run of equal ids; a segmented sum adds each run into one row
        if sorted_ids.size == 0:
            return RowSparse(sorted_ids, self.values, self.shape, coalesced=True)
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        values = np.add.reduceat(self.values[order], starts, axis=0)
        return RowSparse(sorted_ids[starts], values, self.shape, coalesced=True)

    def to_dense(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.values.dtype)
        c = self.coalesce()
        out[c.indices] = c.values  # unique ids after coalesce, so assignment is exact
        return out

    def astype(self, dtype: Any) -> RowSparse:
        values = self.values.astype(dtype, copy=True)
        return RowSparse(self.indices.copy(), values, self.shape, self.coalesced)

    def __add__(self, other: Any) -> Any:
        return add_grads(self, other)

    __radd__ = __add__

    def __mul__(self, scalar: float) -> RowSparse:
        return RowSparse(self.indices, self.values * scalar, self.shape, self.coalesced)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return (
            f"RowSparse(rows={self.indices.size}, shape={self.shape}, dtype={self.values.dtype}"
            f"{', coalesced' if self.coalesced else ''})"
        )


def add_grads(a: Any, b: Any) -> Any:
    """Sum two gradients: sparse + sparse stays sparse, anything + dense is dense."""
    if isinstance(a, RowSparse) and isinstance(b, RowSparse):
        if a.shape != b.shape:
            raise ValueError(f"cannot add RowSparse of shape {a.shape} and {b.shape}")
        return RowSparse(
            np.concatenate([a.indices, b.indices]),
            np.concatenate([a.values, b.values]),
            a.shape,
        )
    if isinstance(a, RowSparse):
        a, b = b, a
    if isinstance(b, RowSparse):
        if a.shape != b.shape:
            raise ValueError(f"cannot add a dense gradient of shape {a.shape} and RowSparse {b.shape}")
        out = np.array(a, dtype=np.result_type(a, b.values), copy=True)
        c = b.coalesce()
        out[c.indices] += c.values  # unique ids after coalesce, so += is exact
        return out
    return a + b


def to_dense(grad: Any) -> Any:
    return grad.to_dense() if isinstance(grad, RowSparse) else grad
