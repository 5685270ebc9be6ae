"""Check for lesson 6: a tied row's gradient is the lookup's occurrences plus the classifier's
(p - y) h over every scoring position."""

from itertools import combinations
from types import ModuleType

import numpy as np

import minigrad as mg
from minigrad.nn import functional as F

from . import _common as common

# One batch with context 1 (so N = M): row 2 is read twice and is the answer twice; row 5 is
# neither read nor an answer; row 4 is read once; row 6 is only an answer; row 0 is both once.
IDS = np.array([2, 0, 2, 4, 1])
TARGETS = np.array([0, 2, 3, 2, 6])
V, D = 7, 3
ROWS = [2, 5, 4, 6, 0]  # the most telling rows first


def _tied_loss(mix: np.ndarray):
    """E -> mean cross-entropy of a model that reads with E and scores with E."""
    def loss(E: mg.Tensor) -> mg.Tensor:
        h = (F.embedding(IDS, E) @ mg.tensor(mix)).tanh()
        return F.cross_entropy(F.linear(h, E), TARGETS)
    return loss


def _what_each_path_sees(E: np.ndarray, mix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(upstream dL/dx at each looked-up vector, H, P), from minigrad's backward."""
    x = mg.tensor(E[IDS], requires_grad=True)
    h = (x @ mg.tensor(mix)).tanh()
    logits = F.linear(h, mg.tensor(E))  # the classifier's copy of E is a constant here
    F.cross_entropy(logits, TARGETS).backward()
    z = logits.data - logits.data.max(axis=1, keepdims=True)
    P = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return x.grad, h.data, P


def _positions(where: np.ndarray) -> str:
    where = [int(n) for n in where]
    return ("position " if len(where) == 1 else "positions ") + ", ".join(map(str, where))


def _mistakes(row: int, upstream: np.ndarray, H: np.ndarray, P: np.ndarray) -> list:
    """The answers typical mistakes produce for `row`, each with its diagnosis."""
    M = len(TARGETS)
    read_at = np.flatnonzero(IDS == row)
    answer_at = np.flatnonzero(TARGETS == row)
    y = (TARGETS == row).astype(np.float64)
    lookup = upstream[read_at].sum(axis=0)
    classifier = (P[:, row] - y) @ H / M
    label = f"row {row}"
    classifier_formula = f"sum over m of (p_m[{row}] - y_m[{row}]) h_m / M, with M = {M}"
    mistakes = []
    if read_at.size:
        mistakes.append((classifier, f"you have only the classifier path. {label.capitalize()} is also read "
                                     f"by the lookup at {_positions(read_at)}: add the upstream gradient "
                                     "from each"))
        mistakes.append((lookup / M + classifier, f"the lookup part is {M} times too small: upstream already "
                                                  "contains the 1/M of the mean, so do not divide it again"))
        mistakes.append((lookup, f"you have only the lookup path. In a tied table {label} is also the output "
                                 f"row of token {row}, scored at every position: add {classifier_formula}"))
    else:
        mistakes.append((lookup, f"your answer is zero: {label} is never read, so the lookup sends it "
                                 f"nothing, but in a tied table it is also the output row of token {row}, "
                                 "scored at every position whether or not it was read: its gradient is "
                                 f"{classifier_formula}"))
    for kept in range(1, read_at.size):
        for subset in combinations(read_at, kept):
            partial = upstream[list(subset)].sum(axis=0)
            mistakes.append((partial + classifier, f"{label} is read {common.times(read_at.size)} (at "
                                                   f"{_positions(read_at)}), but your lookup part adds the "
                                                   f"upstream gradient of only {kept} of them: a repeated id "
                                                   "gets the sum over all its occurrences"))
    if answer_at.size:
        mistakes.append((lookup + P[:, row] @ H / M,
                         f"the classifier part is sum p_m[{row}] h_m / M: you forgot the target's -1 (the y "
                         f"in p - y); token {row} is the answer at {_positions(answer_at)}"))
        mistakes.append((lookup + ((P[:, row] - 1) * y) @ H / M,
                         f"the classifier part counts only the positions where token {row} is the answer, "
                         f"but softmax scores every row at every position: use {classifier_formula}"))
    if row < M:  # P[row] is a position's probabilities; for row >= M it raises IndexError instead
        mistakes.append((lookup + (P[row, :M] - y) @ H / M,
                         f"the classifier part reads P[{row}] (the probabilities at position {row}, one per "
                         f"token) where it needs P[:, {row}] (token {row}'s probability at every position): "
                         "P is (M, V), positions by tokens"))
    mistakes.append((lookup - classifier, "the classifier part has the wrong sign: it is (p - y) h, "
                                          "not (y - p) h"))
    mistakes.append((lookup + M * classifier, f"the classifier part is {M} times too large: the loss is the "
                                              f"mean over M = {M} positions, so it carries a factor 1/M"))
    return mistakes


def check(answers: ModuleType) -> None:
    tied_row_gradient = common.answer_function(answers, "tied_row_gradient")
    rng = np.random.default_rng(66)
    E = rng.standard_normal((V, D))
    mix = rng.standard_normal((D, D))
    expected = common.reference_gradient(_tied_loss(mix), [E])
    upstream, H, P = _what_each_path_sees(E, mix)
    by_paths = (P - np.eye(V)[TARGETS]).T @ H / len(TARGETS)
    np.add.at(by_paths, IDS, upstream)
    if not common.close(by_paths, expected):  # the diagnoses below are built from these two parts
        raise RuntimeError("lesson 6 check: the two paths do not add up to the reference; fix the check")
    hint = (f"Shapes here: ids (N,) = {IDS.shape}, upstream (N, d) = {upstream.shape}, H (M, d) = {H.shape}, "
            f"P (M, V) = {P.shape}, targets (M,) = {TARGETS.shape}; return a ({D},) array. "
            "P[m, v] is token v's probability at position m, so a row's column is P[:, row]")
    for row in ROWS:
        mistakes = _mistakes(row, upstream, H, P)
        if any(common.close(wrong, expected[row]) for wrong, _ in mistakes):
            raise RuntimeError(f"lesson 6 check: a listed mistake equals the answer for row {row}; "
                               "fix the check")
        what = f"dL/dE[{row}]"
        answer = common.call_answer(tied_row_gradient, row, IDS, upstream, H, P, TARGETS, hint=hint)
        got = common.as_array(answer, what)
        common.expect_shape(got, (D,), what, known={
            (V, D): "that is the whole table; return the gradient of row `row` only",
            (len(IDS), D): "that is one vector per position; add up what reaches this row",
        })
        common.assert_matches(got, expected[row], what, mistakes, by_rows=False)
