"""The statistics and the table geometry more than one lesson measures, one of each.

Lesson 9's round trip (`rank_of_self`) is here too: minigrad's side of the learner's piece.

`spearman` (lessons 7, 11, 12, 13), a table's rows scaled to length 1 (`unit_rows`), the cosines
between its rows (`pair_cosines`, the differentiable `mean_cosine`, `cone`: raw and centred),
and how its principal components follow frequency (`principal_axes`). Lessons 9, 11 and 12.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minigrad.engine import Tensor, tensor


def unit_rows(table: np.ndarray) -> np.ndarray:
    """Each row of a (V, d) table divided by its length: (V, d) rows of length 1."""
    return table / np.linalg.norm(table, axis=1, keepdims=True)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-d array, tied values sharing the mean of the ranks they occupy."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"average_ranks: expected a 1-d array, got shape {x.shape}")
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    _, group, size = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(group, weights=ranks) / size)[group]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: the Pearson correlation of the average ranks of x and y.

    Ties get the mean of the ranks they span (as in scipy.stats.spearmanr), so the value does
    not depend on the order the data happens to be listed in.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        raise ValueError(f"spearman: x has shape {x.shape} but y has shape {y.shape}")
    return float(np.corrcoef(average_ranks(x), average_ranks(y))[0, 1])


# ---- the round trip (lesson 9) --------------------------------------------------------------------

def rank_of_self(read: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Lesson 9's piece, minigrad's side. (V,): for each token t, how many tokens j score strictly
    higher than t itself when row read[t] is scored against every row of score (read[t] . score[j]).
    read, score: (V, d). t's own score is taken from the same product as the others, so rounding
    never ranks t against itself."""
    read, score = np.asarray(read), np.asarray(score)
    if read.ndim != 2 or read.shape != score.shape:
        raise ValueError(f"rank_of_self: read {read.shape} and score {score.shape} must be two (V, d) tables "
                         "of one shape")
    scores = read @ score.T
    return (scores > np.diag(scores)[:, None]).sum(axis=1)


# ---- the geometry of a table (lessons 11 and 12) -------------------------------------------------

def pair_cosines(table: np.ndarray) -> np.ndarray:
    """Cosines of every unordered pair of different rows of a (V, d) table: (V (V - 1) / 2,)."""
    u = unit_rows(table)
    return (u @ u.T)[np.triu_indices(len(u), k=1)]


def mean_cosine(table: Tensor) -> Tensor:
    """Mean cosine over pairs i != j of the rows of a (V, d) Tensor, differentiable:
    (|sum_i u_i|^2 - V) / (V (V - 1)) with u_i = e_i / |e_i|, so no V x V matrix is formed."""
    n = table.shape[0]
    unit = table / ((table * table).sum(axis=1, keepdims=True) ** 0.5)
    total = unit.sum(axis=0)
    return ((total * total).sum() - n) / (n * (n - 1))


def cone(table: np.ndarray, rows: np.ndarray | None = None,
         statistic: Callable[[np.ndarray, bool], float] | None = None) -> tuple[float, float]:
    """(mean pairwise cosine, the same after subtracting the mean row) of table[rows] (all rows
    when rows is None), in float64. statistic(table, centre): the learner's
    mean_pairwise_cosine (lesson 11) to compute both with; by default minigrad's mean_cosine."""
    picked = np.asarray(table if rows is None else table[rows], dtype=np.float64)
    if statistic is not None:
        return float(statistic(picked, False)), float(statistic(picked, True))
    return (mean_cosine(tensor(picked)).item(),
            mean_cosine(tensor(picked - picked.mean(axis=0))).item())


def principal_axes(table: np.ndarray, log_count: np.ndarray, rows: np.ndarray | None = None,
                   k: int = 5, first_component: Callable[[np.ndarray], np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, float]:
    """How the principal components of a table follow frequency.

    table (V, d); rows: which rows to use (all when None); log_count: (n,) one per used row.
    Centres the rows, takes the principal components (right singular vectors) and each row's
    score on them. Returns (PC1 scores (n,), signed so they rise with frequency; |Spearman| of
    the scores on PC1..PCk with log_count, (k,); the share of the variance on PC1).
    first_component(rows) -> (n,): the learner's first_component_scores (lesson 12), which then
    gives the PC1 scores, their Spearman and their share of the variance (either sign).
    """
    picked = np.asarray(table if rows is None else table[rows], dtype=np.float64)
    if picked.shape[:1] != np.shape(log_count):
        raise ValueError(f"principal_axes: {picked.shape[0]} rows but log_count has shape "
                         f"{np.shape(log_count)}; give one log-count per row used")
    centred = picked - picked.mean(axis=0)
    left, singular, _ = np.linalg.svd(centred, full_matrices=False)
    scores = left * singular  # each row's coordinate along each component
    share = float(singular[0] ** 2 / np.sum(singular**2))
    if first_component is not None:
        scores[:, 0] = np.asarray(first_component(picked.copy()), dtype=np.float64).reshape(len(picked))
        share = float(np.sum(scores[:, 0] ** 2) / np.sum(centred**2))
    rho = np.array([spearman(scores[:, j], log_count) for j in range(min(k, len(singular)))])
    return scores[:, 0] * np.sign(rho[0]), np.abs(rho), share


# ---- how much of a table's geometry is in place (lesson 11) ------------------------------------

def centred_cosines(table: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(n, n) cosines among table[rows] (n rows, float64) after subtracting their mean row."""
    picked = np.asarray(table[rows], dtype=np.float64)
    u = unit_rows(picked - picked.mean(axis=0))
    return u @ u.T


def nearest_rows(cosines: np.ndarray, k: int) -> np.ndarray:
    """Each row's k nearest other rows by cosine (itself excluded): (n, k) indices into the rows."""
    if not 0 < k < len(cosines):
        raise ValueError(f"nearest_rows: k={k} neighbours must be between 1 and {len(cosines) - 1} "
                         f"(the other rows of {len(cosines)})")
    return np.argsort(-(cosines - 2 * np.eye(len(cosines))), axis=1)[:, :k]


def share_done(values: np.ndarray) -> np.ndarray:
    """(v_t - v_0) / (v_end - v_0): how much of the change from the first value to the last is done
    at each point (0 at the start, 1 at the end). An error when nothing changed."""
    values = np.asarray(values, dtype=np.float64)
    change = values[-1] - values[0]
    if not np.isfinite(change) or change == 0:
        raise ValueError(f"share_done: the values go from {values[0]} to {values[-1]}; with no finite "
                         "change there is no share of it")
    return (values - values[0]) / change


def geometry_similarity(tables: list[np.ndarray], rows: np.ndarray, neighbours: int = 10
                        ) -> tuple[np.ndarray, np.ndarray]:
    """How like its last state a table's geometry is along a run, from the same table at
    successive points (the last at the end). Over `rows`:

    - structure: the correlation of the centred pairwise cosines with those of the last table;
    - neighbours: the share of each row's `neighbours` nearest rows that are among its nearest
      in the last table.

    Returns (structure, neighbours), each (len(tables),); both are 1 at the last table."""
    final = centred_cosines(tables[-1], rows)
    final_nearest = nearest_rows(final, neighbours)
    upper = np.triu_indices(len(final), k=1)
    structure, overlap = [], []
    for table in tables:
        cosines = centred_cosines(table, rows)
        structure.append(np.corrcoef(cosines[upper], final[upper])[0, 1])
        kept = [len(np.intersect1d(a, b)) for a, b in zip(nearest_rows(cosines, neighbours), final_nearest)]
        overlap.append(np.mean(kept) / neighbours)
    return np.array(structure), np.array(overlap)


def geometry_done(tables: list[np.ndarray], rows: np.ndarray, neighbours: int = 10
                  ) -> tuple[np.ndarray, np.ndarray]:
    """How much of a table's change in geometry is in place along a run (the first table at the
    start): geometry_similarity's (structure, neighbours) as share_done, 0 at the first table and
    1 at the last."""
    structure, overlap = geometry_similarity(tables, rows, neighbours)
    return share_done(structure), share_done(overlap)
