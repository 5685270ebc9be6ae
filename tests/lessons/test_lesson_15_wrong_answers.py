"""Lesson 15's check: each row's longest silence; the usual slips are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(15, Path(__file__).resolve().parents[2] / "lessons"))


def reads(steps, V):
    return np.array([[row in set(np.asarray(ids).ravel().tolist()) for ids in steps] for row in range(V)])


def longest_run(flags):
    best = run = 0
    for silent in flags:
        run = run + 1 if silent else 0
        best = max(best, run)
    return best


def reference(steps, V):
    return np.array([longest_run(~r) for r in reads(steps, V)])


def between_reads_only(steps, V):
    out = []
    for r in reads(steps, V):
        at = np.flatnonzero(r)
        out.append(int(np.max(np.diff(at)) - 1) if len(at) > 1 else 0)
    return np.array(out)


def answers(fn):
    return SimpleNamespace(longest_silences=fn)


def test_the_reference_passes():
    check(answers(reference))


@pytest.mark.parametrize("wrong, message", [
    (between_reads_only, r"only the silences between two reads were counted"),
    (lambda s, V: reference(s, V) + (reference(s, V) > 0), r"each silence is one step too long"),
    (lambda s, V: np.array([sum(int(np.sum(np.asarray(i) == row)) for i in s) for row in range(V)]),
     r"those are how often each row was read"),
    (lambda s, V: len(s) - reads(s, V).sum(axis=1), r"that is the number of silent steps in all"),
    (lambda s, V: np.zeros(len(s)), r"one number per step"),
    (lambda s, V: reference(s, V) * 0, r"each row's longest run of consecutive steps"),
])
def test_typical_mistakes_are_named(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check(answers(wrong))
