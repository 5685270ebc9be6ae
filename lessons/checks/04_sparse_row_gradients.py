"""Check for lesson 4: a row's gradient is the sum over its occurrences, zero elsewhere."""

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

from minigrad.nn import functional as F

_spec = importlib.util.spec_from_file_location("lesson_checks_common", Path(__file__).with_name("_common.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)

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
        common.assert_matches(got, expected, "dL/dE", parts=_occurrences(ids, upstream))
