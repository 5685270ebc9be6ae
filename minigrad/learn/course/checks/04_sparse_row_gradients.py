"""Check for lesson 4: the learner's Embedding Function, forward and backward.

A row's gradient is the sum over the positions that read it, each row read is named once,
nobody else's row appears, and the numbers agree with finite differences.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Context, RowSparse, tensor, to_dense
from minigrad.learn.course.learner import LearnerRaised, probe, run
from minigrad.nn import functional as F

from . import _common as common

# (ids, V, d): each has a repeated id and rows nobody reads
CASES = [
    (np.array([[1, 3, 1, 6]]), 8, 3),                     # row 1 twice
    (np.array([[2, 0, 2, 5], [2, 7, 0, 1]]), 9, 2),      # row 2 three times, row 0 twice
    (np.array([4, 1, 4, 4, 0]), 6, 2),                   # a flat batch of ids (T,), row 4 three times
]
PADDING = (np.array([[4, 2, 4, 0, 2]]), 6, 3, 2)          # (ids, V, d, padding_idx): row 2 is padding
# the edges of "ids of shape S": one id (S = ()), and batches that read nothing
EDGES = [
    (np.array(3), 6, 2, "a single id (ids of shape ())"),
    (np.zeros(0, dtype=np.int64), 5, 3, "an empty batch (ids of shape (0,))"),
    (np.zeros((2, 0), dtype=np.int64), 4, 2, "a batch of empty sequences (ids of shape (2, 0))"),
]


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

    RowSparse.coalesce = refused  # type: ignore[method-assign]  # for this block only (see finally)
    try:
        yield
    finally:
        RowSparse.coalesce = original  # type: ignore[method-assign]  # the method back as it was


# ---- in the learner's process: their Embedding on the check's inputs --------------------------

_KEPT: dict[str, tuple[Context, np.ndarray]] = {}  # a forward's ctx and ids buffer, until its backward


@probe
def lookup_forward(answers, key: str, weight: np.ndarray, ids: np.ndarray, options: dict) -> Any:
    """The learner's Embedding.forward; its ctx (and the caller's ids array) kept under `key`."""
    ctx = Context()
    ctx.needs_input_grad = (True, False)
    with _without_coalesce():
        out = answers.Embedding.forward(ctx, weight, ids, **options)
    _KEPT[key] = (ctx, ids)
    return out


@probe
def lookup_backward(answers, key: str, upstream: np.ndarray, next_batch: np.ndarray | None = None) -> Any:
    """The learner's Embedding.backward for the forward kept under `key`; with `next_batch`,
    the caller first writes the next batch's ids into the array the forward was given."""
    ctx, ids = _KEPT.pop(key)
    if next_batch is not None:
        ids[...] = next_batch
    with _without_coalesce():
        return answers.Embedding.backward(ctx, upstream)


@probe
def lookup_backward_twice(answers, key: str, upstream: np.ndarray) -> tuple:
    """The learner's Embedding.backward run twice on the forward kept under `key`, each time on
    its own copy of `upstream`: (first result, second result, whether the first wrote into its grad)."""
    ctx, _ = _KEPT.pop(key)
    given = upstream.copy()
    with _without_coalesce():
        first = copy.deepcopy(answers.Embedding.backward(ctx, given))
        second = answers.Embedding.backward(ctx, upstream.copy())
    return first, second, not np.array_equal(given, upstream)


@probe
def lookup_through_the_engine(answers, table: np.ndarray, ids: np.ndarray, upstream: np.ndarray,
                              sparse: bool) -> tuple:
    """(output, dense table gradient) of the learner's Embedding run by the engine, as a model runs it."""
    weight = tensor(table, requires_grad=True, name="weight")
    out = answers.Embedding.apply(weight, ids, sparse=sparse)
    out.backward(upstream)
    return out.data, None if weight.grad is None else to_dense(weight.grad)


# ---- here: the check --------------------------------------------------------------------------

def _learners(answers: Any, probe_function: Any, *args: Any, on: str = "") -> Any:
    """A probe's result; the check's refusal of coalesce(), raised there, becomes its diagnosis,
    and an error on one of the edge cases (`on`) says which."""
    try:
        return run(answers, probe_function, *args)
    except NotImplementedError:
        raise
    except LearnerRaised as error:
        if error.kind == _CoalesceRefused.__name__:
            raise AssertionError(error.message) from error
        if on:
            raise AssertionError(f"on {on}, your Embedding raised {error.kind}: {error}\nids can be one id, "
                                 "or a batch with no positions at all") from error
        raise


def _forward(answers: Any, weight: np.ndarray, ids: np.ndarray, on: str = "", **options: Any) -> str:
    """Run the learner's forward (kept in their process for the backward); check its output."""
    out = _learners(answers, lookup_forward, "lookup", weight, ids, options, on=on)
    expected = weight[ids]
    got = common.as_array(out, "Embedding.forward's output")
    if got.shape != expected.shape:
        raise AssertionError(
            f"Embedding.forward returned shape {got.shape} for ids of shape {ids.shape} and a table of "
            f"shape {weight.shape}; expected {expected.shape}: one row of the table per id, (*ids.shape, d)")
    if not np.array_equal(got, expected):
        raise AssertionError("Embedding.forward returned the wrong rows: out[b, t] must be weight[ids[b, t]]")
    return "lookup"


def _backward(answers: Any, key: str, upstream: np.ndarray, next_batch: np.ndarray | None = None,
              on: str = "") -> Any:
    """The table's gradient from the learner's backward, after checking what else it returned."""
    grads = _learners(answers, lookup_backward, key, upstream, next_batch, on=on)
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


def _check_case(answers: Any, ids: np.ndarray, vocab_size: int, width: int, rng: np.random.Generator,
                dtype: Any = np.float64, on: str = "") -> None:
    shape = (vocab_size, width)
    upstream = rng.standard_normal((*ids.shape, width)).astype(dtype)
    expected = _expected(ids, upstream.astype(np.float64), shape)
    for sparse in (True, False):
        weight = rng.standard_normal(shape).astype(dtype)
        key = _forward(answers, weight, ids.copy(), on=on, sparse=sparse)
        got = _check_layout(_backward(answers, key, upstream, on=on), ids, shape, upstream, sparse)
        _compare(got, expected, ids, upstream)


def _check_ids_are_kept(answers: Any, rng: np.random.Generator) -> None:
    """The caller's ids buffer changes between forward and backward (a data loader reusing it)."""
    ids, vocab_size, width = CASES[0]
    weight = rng.standard_normal((vocab_size, width))
    upstream = rng.standard_normal((*ids.shape, width))
    key = _forward(answers, weight, ids.copy())
    next_batch = (ids + 2) % vocab_size  # the next batch, written into the same array
    grad = _backward(answers, key, upstream, next_batch)
    moved = _expected(next_batch, upstream, (vocab_size, width))
    if isinstance(grad, RowSparse) and grad.indices.size == np.unique(next_batch).size:
        as_dense = np.zeros((vocab_size, width))
        as_dense[grad.indices] = grad.values
        if common.close(as_dense, moved):
            raise AssertionError(
                "after forward, the caller wrote the next batch into the same ids array, and your backward "
                "sent the gradient to that batch's rows: forward must keep its own copy of ids (ids.copy())")
    got = _check_layout(grad, ids, (vocab_size, width), upstream, True)
    _compare(got, _expected(ids, upstream, (vocab_size, width)), ids, upstream)


def _check_padding(answers: Any, rng: np.random.Generator) -> None:
    ids, vocab_size, width, padding_idx = PADDING
    upstream = rng.standard_normal((*ids.shape, width))
    weight = rng.standard_normal((vocab_size, width))
    key = _forward(answers, weight, ids.copy(), padding_idx=padding_idx)
    got = _check_layout(_backward(answers, key, upstream), ids, (vocab_size, width), upstream, True,
                        padding_idx=padding_idx)
    expected = _expected(ids, upstream, (vocab_size, width), padding_idx)
    if np.any(got[padding_idx]):
        raise AssertionError(f"with padding_idx={padding_idx}, row {padding_idx} must get no gradient (a "
                             "padding position carries no token), but yours gave it one")
    _compare(got, expected, ids, upstream)


def _check_backward_leaves_its_inputs(answers: Any, rng: np.random.Generator) -> None:
    """Neither the gradient backward is given nor what forward saved is written into."""
    for ids, vocab_size, width, padding_idx in ((*CASES[1], None), PADDING):
        shape = (vocab_size, width)
        upstream = rng.standard_normal((*ids.shape, width))
        key = _forward(answers, rng.standard_normal(shape), ids.copy(), padding_idx=padding_idx)
        *runs, wrote = _learners(answers, lookup_backward_twice, key, upstream)
        one, two = (_check_layout(common.float_input_gradient(grads, "Embedding", "dL/dweight", "ids",
                                                              "integer positions in the table"),
                                  ids, shape, upstream, True, padding_idx) for grads in runs)
        on = "" if padding_idx is None else f" (with padding_idx={padding_idx})"
        common.assert_backward_leaves_its_inputs("Embedding", wrote, one, two, on)


def _check_through_the_engine(answers: Any, rng: np.random.Generator) -> None:
    """As the lesson will run it: apply and backward in the engine, against minigrad's gradient,
    which central differences confirm."""
    ids, vocab_size, width = CASES[1]
    upstream = rng.standard_normal((*ids.shape, width))
    expected = _expected(ids, upstream, (vocab_size, width))
    for sparse in (True, False):
        table = rng.standard_normal((vocab_size, width))
        out, grad = _learners(answers, lookup_through_the_engine, table, ids, upstream, sparse)
        if not common.close(common.as_array(out, "Embedding.apply's output"), table[ids]):
            raise AssertionError(f"Embedding.apply(weight, ids, sparse={sparse}) returned the wrong rows")
        report = common.finite_difference_report("weight", grad, expected)
        if report:
            raise AssertionError(f"your Embedding disagrees with finite differences (sparse={sparse}):"
                                 f"\n{report}")


def check(answers: ModuleType) -> None:
    common.answer_function_class(answers, "Embedding")
    rng = np.random.default_rng(44)
    for ids, vocab_size, width in CASES:
        _check_case(answers, ids, vocab_size, width, rng)
    _check_case(answers, CASES[0][0], CASES[0][1], CASES[0][2], rng, dtype=np.float32)
    _check_ids_are_kept(answers, rng)
    _check_padding(answers, rng)
    _check_backward_leaves_its_inputs(answers, rng)
    _check_through_the_engine(answers, rng)
    for ids, vocab_size, width, on in EDGES:  # last: a mistake in the common case is named first
        _check_case(answers, ids, vocab_size, width, rng, on=on)
