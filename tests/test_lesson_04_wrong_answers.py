"""Lesson 4's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from types import SimpleNamespace

import numpy as np
import pytest

from lessons.checks._common import lesson_file, load_module

check = load_module(lesson_file("checks", 4)).check


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
