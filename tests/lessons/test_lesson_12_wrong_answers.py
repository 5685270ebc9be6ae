"""Lesson 12's check: the reference passes with either sign, typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(12, Path(__file__).resolve().parents[2] / "lessons"))


def centred(table):
    return table - table.mean(axis=0)


def components(rows):
    return np.linalg.svd(rows, full_matrices=False)


def answers(fn):
    return SimpleNamespace(first_component_scores=fn)


@pytest.mark.parametrize("sign", [1, -1])
def test_scores_of_either_sign_pass(sign):
    check(answers(lambda t: sign * centred(t) @ components(centred(t))[2][0]))


@pytest.mark.parametrize("wrong, message", [
    (lambda t: t @ components(t)[2][0], r"the table was not centred"),
    (lambda t: components(centred(t))[0][:, 0], r"U's first column, the scores divided by"),
    (lambda t: centred(t) @ components(t)[2][0], r"the component was found from the raw table"),
    (lambda t: components(centred(t))[2][0], r"has shape \(2,\), expected \(4,\): one number per column"),
    (lambda t: np.outer(centred(t) @ components(centred(t))[2][0], components(centred(t))[2][0]),
     r"has shape \(4, 2\), expected \(4,\): one score per row is a single number"),
    (lambda t: centred(t) @ components(centred(t))[2][1], r"is off: at \[\d\] expected"),
])
def test_typical_mistakes_are_named(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check(answers(wrong))


def test_a_missing_function_is_named():
    with pytest.raises(AssertionError, match=r"no function named first_component_scores\(\)"):
        check(SimpleNamespace())
