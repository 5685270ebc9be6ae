"""Check for lesson 11: the mean pairwise cosine of a table's rows, raw and centred; and one
merge step of byte-pair training.

The cosine's reference is computed by another route than the usual V x V matrix: with unit rows
u_i, sum over i != j of u_i . u_j = |sum_i u_i|^2 - V, so no cosine matrix is ever formed. The
merge step's reference counts pairs one position at a time and joins them with minigrad's
`merge_pair` (minigrad/learn/bpe.py); its cases are built so that each usual slip (a tie given
to the smaller pair, pre-tokens counted once each, overlapping pairs counted once, a pair joined
right to left) changes the answer.
"""

from collections import Counter
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.learn.bpe import merge_pair

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
    _check_merge_step(common.answer_function(answers, "merge_step"))


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


# ---- merge_step ---------------------------------------------------------------------------------

def _words(text: dict[str, int]) -> dict[tuple, int]:
    """{"low": 5} -> {("l", "o", "w"): 5}: each pre-token as its characters."""
    return {tuple(word): count for word, count in text.items()}


# (what the case shows, its words); each changes the answer of at least one usual slip
MERGE_CASES: list[tuple[str, dict[tuple, int]]] = [
    ("a tie between ('e', 's') and ('s', 't'), 9 each",
     _words({"low": 5, "lower": 2, "newest": 6, "widest": 3})),
    ("overlapping pairs: 'aaa' holds ('a', 'a') twice", _words({"aaa": 3, "aaaa": 1, "bc": 7, "ba": 1})),
    ("a pair in many rare words against one in a frequent word",
     _words({"xy1": 1, "xy2": 1, "xy3": 1, "xy4": 1, "xy5": 1, "qz": 9})),
    ("pieces that are bytes, as in a byte-level vocabulary",
     {(b"t", b"h", b"e"): 3, (b"t", b"h", b"a", b"t"): 2, (b"o", b"t", b"h"): 1}),
    ("pre-tokens already merged into longer pieces", {(" t", "he"): 4, (" t", "h", "is"): 3, ("he",): 2}),
]


def _reference_step(words: dict[tuple, int]) -> tuple[tuple | None, dict[tuple, int]]:
    counts: Counter = Counter()
    for pieces, count in words.items():
        for position in range(len(pieces) - 1):
            counts[pieces[position], pieces[position + 1]] += count
    if not counts:
        return None, dict(words)
    top = max(counts.values())
    best = sorted(pair for pair, count in counts.items() if count == top)[-1]
    return best, {merge_pair(pieces, best): count for pieces, count in words.items()}


def _slips(words: dict[tuple, int]) -> list[tuple[Any, str]]:
    """What the usual slips choose or produce, as (pair or merged words, diagnosis)."""
    counts: Counter = Counter()
    once: Counter = Counter()
    for pieces, count in words.items():
        for pair in zip(pieces, pieces[1:]):
            counts[pair] += count
            once[pair] += 1
    top = max(counts.values())
    tied = sorted(pair for pair, count in counts.items() if count == top)
    best = tied[-1]
    right_to_left = {_joined_from_the_right(pieces, best): n for pieces, n in words.items()}
    return [
        (tied[0], "among pairs equally frequent you took the smaller; take the greater (max over "
                  "(count, pair), as CS336's trainer does)"),
        (max(once, key=lambda pair: (once[pair], pair)),
         "each pre-token counted once; a pair occurs as often as the pre-tokens holding it occur: add "
         "the count"),
        (_without_overlap(words), "a pair inside a run such as 'aaa' was counted once; count every "
                                  "adjacent position (the merge itself then takes them left to right)"),
        (right_to_left, "the pair was joined from the right ('aaa' became ('a', 'aa')); read left to "
                        "right: ('aa', 'a')"),
    ]


def _joined_from_the_right(pieces: tuple, pair: tuple) -> tuple:
    """`pieces` with `pair` joined, read from the right ('aaa' -> ('a', 'aa'))."""
    joined, position = [], len(pieces) - 1
    while position >= 0:
        if position >= 1 and (pieces[position - 1], pieces[position]) == pair:
            joined.append(pieces[position - 1] + pieces[position])
            position -= 2
        else:
            joined.append(pieces[position])
            position -= 1
    return tuple(reversed(joined))


def _without_overlap(words: dict[tuple, int]) -> tuple | None:
    counts: Counter = Counter()
    for pieces, count in words.items():
        seen: Counter = Counter(merge_pair_positions(pieces))
        for pair, times in seen.items():
            counts[pair] += times * count
    return max(counts, key=lambda pair: (counts[pair], pair)) if counts else None


def merge_pair_positions(pieces: tuple) -> list[tuple]:
    """Each adjacent pair of `pieces`, a run of one pair counted without overlap ('aaa': once)."""
    found, position = [], 0
    while position < len(pieces) - 1:
        pair = (pieces[position], pieces[position + 1])
        found.append(pair)
        position += 2 if pieces[position] == pieces[position + 1] else 1
    return found


def _check_merge_case(merge_step: Any, what: str, words: dict[tuple, int]) -> None:
    result = common.call_answer(merge_step, dict(words), hint=f"{what}: words = {words!r}")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise AssertionError(f"merge_step ({what}) must return a pair (pair, merged), got {result!r}")
    pair, merged = result
    expected_pair, expected = _reference_step(words)
    assert expected_pair is not None, "every case of the check has a pair to merge"
    _check_pair(pair, expected_pair, words, what)
    _check_merged(merged, expected, expected_pair, words, what)


def _check_pair(pair: Any, expected: tuple, words: dict[tuple, int], what: str) -> None:
    if isinstance(pair, (str, bytes)):
        raise AssertionError(f"merge_step ({what}) returned the pair as {pair!r}; return the two pieces "
                             "as a tuple (a, b), as merges are listed")
    if pair is not None and tuple(pair) == expected:
        return
    for wrong, diagnosis in _slips(words):
        if isinstance(wrong, tuple) and pair is not None and tuple(pair) == wrong:
            raise AssertionError(f"merge_step ({what}) chose {tuple(pair)!r}, expected {expected!r}: "
                                 f"{diagnosis}")
    raise AssertionError(f"merge_step ({what}) chose {pair!r}, expected {expected!r}: count every "
                         "adjacent pair of pieces inside each pre-token, times how often it occurs")


def _check_merged(merged: Any, expected: dict, pair: tuple, words: dict[tuple, int], what: str) -> None:
    if not isinstance(merged, dict):
        raise AssertionError(f"merge_step ({what}) returned the words as a {type(merged).__name__}; "
                             "return a dict {pieces: count}, as it was given")
    if merged == expected:
        return
    for wrong, diagnosis in _slips(words):
        if isinstance(wrong, dict) and merged == wrong:
            raise AssertionError(f"merge_step ({what}): {diagnosis}")
    difference = sorted(set(merged.items()) ^ set(expected.items()), key=repr)[:4]
    raise AssertionError(f"merge_step ({what}) chose {pair!r} right but the merged words differ "
                         f"(entries in one and not the other: {difference}); join every occurrence of "
                         "the pair, left to right, and keep each count")


def _check_merge_step(merge_step: Any) -> None:
    for what, words in MERGE_CASES:
        _check_merge_case(merge_step, what, words)
    done = {("the",): 3, ("a",): 1}
    result = common.call_answer(merge_step, dict(done), hint="every pre-token is one piece")
    finished = isinstance(result, (tuple, list)) and len(result) == 2 and result[0] is None
    if not (finished and result[1] == done):
        raise AssertionError(f"merge_step({done!r}): no pre-token has two pieces left, so there is "
                             f"nothing to merge: return (None, words); got {result!r}")
