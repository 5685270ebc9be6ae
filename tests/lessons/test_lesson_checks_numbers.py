"""as_number in minigrad/learn/course/checks/_common.py: reading an answer that should be one number."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn.course.checks import _common as common


@pytest.mark.parametrize("value", [3, 3.0, np.float32(3.0), np.array(3.0), np.array([3.0]), mg.tensor([3.0])])
def test_as_number_accepts_any_single_number(value):
    assert common.as_number(value, "x") == 3.0


@pytest.mark.parametrize("value, message", [
    (None, r"x: your function returned None; return a number"),
    ("3", r"x: expected one number, got str"),
    (np.zeros(2), r"x: expected one number, got ndarray of shape \(2,\)"),
    (float("nan"), r"x: your answer is NaN"),
    (float("inf"), r"x: your answer is infinite"),
])
def test_as_number_says_what_is_wrong(value, message):
    with pytest.raises(AssertionError, match=message):
        common.as_number(value, "x")


def test_as_number_can_insist_on_a_whole_number():
    assert common.as_number(np.int64(7), "n", integer=True) == 7
    with pytest.raises(AssertionError, match=r"n: expected a whole number, got 7.5"):
        common.as_number(7.5, "n", integer=True)
