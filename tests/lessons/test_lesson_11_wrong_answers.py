"""Lesson 11's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

ROOT = Path(__file__).resolve().parents[2]
check = runner.load_check(runner.get_lesson(11, ROOT / "lessons"))
SOLUTION = runner.load_module(ROOT / "lessons" / "solutions" / "11_what_the_map_looks_like.py")


def unit(rows):
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def off_diagonal_mean(matrix):
    V = len(matrix)
    return float((matrix.sum() - np.trace(matrix)) / (V * (V - 1)))


def right(table, centre):
    rows = table - table.mean(axis=0) if centre else table
    u = unit(rows)
    return off_diagonal_mean(u @ u.T)


def answers(fn, merge_step=SOLUTION.merge_step):
    return SimpleNamespace(mean_pairwise_cosine=fn, merge_step=merge_step)


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


# ---- merge_step ---------------------------------------------------------------------------------

def merge_with(tie="greater", weighted=True, overlapping=True, from_the_right=False, pair_as=tuple):
    def merge_step(words):
        pairs = Counter()
        for pieces, count in words.items():
            position = 0
            while position < len(pieces) - 1:
                pairs[pieces[position], pieces[position + 1]] += count if weighted else 1
                same = pieces[position] == pieces[position + 1]
                position += 2 if (same and not overlapping) else 1
        if not pairs:
            return None, words
        top = max(pairs.values())
        tied = sorted(pair for pair, n in pairs.items() if n == top)
        best = tied[-1] if tie == "greater" else tied[0]
        merged = {}
        for pieces, count in words.items():
            order = list(reversed(pieces)) if from_the_right else list(pieces)
            joined, i = [], 0
            while i < len(order):
                a, b = (order[i + 1], order[i]) if from_the_right and i + 1 < len(order) else (
                    order[i], order[i + 1] if i + 1 < len(order) else None)
                if i + 1 < len(order) and (a, b) == best:
                    joined.append(a + b)
                    i += 2
                else:
                    joined.append(order[i])
                    i += 1
            merged[tuple(reversed(joined)) if from_the_right else tuple(joined)] = count
        return (best[0] + best[1] if pair_as is str else best), merged
    return merge_step


def test_the_helper_right_merge_passes():
    check(answers(right, merge_with()))


def test_a_tie_given_to_the_smaller_pair_is_named():
    with pytest.raises(AssertionError, match=r"among pairs equally frequent you took the smaller"):
        check(answers(right, merge_with(tie="smaller")))


def test_pre_tokens_counted_once_each_are_named():
    with pytest.raises(AssertionError, match=r"each pre-token counted once; a pair occurs as often"):
        check(answers(right, merge_with(weighted=False)))


def test_overlapping_pairs_counted_once_are_named():
    with pytest.raises(AssertionError, match=r"a pair inside a run such as 'aaa' was counted once"):
        check(answers(right, merge_with(overlapping=False)))


def test_a_pair_joined_from_the_right_is_named():
    with pytest.raises(AssertionError, match=r"the pair was joined from the right"):
        check(answers(right, merge_with(from_the_right=True)))


def test_a_pair_returned_as_one_string_is_named():
    with pytest.raises(AssertionError, match=r"returned the pair as 'st'; return the two pieces as a tuple"):
        check(answers(right, merge_with(pair_as=str)))


def test_nothing_left_to_merge_must_say_none():
    def never_done(words):
        if all(len(pieces) < 2 for pieces in words):
            raise ValueError("max() arg is an empty sequence")
        return SOLUTION.merge_step(words)
    with pytest.raises(AssertionError, match=r"raised ValueError"):
        check(answers(right, never_done))


def test_a_dropped_count_is_caught():
    def counts_lost(words):
        pair, merged = SOLUTION.merge_step(words)
        return pair, dict.fromkeys(merged, 1)
    with pytest.raises(AssertionError, match=r"the merged words differ"):
        check(answers(right, counts_lost))
