"""Check for lesson 3: dL/dE = O^T G, compared with minigrad's backward and finite differences."""

from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import tensor

from . import _common as common

# (ids, V, d). The first case has N == V, so the wrong product O G still has the right shape
# and must be caught by its values; in the second it cannot even be computed. Every case has
# a repeated id and rows that nobody reads; in the third they are the last rows of the table.
CASES = [
    (np.array([1, 3, 1, 0, 5, 1]), 6, 4),
    (np.array([2, 7, 2, 4, 0, 8, 2]), 9, 3),
    (np.array([3, 0, 3]), 6, 2),
]

# (one_hot's dtype, upstream's dtype): the gradient must come back in upstream's dtype. A one-hot
# is exact in float32, so a float32 one_hot may meet a float64 upstream.
DTYPES = [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64)]


def _one_hot(ids: np.ndarray, vocab_size: int) -> np.ndarray:
    rows = np.zeros((ids.size, vocab_size))
    rows[np.arange(ids.size), ids] = 1.0
    return rows


def _occurrences(ids: np.ndarray, upstream: np.ndarray) -> dict:
    """For each row read: one (name, upstream vector) pair per position that read it."""
    parts: dict = {}
    for position, row in enumerate(ids):
        parts.setdefault(int(row), []).append((f"position {position}", upstream[position]))
    return parts


def _check_edges(table_grad_from_one_hot: Any, rng: np.random.Generator) -> None:
    """An empty batch (no position reads anything) and float32 arrays (the gradient keeps them)."""
    empty = common.as_array(common.call_answer(table_grad_from_one_hot, np.zeros((0, 5)), np.zeros((0, 3)),
                                               hint="Here the batch is empty: N = 0"),
                            "dL/dE for an empty batch")
    common.expect_shape(empty, (5, 3), "dL/dE for an empty batch (N = 0, V = 5, d = 3)")
    if np.any(empty):
        raise AssertionError("dL/dE for an empty batch should be all zero: no position read any row")
    ids, vocab_size, width = CASES[0]
    onehot, upstream = _one_hot(ids, vocab_size), rng.standard_normal((ids.size, width))
    for onehot_dtype, upstream_dtype in DTYPES:
        got = common.call_answer(table_grad_from_one_hot, onehot.astype(onehot_dtype),
                                 upstream.astype(upstream_dtype))
        dtype = np.asarray(got).dtype if not isinstance(got, common.Opaque) else None
        if dtype != upstream_dtype:
            raise AssertionError(
                f"for a {np.dtype(onehot_dtype)} one_hot and a {np.dtype(upstream_dtype)} upstream "
                f"your dL/dE is {dtype}: the table's gradient keeps the dtype of the gradient that "
                "arrived, upstream's (a float32 model's table gets a float32 gradient, a float64 one a "
                "float64 gradient); do not round it to another dtype")


def check(answers: ModuleType) -> None:
    table_grad_from_one_hot = common.answer_function(answers, "table_grad_from_one_hot")
    rng = np.random.default_rng(33)
    for ids, vocab_size, width in CASES:
        n = ids.size
        onehot = _one_hot(ids, vocab_size)
        upstream = rng.standard_normal((n, width))
        table = rng.standard_normal((vocab_size, width))
        expected = common.reference_gradient(lambda e, o=onehot: tensor(o) @ e, [table], upstream=upstream)

        hint = (f"Shapes here: one_hot is (N, V) = {onehot.shape}, upstream is (N, d) = {upstream.shape}, "
                f"and dL/dE must be (V, d) = {(vocab_size, width)}: which product of the two has that shape?")
        answer = common.call_answer(table_grad_from_one_hot, onehot, upstream, hint=hint)
        got = common.as_array(answer, "dL/dE")
        common.expect_shape(got, (vocab_size, width), "dL/dE", known={
            (width, vocab_size): "it is transposed (G^T O); the gradient has the table's shape (V, d): O^T G",
            (n, width): "that is one row per position, like G itself; the gradient needs one row per "
                        "vocabulary entry: O^T G adds each position's G into the row of its token",
        })
        mistakes = []
        if n == vocab_size:  # only then does O G have the right shape
            mistakes.append((onehot @ upstream,
                             "you computed O G, which treats positions as if they were vocabulary rows (its "
                             "shape only fits because N = V here); the gradient of X = O E with respect to "
                             "E is O^T G"))
        common.assert_matches(got, expected, "dL/dE", mistakes, parts=_occurrences(ids, upstream))
    _check_edges(table_grad_from_one_hot, rng)
