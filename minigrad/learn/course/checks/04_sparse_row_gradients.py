"""Check for lesson 4: the learner's Embedding Function, forward and backward.

A row's gradient is the sum over the positions that read it, each row read is named once,
nobody else's row appears, and the numbers agree with finite differences.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Context, RowSparse, tensor
from minigrad.nn import functional as F
from minigrad.tools.gradcheck import gradcheck

from . import _common as common

# (ids, V, d): each has a repeated id and rows nobody reads
CASES = [
    (np.array([[1, 3, 1, 6]]), 8, 3),                     # row 1 twice
    (np.array([[2, 0, 2, 5], [2, 7, 0, 1]]), 9, 2),      # row 2 three times, row 0 twice
    (np.array([4, 1, 4, 4, 0]), 6, 2),                   # a flat batch of ids (T,), row 4 three times
]
PADDING = (np.array([[4, 2, 4, 0, 2]]), 6, 3, 2)          # (ids, V, d, padding_idx): row 2 is padding


class _CoalesceRefused(AssertionError):
    pass


@contextlib.contextmanager
def _without_coalesce() -> Iterator[None]:
    """RowSparse.coalesce sums repeated rows, the very step the exercise asks for: refuse it
    on an uncoalesced RowSparse while the learner's code runs."""
    original = RowSparse.coalesce

    def refused(self: RowSparse) -> RowSparse:
        if self.coalesced:
            return self
        raise _CoalesceRefused(
            "your backward called RowSparse.coalesce() (directly, or through to_dense() or nnz_rows), "
            "which sums the repeated rows for you: that sum is this exercise. Work out, with numpy, "
            "which rows were read and the sum of each row's vectors")

    RowSparse.coalesce = refused
    try:
        yield
    finally:
        RowSparse.coalesce = original


def _forward(embedding: type, weight: np.ndarray, ids: np.ndarray, **options: Any) -> tuple[Context, Any]:
    ctx = Context()
    ctx.needs_input_grad = (True, False)
    with _without_coalesce():
        out = embedding.forward(ctx, weight, ids, **options)
    expected = weight[ids]
    got = np.asarray(out)
    if got.shape != expected.shape:
        raise AssertionError(
            f"Embedding.forward returned shape {got.shape} for ids of shape {ids.shape} and a table of "
            f"shape {weight.shape}; expected {expected.shape}: one row of the table per id, (*ids.shape, d)")
    if not np.array_equal(got, expected):
        raise AssertionError("Embedding.forward returned the wrong rows: out[b, t] must be weight[ids[b, t]]")
    return ctx, out


def _backward(embedding: type, ctx: Context, upstream: np.ndarray) -> Any:
    """The table's gradient from the learner's backward, after checking what else it returned."""
    with _without_coalesce():
        grads = embedding.backward(ctx, upstream.copy())
    return common.float_input_gradient(grads, "Embedding", "dL/dweight", "ids",
                                       "integer positions in the table")


def _check_layout(grad: Any, ids: np.ndarray, shape: tuple[int, ...], upstream: np.ndarray,
                  sparse: bool, padding_idx: int | None = None) -> np.ndarray:
    """The gradient as a dense float64 array, after checking its layout; diagnoses layout mistakes."""
    if not sparse:
        return _dense_layout(grad, shape)
    _check_row_sparse(grad, shape, upstream)
    _check_rows_named(grad.indices, ids, padding_idx)
    dense = np.zeros(shape)
    dense[grad.indices] = np.asarray(grad.values)
    return common.as_array(dense, "dL/dweight")


def _dense_layout(grad: Any, shape: tuple[int, ...]) -> np.ndarray:
    """sparse=False: a dense (V, d) array."""
    if isinstance(grad, RowSparse):
        raise AssertionError("with sparse=False, return the table's gradient as a dense (V, d) numpy "
                             "array, not a RowSparse")
    got = common.as_array(grad, "dL/dweight (sparse=False)")
    common.expect_shape(got, shape, "dL/dweight (sparse=False)")
    return got


def _check_row_sparse(grad: Any, shape: tuple[int, ...], upstream: np.ndarray) -> None:
    """sparse=True: a RowSparse of the table's shape, in the dtype the gradient arrived in."""
    if isinstance(grad, np.ndarray):
        raise AssertionError(
            f"with sparse=True (the default) return a RowSparse, not a dense {grad.shape} array: it should "
            f"name only the rows the batch read, so that its size grows with the batch, not with V")
    if not isinstance(grad, RowSparse):
        raise AssertionError(f"Embedding.backward returned a {type(grad).__name__} for the table; "
                             "with sparse=True return mg.RowSparse(indices, values, shape)")
    if tuple(grad.shape) != tuple(shape):
        raise AssertionError(f"your RowSparse has shape {grad.shape}; it stands for the table's gradient, "
                             f"so its shape must be the table's, {shape}")
    values = np.asarray(grad.values)
    if values.dtype != upstream.dtype:
        raise AssertionError(f"your RowSparse's values are {values.dtype}, but grad is {upstream.dtype}: "
                             "keep the gradient in the dtype it arrived in (np.zeros(..., dtype=grad.dtype))")


def _check_rows_named(indices: np.ndarray, ids: np.ndarray, padding_idx: int | None) -> None:
    """The RowSparse names each row the batch read once, and no other row (not the padding row)."""
    unique, counts = np.unique(indices, return_counts=True)
    repeated = unique[counts > 1]
    if repeated.size:
        row = int(repeated[0])
        raise AssertionError(
            f"your RowSparse lists row {row} {common.times(int(counts[unique == row][0]))}: name each row "
            "once, with the sum of the vectors of every position that read it")
    read = set(int(i) for i in np.unique(ids) if i != padding_idx)
    extra = sorted(set(int(i) for i in indices) - read)
    if extra:
        what = "the padding row" if extra == [padding_idx] else "rows that no position read"
        raise AssertionError(
            f"your RowSparse stores {what} ({', '.join(map(str, extra[:6]))}"
            f"{', ...' if len(extra) > 6 else ''}): it should name only the rows that receive a gradient"
            + ("; the padding row receives none" if padding_idx in extra else
               ", so that it costs memory in proportion to the batch, not to the vocabulary"))
    missing = sorted(read - set(int(i) for i in indices))
    if missing:
        raise AssertionError(f"your RowSparse leaves out row(s) {missing}, which the batch read: every row "
                             "read needs its gradient")


def _occurrences(ids: np.ndarray, upstream: np.ndarray) -> dict:
    """For each row read: one (position, upstream vector) pair per position that read it."""
    parts: dict = {}
    for position in np.ndindex(ids.shape):
        parts.setdefault(int(ids[position]), []).append((f"position {position}", upstream[position]))
    return parts


def _skipped_positions(got: np.ndarray, expected: np.ndarray, parts: dict) -> list[str] | None:
    """The positions whose gradient the answer left out, when leaving them out explains every
    wrong row and at least one read row got nothing at all (a dropped repeat, the other common
    bug, always leaves a row at least one of its occurrences)."""
    skipped, emptied = [], False
    for row in range(expected.shape[0]):
        if common.close(got[row], expected[row]):
            continue
        occurrences = parts.get(row, [])
        if not occurrences:
            return None  # an unread row that is not zero: not a skipped position
        if not np.any(got[row]):
            skipped += [name for name, _ in occurrences]
            emptied = True
            continue
        missing = common.missing_parts(got[row], occurrences)
        if missing is None:
            return None
        skipped += [occurrences[i][0] for i in missing]
    return sorted(skipped) if emptied else None


def _expected(ids: np.ndarray, upstream: np.ndarray, shape: tuple[int, ...],
              padding_idx: int | None = None) -> np.ndarray:
    """minigrad's own lookup backward, confirmed by finite differences; the padding row (which
    the forward still reads) is then set to zero, as PyTorch's rule says."""
    table = np.random.default_rng(0).standard_normal(shape)
    expected = common.reference_gradient(lambda e: F.embedding(ids, e), [table],
                                         upstream=upstream)
    if padding_idx is not None:
        expected[padding_idx] = 0.0
    return expected


def _compare(got: np.ndarray, expected: np.ndarray, ids: np.ndarray, upstream: np.ndarray) -> None:
    parts = _occurrences(ids, upstream)
    skipped = _skipped_positions(got, expected, parts)
    if skipped:
        raise AssertionError(
            f"dL/dweight leaves out the gradient of {len(skipped)} of the {ids.size} positions "
            f"({', '.join(skipped)}): the rows read there are missing it. Add the upstream vector of "
            f"every position of ids, both axes of (B, T) = {ids.shape}, into the row of its id")
    common.assert_matches(got, expected, "dL/dweight", parts=parts)


def _check_case(embedding: type, ids: np.ndarray, vocab_size: int, width: int, rng: np.random.Generator,
                dtype: Any = np.float64) -> None:
    shape = (vocab_size, width)
    upstream = rng.standard_normal((*ids.shape, width)).astype(dtype)
    expected = _expected(ids, upstream.astype(np.float64), shape)
    for sparse in (True, False):
        weight = rng.standard_normal(shape).astype(dtype)
        ctx, _ = _forward(embedding, weight, ids.copy(), sparse=sparse)
        got = _check_layout(_backward(embedding, ctx, upstream), ids, shape, upstream, sparse)
        _compare(got, expected, ids, upstream)


def _check_ids_are_kept(embedding: type, rng: np.random.Generator) -> None:
    """The caller's ids buffer changes between forward and backward (a data loader reusing it)."""
    ids, vocab_size, width = CASES[0]
    buffer = ids.copy()
    weight = rng.standard_normal((vocab_size, width))
    upstream = rng.standard_normal((*ids.shape, width))
    ctx, _ = _forward(embedding, weight, buffer)
    buffer[...] = (buffer + 2) % vocab_size  # the next batch, written into the same array
    grad = _backward(embedding, ctx, upstream)
    moved = _expected(buffer, upstream, (vocab_size, width))
    if isinstance(grad, RowSparse) and grad.indices.size == np.unique(buffer).size:
        as_dense = np.zeros((vocab_size, width))
        as_dense[grad.indices] = grad.values
        if common.close(as_dense, moved):
            raise AssertionError(
                "after forward, the caller wrote the next batch into the same ids array, and your backward "
                "sent the gradient to that batch's rows: forward must keep its own copy of ids (ids.copy())")
    got = _check_layout(grad, ids, (vocab_size, width), upstream, True)
    _compare(got, _expected(ids, upstream, (vocab_size, width)), ids, upstream)


def _check_padding(embedding: type, rng: np.random.Generator) -> None:
    ids, vocab_size, width, padding_idx = PADDING
    upstream = rng.standard_normal((*ids.shape, width))
    weight = rng.standard_normal((vocab_size, width))
    ctx, _ = _forward(embedding, weight, ids.copy(), padding_idx=padding_idx)
    got = _check_layout(_backward(embedding, ctx, upstream), ids, (vocab_size, width), upstream, True,
                        padding_idx=padding_idx)
    expected = _expected(ids, upstream, (vocab_size, width), padding_idx)
    if np.any(got[padding_idx]):
        raise AssertionError(f"with padding_idx={padding_idx}, row {padding_idx} must get no gradient (a "
                             "padding position carries no token), but yours gave it one")
    _compare(got, expected, ids, upstream)


def _check_finite_differences(embedding: type, rng: np.random.Generator) -> None:
    """Through the engine, as the lesson will run it: apply, backward, and central differences."""
    ids, vocab_size, width = CASES[1]
    for sparse in (True, False):
        table = tensor(rng.standard_normal((vocab_size, width)), requires_grad=True, name="weight")
        report = gradcheck(lambda w, s=sparse: embedding.apply(w, ids, sparse=s), [table],
                              raise_exception=False)
        if not report.ok:
            raise AssertionError(f"your Embedding disagrees with finite differences (sparse={sparse}):"
                                 f"\n{report}")


def check(answers: ModuleType) -> None:
    embedding = common.answer_function_class(answers, "Embedding")
    rng = np.random.default_rng(44)
    for ids, vocab_size, width in CASES:
        _check_case(embedding, ids, vocab_size, width, rng)
    _check_case(embedding, CASES[0][0], CASES[0][1], CASES[0][2], rng, dtype=np.float32)
    _check_ids_are_kept(embedding, rng)
    _check_padding(embedding, rng)
    _check_finite_differences(embedding, rng)
