"""Check for lesson 15: longest_silences(steps, vocab_size), each row's longest run of steps
without a read.

The reference walks the steps one row at a time with a counter, as one would on paper; the cases
include a row read on every step, a row never read, a row read twice in one step, silences at
the start and at the end, and a row read on the first and the last step only.
"""

from types import ModuleType

import numpy as np

from . import _common as common


def _cases() -> list[tuple[list[np.ndarray], int]]:
    hand = [np.array([0, 1]), np.array([0]), np.array([0, 2]), np.array([0, 0]), np.array([1])]  # 3 never
    rng = np.random.default_rng(15)
    batches = [rng.integers(0, 6, (3, 2)) for _ in range(30)]  # 2-d steps, rows 6 and 7 never read
    ends = [np.array([1]), np.array([0]), np.array([0]), np.array([0]), np.array([1])]
    return [(hand, 4), (batches, 8), (ends, 2)]


def _silences(steps: list[np.ndarray], vocab_size: int) -> np.ndarray:
    longest = []
    for row in range(vocab_size):
        run, best = 0, 0
        for ids in steps:
            run = 0 if row in set(np.asarray(ids).ravel().tolist()) else run + 1
            best = max(best, run)
        longest.append(best)
    return np.array(longest)


def _mistakes(steps: list[np.ndarray], vocab_size: int) -> list[tuple[np.ndarray, str]]:
    reads = np.array([[row in set(np.asarray(ids).ravel().tolist()) for ids in steps]
                      for row in range(vocab_size)])
    inner = []
    for row_reads in reads:
        at = np.flatnonzero(row_reads)
        inner.append(int(np.max(np.diff(at)) - 1) if len(at) > 1 else 0)
    counts = np.array([sum(int(np.sum(np.asarray(ids) == row)) for ids in steps)
                       for row in range(vocab_size)])
    expected = _silences(steps, vocab_size)
    return [
        (np.array(inner), "only the silences between two reads were counted; the steps before a row's "
                          "first read and after its last are silent too (a row never read is silent for "
                          "every step)"),
        (expected + (expected > 0), "each silence is one step too long: count the steps without a read, not "
                                    "the distance from one read to the next"),
        (counts, "those are how often each row was read; return its longest run of steps without a read"),
        (len(steps) - reads.sum(axis=1), "that is the number of silent steps in all; return the longest run "
                                         "of them in a row"),
    ]


def check(answers: ModuleType) -> None:
    longest_silences = common.answer_function(answers, "longest_silences")
    for steps, vocab_size in _cases():
        what = f"longest_silences({len(steps)} steps, vocab_size={vocab_size})"
        hint = "steps is a list of id arrays; return one number per row"
        answer = common.call_answer(longest_silences, [s.copy() for s in steps], vocab_size, hint=hint)
        got = common.as_array(answer, what)
        common.expect_shape(got, (vocab_size,), what, known={
            (len(steps),): "one number per step: return one number per row of the table, shape (V,)"})
        expected = _silences(steps, vocab_size)
        if np.array_equal(got, expected):
            continue
        for wrong, diagnosis in _mistakes(steps, vocab_size):
            if np.array_equal(got, wrong):
                raise AssertionError(f"{what} gave {got.tolist()}, expected {expected.tolist()}: {diagnosis}")
        raise AssertionError(f"{what} gave {got.tolist()}, expected {expected.tolist()}: each row's longest "
                             f"run of consecutive steps on which its id did not appear")
