"""Lesson 11's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

ROOT = Path(__file__).resolve().parents[2]
check = runner.load_check(runner.get_lesson(11, ROOT / "lessons"))


def unit(rows):
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def off_diagonal_mean(matrix):
    V = len(matrix)
    return float((matrix.sum() - np.trace(matrix)) / (V * (V - 1)))


def right(table, centre):
    rows = table - table.mean(axis=0) if centre else table
    u = unit(rows)
    return off_diagonal_mean(u @ u.T)


def answers(fn):
    return SimpleNamespace(mean_pairwise_cosine=fn)


def test_rules_used_by_these_tests_are_right():
    check(answers(right))


def test_rows_not_normalised():
    def dot_products(table, centre):
        rows = table - table.mean(axis=0) if centre else table
        return off_diagonal_mean(rows @ rows.T)

    with pytest.raises(AssertionError, match=r"centre=False\): that is the mean dot product: scale each row"):
        check(answers(dot_products))


def test_diagonal_included():
    def with_diagonal(table, centre):
        rows = table - table.mean(axis=0) if centre else table
        u = unit(rows)
        return float((u @ u.T).mean())

    with pytest.raises(AssertionError, match=r"the diagonal is included: each row's cosine with itself"):
        check(answers(with_diagonal))


def test_diagonal_left_out_but_divided_by_v_squared():
    def wrong_count(table, centre):
        V = len(table)
        return right(table, centre) * (V - 1) / V

    with pytest.raises(AssertionError, match=r"divided by V\^2 = 9; there are V \(V - 1\) = 6 ordered pairs"):
        check(answers(wrong_count))


def test_each_pair_counted_twice():
    with pytest.raises(AssertionError, match=r"each pair is counted twice"):
        check(answers(lambda table, centre: 2 * right(table, centre)))


def test_centred_each_row_instead_of_the_columns():
    def own_mean(table, centre):
        rows = table - table.mean(axis=1, keepdims=True) if centre else table
        u = unit(rows)
        return off_diagonal_mean(u @ u.T)

    with pytest.raises(AssertionError, match=r"centre=True\): you centred each row on its own .* subtracts "
                                             r"the mean row"):
        check(answers(own_mean))


def test_forgot_to_centre():
    with pytest.raises(AssertionError, match=r"centre=True\): the table was not centred"):
        check(answers(lambda table, centre: right(table, False)))


def test_centred_when_not_asked():
    with pytest.raises(AssertionError, match=r"centre=False asks for the raw table"):
        check(answers(lambda table, centre: right(table, True)))


def test_normalised_before_centring():
    def normalise_then_centre(table, centre):
        u = unit(table)
        if centre:
            u = unit(u - u.mean(axis=0))
        return off_diagonal_mean(u @ u.T)

    with pytest.raises(AssertionError, match=r"you scaled the rows to length 1 before centring"):
        check(answers(normalise_then_centre))


def test_normalised_then_centred_without_rescaling():
    def centred_units(table, centre):
        u = unit(table)
        if centre:
            u = u - u.mean(axis=0)
        return off_diagonal_mean(u @ u.T)

    with pytest.raises(AssertionError, match=r"so the rows are no longer of length 1"):
        check(answers(centred_units))


def test_cosine_matrix_returned_instead_of_its_mean():
    def matrix(table, centre):
        u = unit(table)
        return u @ u.T

    with pytest.raises(AssertionError, match=r"expected one number, got ndarray of shape \(3, 3\)"):
        check(answers(matrix))


def test_centring_the_callers_table_in_place_is_named():
    def in_place(table, centre):
        if centre:
            table -= table.mean(axis=0)  # the lesson's own table would lose its mean row
        u = unit(table)
        return off_diagonal_mean(u @ u.T)
    with pytest.raises(AssertionError, match=r"changed its argument table in place"):
        check(answers(in_place))
