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


def test_centring_the_callers_table_in_place_is_named():
    def in_place(table):
        table -= table.mean(axis=0)  # the lesson's table would lose its mean row
        return table @ components(table)[2][0]
    with pytest.raises(AssertionError, match=r"changed its argument table in place"):
        check(answers(in_place))


def test_eigenvectors_of_the_covariance_pass_too():
    def by_eigh(table):
        rows = centred(table.astype(np.float64))
        _, vectors = np.linalg.eigh(rows.T @ rows)
        return rows @ vectors[:, -1]
    check(answers(by_eigh))


def test_a_component_found_in_float32_and_scored_badly_is_caught():
    def rounded(table):
        rows = centred(table)
        return np.round(rows @ components(rows)[2][0], 1)  # scores kept to one decimal
    with pytest.raises(AssertionError):
        check(answers(rounded))
