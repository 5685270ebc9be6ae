"""Lesson 2's check names the typical mistakes in a central-difference function."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

CHECK = runner.load_check(runner.get_lesson(2, Path(__file__).resolve().parents[2] / "lessons"))


def each_element(estimate):
    """A central_difference that fills every element with estimate(f, x, index, eps)."""

    def central_difference(f, x, eps):
        grad = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            grad[index] = estimate(f, x, index, eps)
        return grad

    return central_difference


def nudged(f, x, index, step):
    """f at x with x[index] moved by step; x is put back afterwards."""
    original = x[index]
    x[index] = original + step
    value = f(x)
    x[index] = original
    return value


def forward_difference(f, x, index, eps):
    return (nudged(f, x, index, eps) - f(x)) / eps


def divides_by_eps(f, x, index, eps):
    return (nudged(f, x, index, eps) - nudged(f, x, index, -eps)) / eps


def slash_two_times_eps(f, x, index, eps):
    return (nudged(f, x, index, eps) - nudged(f, x, index, -eps)) / 2 * eps


def subtracted_the_wrong_way(f, x, index, eps):
    return (nudged(f, x, index, -eps) - nudged(f, x, index, eps)) / (2 * eps)


def ignores_eps(f, x, index, eps):
    return (nudged(f, x, index, 1e-6) - nudged(f, x, index, -1e-6)) / 2e-6


def forgets_to_restore(f, x, eps):
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        x[index] += eps
        above = f(x)
        x[index] -= 2 * eps
        below = f(x)
        grad[index] = (above - below) / (2 * eps)
    return grad


def nudges_all_at_once(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def nudges_whole_rows(f, x, eps):
    grad = np.zeros(x.shape)
    for i in range(len(x)):
        above, below = x.copy(), x.copy()
        above[i] += eps
        below[i] -= eps
        grad[i] = (f(above) - f(below)) / (2 * eps)
    return grad


def flattens(f, x, eps):
    return right(f, x, eps).ravel()


def central(f, x, index, eps):
    return (nudged(f, x, index, eps) - nudged(f, x, index, -eps)) / (2 * eps)


right = each_element(central)


def wrong_where(condition, estimate):
    """Right except where condition(x) holds: there, estimate (a probe-specific mistake)."""
    def mixed(f, x, index, eps):
        return (estimate if condition(x) else central)(f, x, index, eps)

    return each_element(mixed)


WRONG = {
    "forward difference": (each_element(forward_difference), r"the forward difference \(f\(x \+ eps\)"),
    "backward difference": (each_element(lambda f, x, i, eps: (f(x) - nudged(f, x, i, -eps)) / eps),
                            "backward difference"),
    "divisor eps instead of 2 eps": (each_element(divides_by_eps), r"divide their difference by 2 \* eps"),
    "/ 2 * eps": (each_element(slash_two_times_eps), r"Write `/ \(2 \* eps\)`"),
    "wrong sign": (each_element(subtracted_the_wrong_way), "the wrong sign"),
    "forgets to restore x": (forgets_to_restore, r"x\[0, 0\] was 1.25 instead of 1.5 \(it moved by -1 eps\)"),
    "all of x at once": (nudges_all_at_once, "returned one number .* nudging all of x at once"),
    "whole rows": (nudges_whole_rows, r"you nudged a row x\[i\] at once"),
    "ignores eps": (each_element(ignores_eps), "does not use the eps it is given"),
    "flattened": (flattens, r"your gradient has shape \(6,\) but x has shape \(2, 3\)"),
    "returns nothing": (lambda f, x, eps: None, "returned None"),
    # wrong on one probe only: the check then names the element and both values
    "wrong on the cubic only": (wrong_where(lambda x: x.ndim == 1, forward_difference),
                                r"sum\(w \* x\*\*3\) on a 1-d x with eps = 0.1, x\[\d\] = .*: your estimate"),
    "wrong in 3-d only": (wrong_where(lambda x: x.ndim == 3, lambda *args: central(*args) + 1e-4),
                          r"on a 3-d x with eps = 1e-6, x\[\d, \d, \d\]: your estimate"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_central_difference_fails_with_its_diagnosis(mistake):
    answer, diagnosis = WRONG[mistake]
    with pytest.raises(AssertionError, match=diagnosis):
        CHECK(SimpleNamespace(central_difference=answer))


def test_right_answer_passes_and_stub_is_not_attempted():
    assert CHECK(SimpleNamespace(central_difference=right)) is None

    def stub(f, x, eps):
        raise NotImplementedError("not yet")

    with pytest.raises(NotImplementedError):
        CHECK(SimpleNamespace(central_difference=stub))


def test_missing_function_is_reported():
    with pytest.raises(AssertionError, match="no function named central_difference"):
        CHECK(SimpleNamespace())


def test_an_estimate_that_costs_more_than_two_evaluations_per_element_is_named():
    def one_more(f, x, eps):
        f(x)  # a look at f(x) first: right numbers, one evaluation too many
        return right(f, x, eps)

    with pytest.raises(AssertionError, match=r"called f 13 times for an x of 6 element\(s\)"):
        CHECK(SimpleNamespace(central_difference=one_more))


def test_a_number_is_an_input_too():
    def by_length(f, x, eps):
        grad = np.zeros(x.shape)
        for i in range(len(x)):  # len() of a 0-d array raises
            grad[i] = right(f, x[i:i + 1], eps) if x.ndim == 1 else right(f, x, eps)[i]
        return grad

    with pytest.raises(AssertionError, match="len"):
        CHECK(SimpleNamespace(central_difference=lambda f, x, eps: right(f, x, eps) if x.ndim else
                              by_length(f, x, eps)))


def test_nudges_that_miss_an_array_laid_out_by_columns_are_named():
    def through_a_flat_view(f, x, eps):
        flat, grad = x.reshape(-1), np.zeros(x.size)  # a copy when x is not in row order
        for i in range(x.size):
            original = flat[i]
            flat[i] = original + eps
            above = f(x)
            flat[i] = original - eps
            below = f(x)
            flat[i] = original
            grad[i] = (above - below) / (2 * eps)
        return grad.reshape(x.shape)

    with pytest.raises(AssertionError, match="every estimate is 0: your nudges did not reach x"):
        CHECK(SimpleNamespace(central_difference=through_a_flat_view))


def test_a_restore_off_by_rounding_shows_both_values_in_full():
    def restores_by_arithmetic(f, x, eps):
        grad = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            x[index] += eps
            above = f(x)
            x[index] -= 2 * eps
            below = f(x)
            x[index] += eps  # back where it was, up to rounding
            grad[index] = (above - below) / (2 * eps)
        return grad

    with pytest.raises(AssertionError, match=r"x\[0\] was 1.5000000000000002 instead of 1.5 "):
        CHECK(SimpleNamespace(central_difference=restores_by_arithmetic))


def test_estimates_kept_in_float32_are_named():
    def in_float32(f, x, eps):
        grad = np.zeros(x.shape, dtype=np.float32)  # about seven digits of each estimate survive
        for index in np.ndindex(x.shape):
            grad[index] = central(f, x, index, eps)
        return grad

    with pytest.raises(AssertionError, match="your estimates came back as float32 for a float64 x"):
        CHECK(SimpleNamespace(central_difference=in_float32))


def test_estimates_that_differ_past_the_sixth_digit_are_shown_apart_with_the_tolerance():
    slightly_off = each_element(lambda f, x, index, eps: central(f, x, index, eps) * (1 + 1e-7))
    with pytest.raises(AssertionError) as raised:
        CHECK(SimpleNamespace(central_difference=slightly_off))
    message = str(raised.value)
    mine, right = (part.split(",")[0].split(" (")[0] for part in
                   (message.split("your estimate is ")[1], message.split("central difference is ")[1]))
    assert mine != right and "apart by" in message and "the check allows 1e-09 of the value" in message
