"""Check for lesson 4: a row's gradient is the sum over its occurrences, zero elsewhere."""

from types import ModuleType

import numpy as np

from minigrad.nn import functional as F

from . import _common as common

# (ids, V, d): each has a repeated id and rows nobody reads
CASES = [
    (np.array([[1, 3, 1, 6]]), 8, 3),                     # row 1 twice
    (np.array([[2, 0, 2, 5], [2, 7, 0, 1]]), 9, 2),      # row 2 three times, row 0 twice
]


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


def check(answers: ModuleType) -> None:
    row_gradients = common.answer_function(answers, "row_gradients")
    rng = np.random.default_rng(44)
    for ids, vocab_size, width in CASES:
        upstream = rng.standard_normal((*ids.shape, width))
        table = rng.standard_normal((vocab_size, width))
        expected = common.reference_gradient(lambda e, i=ids: F.embedding(i, e), [table], upstream=upstream)

        hint = (f"Shapes here: ids is (B, T) = {ids.shape}, upstream is (B, T, d) = {upstream.shape}, "
                f"V = {vocab_size};"
                f" return a ({vocab_size}, {width}) array or a dict {{row: ({width},) array}}")
        answer = common.call_answer(row_gradients, ids, upstream, vocab_size, hint=hint)
        got = common.as_array(answer, "dL/dE", shape=(vocab_size, width))
        common.expect_shape(got, (vocab_size, width), "dL/dE", known={
            upstream.shape: "that is one vector per position (the upstream itself); the table's gradient "
                            "has a row for each vocabulary entry: add each position's vector into the row of "
                            "the id read there",
            (ids.size, width): "that is one vector per position; the table's gradient has a row for each "
                               "vocabulary entry: add each position's vector into the row of its id",
        })
        parts = _occurrences(ids, upstream)
        skipped = _skipped_positions(got, expected, parts)
        if skipped:
            raise AssertionError(
                f"dL/dE leaves out the gradient of {len(skipped)} of the {ids.size} positions "
                f"({', '.join(skipped)}): the rows read there are missing it. Add the upstream vector "
                f"of every position of ids, both axes of (B, T) = {ids.shape}, into the row of its id")
        common.assert_matches(got, expected, "dL/dE", parts=parts)
