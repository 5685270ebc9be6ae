"""Lesson 6's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import lessons as runner

check = runner.load_check(runner.get_lesson(6, Path(__file__).resolve().parents[2] / "lessons"))


def answers(lookup_rule, classifier_rule):
    """An answer module whose row gradient is
    lookup_rule(row, ids, upstream) + classifier_rule(row, H, P, y, M)."""
    def tied_row_gradient(row, ids, upstream, H, P, targets):
        y = (targets == row).astype(float)
        return lookup_rule(row, ids, upstream) + classifier_rule(row, H, P, y, len(targets))

    return SimpleNamespace(tied_row_gradient=tied_row_gradient)


def every_occurrence(row, ids, upstream):
    return upstream[ids == row].sum(axis=0)


def p_minus_y(row, H, P, y, M):
    return (P[:, row] - y) @ H / M


def nothing(row, *args):
    return 0.0


def test_rules_used_by_these_tests_are_right():
    check(answers(every_occurrence, p_minus_y))


def test_only_the_classifier_path():
    with pytest.raises(AssertionError, match=r"dL/dE\[2\]: you have only the classifier path. Row 2 is "
                                             r"also read by the lookup at positions 0, 2"):
        check(answers(nothing, p_minus_y))


def test_only_the_lookup_path():
    with pytest.raises(AssertionError, match=r"dL/dE\[2\]: you have only the lookup path. In a tied table "
                                             r"row 2 is also the output row"):
        check(answers(every_occurrence, nothing))


def test_zero_for_a_row_never_read():
    def lookup_then_classifier_for_read_rows_only(row, H, P, y, M):
        return p_minus_y(row, H, P, y, M) if row in (2, 0, 4, 1) else 0.0  # "absent rows get nothing"

    with pytest.raises(AssertionError, match=r"dL/dE\[5\]: your answer is zero: row 5 is never read.*"
                                             r"scored at every position whether or not it was read"):
        check(answers(every_occurrence, lookup_then_classifier_for_read_rows_only))


def test_missed_repeat():
    def last_occurrence_only(row, ids, upstream):
        rows = {int(i): upstream[n] for n, i in enumerate(ids)}  # a dict keeps the last write
        return rows.get(row, 0.0)

    with pytest.raises(AssertionError, match=r"dL/dE\[2\]: row 2 is read twice \(at positions 0, 2\), "
                                             r"but your lookup part adds the upstream gradient of only 1 of"):
        check(answers(last_occurrence_only, p_minus_y))


def test_buffered_add_misses_the_repeat_too():
    def buffered(row, ids, upstream):
        table = np.zeros((7, upstream.shape[1]))
        table[ids] += upstream  # numpy applies one write per repeated id
        return table[row]

    with pytest.raises(AssertionError, match=r"row 2 is read twice .* only 1 of them"):
        check(answers(buffered, p_minus_y))


def test_forgot_the_target():
    with pytest.raises(AssertionError, match=r"dL/dE\[2\]: the classifier part is sum p_m\[2\] h_m / M: you "
                                             r"forgot the target's -1"):
        check(answers(every_occurrence, lambda row, H, P, y, M: P[:, row] @ H / M))


def test_classifier_only_where_the_row_is_the_answer():
    with pytest.raises(AssertionError, match=r"counts only the positions where token 2 is the answer"):
        check(answers(every_occurrence, lambda row, H, P, y, M: ((P[:, row] - 1) * y) @ H / M))


def test_classifier_sign():
    with pytest.raises(AssertionError, match=r"the classifier part has the wrong sign"):
        check(answers(every_occurrence, lambda row, H, P, y, M: (y - P[:, row]) @ H / M))


def test_classifier_without_the_mean():
    with pytest.raises(AssertionError, match=r"the classifier part is 5 times too large: the loss is the"):
        check(answers(every_occurrence, lambda row, H, P, y, M: (P[:, row] - y) @ H))


def test_lookup_divided_by_M_again():
    with pytest.raises(AssertionError, match=r"the lookup part is 5 times too small: upstream already"):
        check(answers(lambda row, ids, upstream: every_occurrence(row, ids, upstream) / len(ids), p_minus_y))


def test_everything_negated():
    with pytest.raises(AssertionError, match=r"the sign is flipped everywhere"):
        check(answers(lambda *a: -every_occurrence(*a), lambda *a: -p_minus_y(*a)))


def test_whole_table_instead_of_a_row():
    def table(row, ids, upstream, H, P, targets):
        grad = (P - np.eye(P.shape[1])[targets]).T @ H / len(targets)
        np.add.at(grad, ids, upstream)
        return grad

    with pytest.raises(AssertionError, match=r"dL/dE\[2\] has shape \(7, 3\), expected \(3,\): that is the"):
        check(SimpleNamespace(tied_row_gradient=table))


def test_an_exception_in_the_answer_is_reported():
    def tied_row_gradient(row, ids, upstream, H, P, targets):
        return upstream @ P  # (N, d) @ (M, V): shapes that do not fit

    with pytest.raises(AssertionError, match=r"tied_row_gradient\(\) raised ValueError.*\nShapes here: ids"):
        check(SimpleNamespace(tied_row_gradient=tied_row_gradient))


def test_a_positions_probabilities_read_for_a_tokens_column():
    def row_of_P(row, H, P, y, M):
        return np.array([(P[row][m] - y[m]) * H[m] for m in range(M)]).sum(axis=0) / M  # P[row] for P[:, row]

    expected = (r"dL/dE\[2\]: the classifier part reads P\[2\] \(the probabilities at position 2, one per "
                r"token\) where it needs P\[:, 2\]")
    with pytest.raises(AssertionError, match=expected):
        check(answers(every_occurrence, row_of_P))


def test_the_shape_hint_says_how_p_is_laid_out():
    def row_of_P(row, H, P, y, M):
        return (P[row] - y) @ H / M  # (V,) - (M,): does not even broadcast

    with pytest.raises(AssertionError, match=r"raised ValueError.*\nShapes here: .*P\[m, v\] is token v's "
                                             r"probability at position m, so a row's column is P\[:, row\]"):
        check(answers(every_occurrence, row_of_P))
