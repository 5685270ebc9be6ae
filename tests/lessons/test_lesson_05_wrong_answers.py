"""Lesson 5's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import lessons as runner

check = runner.load_check(runner.get_lesson(5, Path(__file__).resolve().parents[2] / "lessons"))


def probabilities_and_targets(H, W, targets):
    z = H @ W.T
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), np.eye(W.shape[0])[targets]


def answers(dW_rule, dH_rule):
    """An answer module whose gradients are dW_rule(P, Y, H, N) and dH_rule(P, Y, W, N)."""
    def output_map_grads(H, W, targets):
        P, Y = probabilities_and_targets(H, W, targets)
        n = len(targets)
        return dW_rule(P, Y, H, n), dH_rule(P, Y, W, n)

    return SimpleNamespace(output_map_grads=output_map_grads)


def right_dW(P, Y, H, n):
    return (P - Y).T @ H / n


def right_dH(P, Y, W, n):
    return (P - Y) @ W / n


def test_rules_used_by_these_tests_are_right():
    check(answers(right_dW, right_dH))


def test_sign_error_in_dW():
    with pytest.raises(AssertionError, match=r"dL/dW: the sign is flipped: you used \(y - p\) h"):
        check(answers(lambda P, Y, H, n: (Y - P).T @ H / n, right_dH))


def test_sign_error_in_dH():
    with pytest.raises(AssertionError, match=r"dL/dH: the sign is flipped"):
        check(answers(right_dW, lambda P, Y, W, n: (Y - P) @ W / n))


def test_forgetting_the_target_in_dW():
    with pytest.raises(AssertionError, match=r"dL/dW: every row is p_i h.*forgot the target's -1"):
        check(answers(lambda P, Y, H, n: P.T @ H / n, right_dH))


def test_forgetting_the_target_in_dH():
    with pytest.raises(AssertionError, match=r"dL/dH: you have sum_i p_i w_i, forgetting the target's -1"):
        check(answers(right_dW, lambda P, Y, W, n: P @ W / n))


def test_missing_mean_in_dW():
    with pytest.raises(AssertionError, match=r"dL/dW: it is 4 times too large: the loss is the mean"):
        check(answers(lambda P, Y, H, n: (P - Y).T @ H, right_dH))


def test_missing_mean_in_dH():
    with pytest.raises(AssertionError, match=r"dL/dH: it is 4 times too large"):
        check(answers(right_dW, lambda P, Y, W, n: (P - Y) @ W))


def test_only_the_target_row():
    with pytest.raises(AssertionError, match=r"dL/dW: only the target rows have a gradient"):
        check(answers(lambda P, Y, H, n: (Y * (P - 1)).T @ H / n, right_dH))


def test_only_the_target_term_in_dH():
    with pytest.raises(AssertionError, match=r"dL/dH: you kept only the target's term"):
        check(answers(right_dW, lambda P, Y, W, n: (Y * (P - 1)) @ W / n))


def test_transposed_dW():
    with pytest.raises(AssertionError, match=r"dL/dW has shape \(3, 5\), expected \(5, 3\): it is transp"):
        check(answers(lambda P, Y, H, n: H.T @ (P - Y) / n, right_dH))


def test_logits_gradient_instead_of_dH():
    with pytest.raises(AssertionError, match=r"dL/dH has shape \(1, 5\), expected \(1, 3\): that is the"):
        check(answers(right_dW, lambda P, Y, W, n: (P - Y) / n))


def test_dropped_position_is_named():
    def dW_without_last_position(P, Y, H, n):
        kept = np.arange(n) < 3  # a loop that stops at position 2 (harmless for N = 1)
        return (P - Y)[kept].T @ H[kept] / n

    with pytest.raises(AssertionError, match=r"dL/dW row \d is missing the gradient from position 3"):
        check(answers(dW_without_last_position, right_dH))


def test_all_zero_dW():
    with pytest.raises(AssertionError, match=r"dL/dW is all zero"):
        check(answers(lambda P, Y, H, n: np.zeros((P.shape[1], H.shape[1])), right_dH))


def test_not_a_pair():
    with pytest.raises(AssertionError, match=r"should return a pair \(dL/dW, dL/dH\), got ndarray"):
        check(SimpleNamespace(output_map_grads=lambda H, W, targets: np.zeros_like(W)))
