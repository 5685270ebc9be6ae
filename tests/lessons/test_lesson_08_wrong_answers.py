"""Lesson 8's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(8, Path(__file__).resolve().parents[2] / "lessons"))


def right_count(V, d, H, C, tied):
    return V * d + (C * d * H + H) + (H * d + d) + (0 if tied else V * d)


def right_unigram(counts):
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def answers(count=right_count, unigram=right_unigram):
    return SimpleNamespace(tiny_lm_parameter_count=count, unigram_loss=unigram)


def test_rules_used_by_these_tests_are_right():
    check(answers())


# ---- the parameter count ----------------------------------------------------------------------

def test_tied_table_counted_twice():
    with pytest.raises(AssertionError, match=r"tied=True\): the tied table counted twice: head.weight is"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, False)))


def test_untied_head_forgotten():
    with pytest.raises(AssertionError, match=r"tied=False\): the head is missing: untied"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, True)))


def test_biases_forgotten():
    with pytest.raises(AssertionError, match=r"the biases are missing: up has 5 .* down has 4"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, tied) - H - d))


def test_one_bias_forgotten():
    with pytest.raises(AssertionError, match=r"down's bias \(4 numbers"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, tied) - d))


def test_bias_given_to_the_head():
    with pytest.raises(AssertionError, match=r"no bias \(Linear\(d, V, bias=False\)\), but you added 7"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, tied) + V))


def test_context_ignored_in_the_first_layer():
    def count(V, d, H, C, tied):
        return right_count(V, d, H, 1, tied)  # up taken as Linear(d, H)

    with pytest.raises(AssertionError, match=r"context=3.*up reads the 3 rows side by side, so its weight is "
                                             r"\(H, C\*d\) = \(12, 24\)"):
        check(answers(count=count))


def test_table_counted_once_per_context_position():
    def count(V, d, H, C, tied):
        return right_count(V, d, H, C, tied) + (C - 1) * V * d

    with pytest.raises(AssertionError, match=r"the table is read 3 times per window but stored once"):
        check(answers(count=count))


def test_a_count_that_is_not_a_whole_number():
    with pytest.raises(AssertionError, match=r"expected a whole number, got 2.5"):
        check(answers(count=lambda V, d, H, C, tied: 2.5))


def test_an_unexplained_count_shows_both_numbers():
    with pytest.raises(AssertionError, match=r"off by \+1 \(expected 105, got 106\); count layer by layer"):
        check(answers(count=lambda V, d, H, C, tied: right_count(V, d, H, C, tied) + 1))


# ---- the unigram loss --------------------------------------------------------------------------

def test_bits_instead_of_nats():
    with pytest.raises(AssertionError, match=r"unigram_loss\(\[5, 0, 3, 1, 1\]\): that is in bits"):
        check(answers(unigram=lambda c: right_unigram(c) / np.log(2)))


def test_log_base_ten():
    with pytest.raises(AssertionError, match=r"that is log base 10"):
        check(answers(unigram=lambda c: right_unigram(c) / np.log(10)))


def test_average_over_the_vocabulary_instead_of_over_tokens():
    def unweighted(counts):
        p = counts[counts > 0] / counts.sum()
        return float(np.mean(-np.log(p)))

    with pytest.raises(AssertionError, match=r"you averaged -log p_i over vocabulary entries, but the loss "
                                             r"averages over tokens"):
        check(answers(unigram=unweighted))


def test_zero_counts_not_skipped():
    def with_zeros(counts):
        p = counts / counts.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(-(p * np.log(p)).sum())

    with pytest.raises(AssertionError, match=r"your answer is NaN \(a 0 \* log 0"):
        check(answers(unigram=with_zeros))


def test_raw_counts_inside_the_log():
    def counts_in_log(counts):
        present = counts[counts > 0]
        return float(-(present / counts.sum() * np.log(present)).sum())

    with pytest.raises(AssertionError, match=r"inside the log use the probability p_i = counts_i / N"):
        check(answers(unigram=counts_in_log))


def test_total_instead_of_mean():
    with pytest.raises(AssertionError, match=r"that is the total over all N = 10 tokens"):
        check(answers(unigram=lambda c: right_unigram(c) * c.sum()))


def test_sign_flipped():
    with pytest.raises(AssertionError, match=r"has the wrong sign \(expected 1.16828, got -1.16828\)"):
        check(answers(unigram=lambda c: -right_unigram(c)))


def test_uniform_loss_returned_for_every_text():
    with pytest.raises(AssertionError, match=r"that is log V, the uniform model's loss"):
        check(answers(unigram=lambda c: float(np.log(c.size))))


def test_not_a_number():
    with pytest.raises(AssertionError, match=r"expected one number, got ndarray of shape \(5,\)"):
        check(answers(unigram=lambda c: c / c.sum()))


def test_a_crash_is_reported_not_raised():
    def crashes(counts):
        return counts["total"]

    with pytest.raises(AssertionError, match=r"crashes\(\) raised IndexError"):
        check(answers(unigram=crashes))
