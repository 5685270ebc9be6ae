"""Lesson 7's check: Adam's step after a silence and a lazy AdamW row step. The reference passes,
the stub is "not attempted", and each typical mistake gets its own diagnosis."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

LESSON = runner.get_lesson(7, Path(__file__).resolve().parents[2] / "lessons")
check = runner.load_check(LESSON)
REFERENCE = runner.load_module(LESSON.solution_path)


def step_after_silence(decays=lambda k, lazy: 0 if lazy else k, bias=lambda t, k: t + k + 1, sign=-1.0,
                       eps_first=False):
    """Adam's step after a silence, with one piece swappable."""
    def adam_step_after_silence(m, v, t, k, g, lr, betas=(0.9, 0.999), eps=1e-8, lazy=False):
        (beta1, beta2), n = betas, decays(k, lazy)
        m, v = beta1**n * m, beta2**n * v
        m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
        c1, c2 = 1 - beta1 ** bias(t, k), 1 - beta2 ** bias(t, k)
        denominator = (np.sqrt(v) + eps) / np.sqrt(c2) if eps_first else np.sqrt(v / c2) + eps
        return sign * lr * (m / c1) / denominator
    return adam_step_after_silence


def answers(adam=None, rows=None):
    return SimpleNamespace(adam_step_after_silence=adam or REFERENCE.adam_step_after_silence,
                           lazy_adamw_rows=rows or REFERENCE.lazy_adamw_rows)


def test_the_reference_passes_and_the_stub_is_not_attempted():
    assert runner.check_answers(LESSON, LESSON.solution_path).passed
    assert runner.check_answers(LESSON, LESSON.exercise_path).status == runner.NOT_ATTEMPTED


def test_a_loop_over_the_silent_steps_is_as_good_as_a_formula():
    def adam_step_after_silence(m, v, t, k, g, lr, betas=(0.9, 0.999), eps=1e-8, lazy=False):
        beta1, beta2 = betas
        for _ in range(0 if lazy else k):
            m, v = beta1 * m, beta2 * v
        return step_after_silence(decays=lambda k, lazy: 0)(m, v, t, k, g, lr, betas, eps, lazy=True)

    check(answers(adam=adam_step_after_silence))


def test_moments_frozen_during_a_dense_silence():
    with pytest.raises(AssertionError, match="you left m and v as they were during the k silent steps"):
        check(answers(adam=step_after_silence(decays=lambda k, lazy: 0)))


def test_moments_decayed_during_a_lazy_silence():
    with pytest.raises(AssertionError, match="with lazy=True an absent row is not touched at all"):
        check(answers(adam=step_after_silence(decays=lambda k, lazy: k)))


def test_one_decay_too_many():
    with pytest.raises(AssertionError, match="the moments decayed 5 times before the arrival step"):
        check(answers(adam=step_after_silence(decays=lambda k, lazy: 0 if lazy else k + 1)))


def test_bias_correction_that_forgets_the_silent_steps():
    with pytest.raises(AssertionError, match=r"counts step t \+ 1 = 7, as if the silent steps had not"):
        check(answers(adam=step_after_silence(bias=lambda t, k: t + 1)))


def test_eps_before_the_bias_correction():
    with pytest.raises(AssertionError, match=r"you added eps to sqrt\(v\) before the bias correction"):
        check(answers(adam=step_after_silence(eps_first=True)))


def test_wrong_sign():
    with pytest.raises(AssertionError, match="your step has the wrong sign"):
        check(answers(adam=step_after_silence(sign=1.0)))


def test_returning_a_norm_instead_of_the_change():
    def norm_only(*args, **kwargs):
        return float(np.linalg.norm(REFERENCE.adam_step_after_silence(*args, **kwargs)))

    with pytest.raises(AssertionError, match="return the change of every coordinate of the row, not its"):
        check(answers(adam=norm_only))


def rows_step(exponent=None, decay_after=False, l2=False, scale_by_lr=True, moments=True):
    """A lazy AdamW row step with one piece swappable; exponent(t, last, decay) -> per-row power."""
    exponent = exponent or (lambda t, last, decay: t - last if decay == "catch_up" else np.ones(len(last)))

    def lazy_adamw_rows(rows, m, v, g, t, last_present, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8,
                        decay="touched"):
        beta1, beta2 = betas
        keep = 1 - (lr * weight_decay if scale_by_lr else weight_decay)
        factor = keep ** np.asarray(exponent(t, last_present, decay), dtype=float)[:, None]
        if l2:
            g, factor = g + weight_decay * rows, 1.0
        new_m, new_v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
        step = lr * (new_m / (1 - beta1**t)) / (np.sqrt(new_v / (1 - beta2**t)) + eps)
        new_rows = (rows - step) * factor if decay_after else rows * factor - step
        return (new_rows, new_m, new_v) if moments else (new_rows, m, v)
    return lazy_adamw_rows


def test_catch_up_without_this_steps_own_factor():
    with pytest.raises(AssertionError, match="catch-up: you applied the factors the row missed"):
        check(answers(rows=rows_step(exponent=lambda t, last, decay: t - last - 1 if decay == "catch_up"
                                     else np.ones(len(last)))))


def test_catch_up_decaying_once_like_touched():
    with pytest.raises(AssertionError, match="you decayed it once, as decay=\"touched\" does"):
        check(answers(rows=rows_step(exponent=lambda t, last, decay: np.ones(len(last)))))


def test_touched_catching_up():
    with pytest.raises(AssertionError, match="the catch-up of missed steps belongs to decay=\"catch_up\""):
        check(answers(rows=rows_step(exponent=lambda t, last, decay: t - last)))


def test_decay_after_the_adam_step():
    with pytest.raises(AssertionError, match="you decayed the rows after Adam's step"):
        check(answers(rows=rows_step(decay_after=True)))


def test_l2_decay_in_the_gradient():
    with pytest.raises(AssertionError, match=r"the returned moments are wrong|Adam's L2 decay"):
        check(answers(rows=rows_step(l2=True)))


def test_decay_not_scaled_by_lr():
    with pytest.raises(AssertionError, match=r"you used \(1 - weight_decay\) per step"):
        check(answers(rows=rows_step(scale_by_lr=False)))


def test_moments_returned_unchanged():
    with pytest.raises(AssertionError, match="they are the moments before the step"):
        check(answers(rows=rows_step(moments=False)))


# ---- long silences, other betas, and a difference too small to print --------------------------------

SOLUTION = LESSON.solution_path.read_text()


def solution_with(old: str, new: str) -> SimpleNamespace:
    """The reference solution with one line changed (the line must be there)."""
    assert old in SOLUTION
    namespace: dict = {}
    exec(SOLUTION.replace(old, new), namespace)
    return SimpleNamespace(adam_step_after_silence=namespace["adam_step_after_silence"],
                           lazy_adamw_rows=namespace["lazy_adamw_rows"])


def test_a_bias_correction_that_stops_after_step_100_is_caught():
    stops = solution_with("step = t + k + 1  # bias correction",
                          "step = t + k + 1 if t + k + 1 <= 100 else 10**9  # bias correction")
    expected = r"adam_step_after_silence\(t = 150, k = 400.*you left out the bias correction"
    with pytest.raises(AssertionError, match=expected):
        check(stops)
    rows_stop = solution_with("rows = rows - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)",
                              "c1, c2 = (1 - beta1**t, 1 - beta2**t) if t <= 100 else (1.0, 1.0)\n"
                              "    rows = rows - lr * (m / c1) / (np.sqrt(v / c2) + eps)")
    with pytest.raises(AssertionError, match=r"t = 150\): you left out the bias correction"):
        check(rows_stop)


def test_betas_that_are_not_the_defaults_are_tried():
    with pytest.raises(AssertionError, match=r"betas = \(0.8, 0.99\)\): you used betas = \(0.9, 0.999\), the "
                                             "defaults"):
        check(solution_with("    beta1, beta2 = betas\n    if not lazy:",
                            "    beta1, beta2 = 0.9, 0.999\n    if not lazy:"))
    with pytest.raises(AssertionError, match=r"moments are wrong: you used betas = \(0.9, 0.999\)"):
        check(solution_with("    beta1, beta2 = betas\n    keep", "    beta1, beta2 = 0.9, 0.999\n    keep"))


def test_a_float32_decay_factor_is_shown_by_its_difference_and_the_tolerance():
    float32 = solution_with("keep = 1 - lr * weight_decay", "keep = np.float32(1 - lr * weight_decay)")
    with pytest.raises(AssertionError) as refused:
        check(float32)
    message = str(refused.value)
    assert re.search(r"they differ most at \[\d\]: \S+ against \S+, by \S+ \(\S+ of the value; the "
                     r"tolerance is 1e-07 of it \+ 1e-12\) \(about float32's rounding", message), message
