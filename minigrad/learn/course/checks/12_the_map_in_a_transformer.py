"""Check for lesson 12: each row's score on a table's first principal component.

The reference is computed another way than the usual SVD of the rows: the first component is
the top eigenvector of the (d, d) covariance, found by power iteration. Either sign is right.
"""

from types import ModuleType

import numpy as np

from . import _common as common


def _tables() -> list[np.ndarray]:
    """A hand-sized table first; then one with a large offset (so centring matters) and one
    component well ahead of the next (so power iteration settles fast); fewer rows than columns;
    and a float32 table (as a model's) with two equal rows."""
    rng = np.random.default_rng(100)
    stretched = rng.standard_normal((9, 4)) * np.array([3.0, 1.0, 0.5, 0.2]) + np.array([5.0, -2.0, 1.0, 4.0])
    wide = rng.standard_normal((3, 6)) * np.array([4.0, 1.0, 0.5, 0.3, 0.2, 0.1]) + 2.0
    twins = (rng.standard_normal((8, 5)) * np.array([2.5, 1.0, 0.6, 0.3, 0.1])).astype(np.float32)
    twins[6] = twins[2]
    hand = np.array([[2.0, 0.0], [0.0, 1.0], [4.0, 1.0], [-1.0, 0.5]])
    return [hand, stretched @ _rotation(rng), wide, twins]


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    return q


def _top_direction(matrix: np.ndarray, iterations: int = 2000) -> np.ndarray:
    """The unit eigenvector of the largest eigenvalue of a symmetric positive semi-definite matrix."""
    vector = np.ones(len(matrix)) / np.sqrt(len(matrix))
    for _ in range(iterations):
        vector = matrix @ vector
        vector /= np.linalg.norm(vector)
    return vector


def _scores(table: np.ndarray) -> np.ndarray:
    table = table.astype(np.float64)
    centred = table - table.mean(axis=0)
    return centred @ _top_direction(centred.T @ centred)


def check(answers: ModuleType) -> None:
    first_component_scores = common.answer_function(answers, "first_component_scores")
    for table in _tables():
        V, d = table.shape
        what = f"first_component_scores(table of shape {table.shape} and dtype {table.dtype})"
        expected = _scores(table)
        got = common.as_array(common.call_keeping_inputs(first_component_scores, table), what)
        common.expect_shape(got, (V,), what, known={
            (d,): "one number per column: that is the component itself (a direction of length d), or "
                  "rows and columns were swapped; return one score per row, the centred rows times "
                  "that direction",
            (V, d): "one score per row is a single number: the centred row's dot product with the "
                    "first component, not the row projected back into d dimensions"})
        if np.dot(got, expected) < 0:
            got = -got  # the other sign is just as right
        mistakes = [(sign * wrong, diagnosis) for wrong, diagnosis in _mistakes(table, expected)
                    for sign in (1, -1)]
        if table.dtype == np.float32 and np.allclose(got, expected, rtol=1e-4, atol=1e-5):
            continue  # float32 rows: the same scores to float32's precision
        common.assert_matches(got, expected, what, mistakes, by_rows=False)


def _mistakes(table: np.ndarray, expected: np.ndarray) -> list:
    table = table.astype(np.float64)
    centred = table - table.mean(axis=0)
    direction = _top_direction(centred.T @ centred)
    raw_direction = _top_direction(table.T @ table)
    return [
        (table @ raw_direction, "the table was not centred: subtract the mean row from every row "
                                "before finding the component and taking the scores"),
        (centred @ raw_direction, "the component was found from the raw table; centre first, then find "
                                  "the direction the centred rows vary most along"),
        (table @ direction, "you scored the raw rows; take the scores of the centred rows"),
        (expected / np.linalg.norm(expected),
         "those are U's first column, the scores divided by the singular value S[0]: multiply by S[0] "
         "(or take centred @ Vt[0])"),
    ]
