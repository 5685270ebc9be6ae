"""Lesson 4's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import lessons as runner

check = runner.load_check(runner.get_lesson(4, Path(__file__).resolve().parents[2] / "lessons"))


def answers(function):
    return SimpleNamespace(row_gradients=function)


def test_dict_answer_is_accepted():
    def row_gradients(ids, upstream, vocab_size):
        rows = {}
        for position in np.ndindex(ids.shape):
            row = int(ids[position])
            rows[row] = rows.get(row, 0) + upstream[position]
        return rows

    check(answers(row_gradients))


def test_buffered_add_drops_a_repeat():
    def row_gradients(ids, upstream, vocab_size):
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        grad[ids.reshape(-1)] += upstream.reshape(-1, upstream.shape[-1])  # the classic bug
        return grad

    with pytest.raises(AssertionError, match="row 1 got the gradient of one occurrence; it appears twice"):
        check(answers(row_gradients))


def test_dict_overwrite_drops_a_repeat():
    def row_gradients(ids, upstream, vocab_size):
        return {int(ids[p]): upstream[p] for p in np.ndindex(ids.shape)}  # later positions overwrite

    with pytest.raises(AssertionError, match="row 1 got the gradient of one occurrence; it appears twice"):
        check(answers(row_gradients))


def test_keeping_the_first_occurrence_only():
    def row_gradients(ids, upstream, vocab_size):
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        for p in np.ndindex(ids.shape):
            if not grad[ids[p]].any():  # "already filled": skips every later occurrence
                grad[ids[p]] = upstream[p]
        return grad

    with pytest.raises(AssertionError, match="row 1 got the gradient of one occurrence; it appears twice"):
        check(answers(row_gradients))


def test_off_by_one_id_puts_gradient_on_an_untouched_row():
    def row_gradients(ids, upstream, vocab_size):
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        np.add.at(grad, ids.reshape(-1) + 1, upstream.reshape(-1, upstream.shape[-1]))
        return grad

    with pytest.raises(AssertionError, match="dL/dE row 2 should be exactly zero"):
        check(answers(row_gradients))


def test_per_position_answer_is_explained():
    with pytest.raises(AssertionError, match=r"shape \(1, 4, 3\), expected \(8, 3\): that is one vector per"):
        check(answers(lambda ids, upstream, vocab_size: upstream))


def test_sign_error():
    def row_gradients(ids, upstream, vocab_size):
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        np.subtract.at(grad, ids.reshape(-1), upstream.reshape(-1, upstream.shape[-1]))
        return grad

    with pytest.raises(AssertionError, match="sign is flipped everywhere"):
        check(answers(row_gradients))


def test_bad_dict_key():
    with pytest.raises(AssertionError, match="dict key 8 is not a row of the table"):
        check(answers(lambda ids, upstream, vocab_size: {8: np.zeros(3)}))


def test_skipped_positions_are_named_not_called_a_missing_path():
    def row_gradients(ids, upstream, vocab_size):  # loops over T but only the first sequence
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        for t in range(ids.shape[1]):
            grad[ids[0, t]] += upstream[0, t]
        return grad

    # The first case has one sequence, so it passes; the second loses sequence 1 entirely.
    expected = (r"dL/dE leaves out the gradient of 4 of the 8 positions \(position \(1, 0\), "
                r"position \(1, 1\), position \(1, 2\), position \(1, 3\)\): the rows read there are "
                r"missing it\. Add the upstream vector of every position of ids, both axes of \(B, T\) = "
                r"\(2, 4\)")
    with pytest.raises(AssertionError, match=expected):
        check(answers(row_gradients))


def test_the_last_position_skipped_is_named():
    def row_gradients(ids, upstream, vocab_size):  # range(T - 1): an off-by-one
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        for b, t in np.ndindex(ids.shape[0], ids.shape[1] - 1):
            grad[ids[b, t]] += upstream[b, t]
        return grad

    with pytest.raises(AssertionError, match=r"leaves out the gradient of 1 of the 4 positions "
                                             r"\(position \(0, 3\)\)"):
        check(answers(row_gradients))


def test_a_dropped_repeat_names_the_occurrence_it_dropped():
    def row_gradients(ids, upstream, vocab_size):
        grad = np.zeros((vocab_size, upstream.shape[-1]))
        grad[ids.reshape(-1)] = upstream.reshape(-1, upstream.shape[-1])  # the last occurrence wins
        return grad

    with pytest.raises(AssertionError, match=r"row 1 got the gradient of one occurrence; it appears twice .*"
                                             r"missing: position \(0, 0\)"):
        check(answers(row_gradients))
