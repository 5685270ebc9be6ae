"""Lesson 3's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(3, Path(__file__).resolve().parents[2] / "lessons"))


YOURS = " your dL/dE is "


def answers(function):
    return SimpleNamespace(table_grad_from_one_hot=function)


def test_tensor_answer_is_accepted():
    import minigrad as mg

    check(answers(lambda one_hot, upstream: mg.tensor(one_hot.T @ upstream)))


def test_one_hot_times_upstream_without_transpose():
    with pytest.raises(AssertionError, match=r"you computed O G.*is O\^T G"):
        check(answers(lambda one_hot, upstream: one_hot @ upstream))


def test_transposed_answer_names_the_shape():
    with pytest.raises(AssertionError, match=r"shape \(4, 6\), expected \(6, 4\): it is transposed"):
        check(answers(lambda one_hot, upstream: upstream.T @ one_hot))


def test_sign_error():
    with pytest.raises(AssertionError, match="sign is flipped everywhere"):
        check(answers(lambda one_hot, upstream: -(one_hot.T @ upstream)))


def test_assignment_drops_repeats():
    def table_grad_from_one_hot(one_hot, upstream):
        grad = np.zeros((one_hot.shape[1], upstream.shape[1]))
        grad[one_hot.argmax(axis=1)] = upstream  # the last occurrence of a repeated id wins
        return grad

    with pytest.raises(AssertionError, match="row 1 got the gradient of one occurrence; it appears 3 times"):
        check(answers(table_grad_from_one_hot))


def test_nonzero_untouched_row():
    def table_grad_from_one_hot(one_hot, upstream):
        return one_hot.T @ upstream + 0.5  # every row, read or not, is shifted

    with pytest.raises(AssertionError, match="row 2 should be exactly zero"):
        check(answers(table_grad_from_one_hot))


def test_shape_error_in_learner_code_is_explained():
    def table_grad_from_one_hot(one_hot, upstream):
        return one_hot @ upstream.T  # (N, V) @ (d, N): numpy refuses

    with pytest.raises(AssertionError, match=r"(?s)raised ValueError.*one_hot is \(N, V\) = \(6, 6\)"):
        check(answers(table_grad_from_one_hot))


def test_returning_none():
    with pytest.raises(AssertionError, match="returned None"):
        check(answers(lambda one_hot, upstream: None))


def test_missing_function():
    with pytest.raises(AssertionError, match="no function named table_grad_from_one_hot"):
        check(SimpleNamespace())


def test_an_empty_batch_and_float32_are_tried():
    def breaks_on_empty(one_hot, upstream):
        return one_hot.T @ upstream if len(one_hot) else None

    with pytest.raises(AssertionError, match="dL/dE for an empty batch: your function returned None"):
        check(SimpleNamespace(table_grad_from_one_hot=breaks_on_empty))

    def always_float64(one_hot, upstream):
        return np.asarray(one_hot, dtype=np.float64).T @ np.asarray(upstream, dtype=np.float64)

    with pytest.raises(AssertionError, match=f"for a float32 one_hot and a float32 upstream{YOURS}float64"):
        check(SimpleNamespace(table_grad_from_one_hot=always_float64))


def test_a_gradient_rounded_to_float32_or_to_one_hots_dtype_is_refused():
    def always_float32(one_hot, upstream):
        return (one_hot.T @ upstream).astype(np.float32)

    with pytest.raises(AssertionError, match=f"for a float64 one_hot and a float64 upstream{YOURS}float32"):
        check(answers(always_float32))

    def like_one_hot(one_hot, upstream):  # keeps the dtype of the wrong input
        return (one_hot.T @ upstream).astype(one_hot.dtype)

    with pytest.raises(AssertionError, match=f"for a float32 one_hot and a float64 upstream{YOURS}float32"):
        check(answers(like_one_hot))


def test_a_table_sized_by_the_largest_id_read_is_refused():
    def sized_by_the_ids(one_hot, upstream):  # the rows after the largest id read go missing
        ids = one_hot.argmax(axis=1)
        grad = np.zeros((ids.max() + 1 if ids.size else one_hot.shape[1], upstream.shape[1]))
        np.add.at(grad, ids, upstream)
        return grad

    with pytest.raises(AssertionError, match=r"dL/dE has shape \(4, 2\), expected \(6, 2\)"):
        check(answers(sized_by_the_ids))
