"""Lesson 4 reference answer."""

import numpy as np

import minigrad as mg


class Embedding(mg.Function):
    """out[...] = weight[ids[...]]; dL/dweight names each row read once, its occurrences summed."""

    @staticmethod
    def forward(ctx, weight: np.ndarray, ids: np.ndarray, sparse: bool = True,
                padding_idx: int | None = None) -> np.ndarray:
        ctx.ids = ids.copy()  # the caller may reuse its ids array before backward runs
        ctx.shape, ctx.sparse, ctx.padding_idx = weight.shape, sparse, padding_idx
        return weight[ids]

    @staticmethod
    def backward(ctx, grad: np.ndarray):
        ids = ctx.ids.reshape(-1)
        vectors = grad.reshape(ids.size, *ctx.shape[1:])  # one upstream vector per position
        if ctx.padding_idx is not None:
            keep = ids != ctx.padding_idx
            ids, vectors = ids[keep], vectors[keep]
        rows, row_of_position = np.unique(ids, return_inverse=True)
        sums = np.zeros((rows.size, *ctx.shape[1:]), dtype=grad.dtype)
        np.add.at(sums, row_of_position, vectors)  # unbuffered: every occurrence is added
        if ctx.sparse:
            return mg.RowSparse(rows, sums, ctx.shape, coalesced=True), None
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        dense[rows] = sums  # rows are unique, so plain assignment is exact
        return dense, None
