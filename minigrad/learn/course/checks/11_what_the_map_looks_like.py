"""Check for lesson 11: the mean pairwise cosine of a table's rows, raw and centred.

The reference is computed by another route than the usual V x V matrix: with unit rows u_i, sum
over i != j of u_i . u_j = |sum_i u_i|^2 - V, so no cosine matrix is ever formed.
"""

from types import ModuleType
from typing import Any

import numpy as np

from . import _common as common


def _tables() -> list[np.ndarray]:
    """A hand-sized table first; then a cone: rows sharing an offset, of unequal lengths; two rows,
    the fewest there can be; a float32 table with two equal rows."""
    rng = np.random.default_rng(99)
    cone = (rng.standard_normal((7, 4)) + np.array([2.0, 1.0, 0.0, -1.0])) * rng.uniform(0.5, 3.0, (7, 1))
    twins = rng.standard_normal((5, 3)).astype(np.float32)
    twins[3] = twins[0]
    return [np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]]), cone, np.array([[1.0, 2.0], [3.0, 1.0]]),
            twins]


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _mean_off_diagonal(vectors: np.ndarray) -> float:
    """Mean of v_i . v_j over i != j, from |sum v|^2 - sum |v_i|^2."""
    V = len(vectors)
    total = vectors.sum(axis=0)
    return float((total @ total - np.sum(vectors * vectors)) / (V * (V - 1)))


def check(answers: ModuleType) -> None:
    _check_cosine(common.answer_function(answers, "mean_pairwise_cosine"))


def _check_cosine(mean_pairwise_cosine: Any) -> None:
    for table in _tables():
        for centre in (False, True):
            if len(table) == 2 and centre:
                continue  # two centred rows point opposite ways: -1 whatever the slip
            what = (f"mean_pairwise_cosine(table of shape {table.shape} and dtype {table.dtype}, "
                    f"centre={centre})")
            rows = table.astype(np.float64)
            rows = rows - rows.mean(axis=0) if centre else rows
            expected = _mean_off_diagonal(_unit(rows))
            got = common.as_number(common.call_keeping_inputs(mean_pairwise_cosine, table, centre), what)
            rtol = 1e-5 if table.dtype == np.float32 else 1e-7
            mistakes = _mistakes(table.astype(np.float64), rows, centre, expected)
            common.assert_number(got, expected, what, mistakes, rtol=rtol)


def _mistakes(table: np.ndarray, rows: np.ndarray, centre: bool, expected: float) -> list:
    V = len(table)
    unit = _unit(rows)
    total = unit.sum(axis=0)
    mistakes = [
        (_mean_off_diagonal(rows), "that is the mean dot product: scale each row to length 1 first "
                                   "(a cosine ignores how long the rows are)"),
        (float(total @ total) / V**2, "the diagonal is included: each row's cosine with itself (always 1) "
                                      "is not a pair, so leave out the V diagonal entries"),
        (expected * (V - 1) / V, f"you left out the diagonal but still divided by V^2 = {V * V}; there "
                                 f"are V (V - 1) = {V * (V - 1)} ordered pairs"),
        (2 * expected, "each pair is counted twice (i, j and j, i) but divided by the number of "
                       "unordered pairs V (V - 1) / 2"),
    ]
    own_mean = table - table.mean(axis=1, keepdims=True)
    if centre:
        centred_units = _unit(table) - _unit(table).mean(axis=0)
        mistakes += [
            (_mean_off_diagonal(_unit(table)), "the table was not centred: subtract the mean row from "
                                               "every row before taking cosines"),
            (_mean_off_diagonal(_unit(own_mean)),
             "you centred each row on its own (subtracting the mean of its d coordinates); centring a "
             "table subtracts the mean row, the average over the V tokens, from every row"),
            (_mean_off_diagonal(_unit(centred_units)),
             "you scaled the rows to length 1 before centring; centre first, then scale"),
            (_mean_off_diagonal(centred_units),
             "you scaled to length 1 and then centred, so the rows are no longer of length 1: centre "
             "first, then scale"),
        ]
    else:
        mistakes.append((_mean_off_diagonal(_unit(table - table.mean(axis=0))),
                         "centre=False asks for the raw table; you subtracted the mean row anyway"))
    return mistakes
