"""Lesson 7's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from lessons.checks import _common as common
from minigrad.learn import lessons as runner

check = runner.load_check(runner.get_lesson(7, Path(__file__).resolve().parents[2] / "lessons"))


def answers(function):
    return SimpleNamespace(norm_after_silence=function)


def scaled(factor):
    """An answer module returning |row| * factor(k, lr, wd)."""
    def norm_after_silence(row, exp_avg, exp_avg_sq, step, k, lr, weight_decay, betas, eps):
        return np.linalg.norm(row) * factor(k, lr, weight_decay)

    return answers(norm_after_silence)


def adam_steps(row, m, v, step, k, lr, wd, betas, eps, moments_decay, decay=True):
    """k steps of decay and Adam's update, as a learner might write them."""
    beta1, beta2 = betas
    for t in range(step + 1, step + k + 1):
        if moments_decay:
            m, v = beta1 * m, beta2 * v
        if decay:
            row = row * (1 - lr * wd)
        row = row - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return np.linalg.norm(row)


def test_a_loop_of_k_decays_passes():
    def norm_after_silence(row, exp_avg, exp_avg_sq, step, k, lr, weight_decay, betas, eps):
        for _ in range(k):
            row = row * (1 - lr * weight_decay)
        return np.linalg.norm(row)  # a numpy float is fine

    check(answers(norm_after_silence))


def test_forgot_lr():
    with pytest.raises(AssertionError, match=r"you used \(1 - weight_decay\)\^k: AdamW's decay is scaled by "
                                             r"the learning rate, a factor \(1 - lr \* weight_decay\) = 0.9"):
        check(scaled(lambda k, lr, wd: (1 - wd) ** k))


def test_one_factor_short():
    with pytest.raises(AssertionError, match=r"you applied 24 factors of .*, but each of the k = 25 steps"):
        check(scaled(lambda k, lr, wd: (1 - lr * wd) ** (k - 1)))


def test_one_factor_too_many():
    with pytest.raises(AssertionError, match=r"you applied 26 factors of .*, but there are k = 25 steps"):
        check(scaled(lambda k, lr, wd: (1 - lr * wd) ** (k + 1)))


def test_applied_adams_update_too():
    def norm_after_silence(row, m, v, step, k, lr, wd, betas, eps):
        return adam_steps(row, m, v, step, k, lr, wd, betas, eps, moments_decay=False)

    with pytest.raises(AssertionError, match=r"you also applied Adam's update with the row's frozen moments, "
                                             r"but with lazy=True an absent row is not updated"):
        check(answers(norm_after_silence))


def test_non_lazy_semantics():
    def norm_after_silence(row, m, v, step, k, lr, wd, betas, eps):
        return adam_steps(row, m, v, step, k, lr, wd, betas, eps, moments_decay=True)

    with pytest.raises(AssertionError, match=r"that is AdamW\(lazy=False\), where an absent row counts as"):
        check(answers(norm_after_silence))


def test_adam_update_without_decay():
    def norm_after_silence(row, m, v, step, k, lr, wd, betas, eps):
        return adam_steps(row, m, v, step, k, lr, wd, betas, eps, moments_decay=False, decay=False)

    with pytest.raises(AssertionError, match=r"you applied Adam's update and no decay"):
        check(answers(norm_after_silence))


def test_no_decay_at_all():
    with pytest.raises(AssertionError, match=r"the norm did not change, but decay=\"dense\" multiplies"):
        check(scaled(lambda k, lr, wd: 1.0))


def test_linear_instead_of_compound():
    with pytest.raises(AssertionError, match=r"you subtracted k \* lr \* weight_decay of the original norm"):
        check(scaled(lambda k, lr, wd: 1 - k * lr * wd))


def test_continuous_approximation():
    with pytest.raises(AssertionError, match=r"you used exp\(-k \* lr \* weight_decay\), the continuous"):
        check(scaled(lambda k, lr, wd: np.exp(-k * lr * wd)))


def test_squared_norm():
    with pytest.raises(AssertionError, match=r"that is the squared norm"):
        check(answers(lambda row, m, v, step, k, lr, wd, betas, eps: row @ row * (1 - lr * wd) ** (2 * k)))


def test_returning_the_row():
    with pytest.raises(AssertionError, match=r"has shape \(5,\), expected \(\): that is a whole row; return"):
        check(answers(lambda row, m, v, step, k, lr, wd, betas, eps: row * (1 - lr * wd) ** k))


def test_an_unknown_mistake_reports_the_factor():
    with pytest.raises(AssertionError, match=r"is off by a factor 1.1 \(expected [0-9.]+, got [0-9.]+\)"):
        check(scaled(lambda k, lr, wd: 1.1 * (1 - lr * wd) ** k))


def test_assert_number_helper():
    common.assert_number(np.float64(2.0), 2.0, "x")
    with pytest.raises(AssertionError, match=r"x: you halved it \(expected 2, got 1\)"):
        common.assert_number(1.0, 2.0, "x", [(1.0, "you halved it")])
    with pytest.raises(AssertionError, match=r"x has the wrong sign \(expected 2, got -2\)"):
        common.assert_number(-2.0, 2.0, "x")
    with pytest.raises(AssertionError, match=r"x should be 0, got 3"):
        common.assert_number(3.0, 0.0, "x")
