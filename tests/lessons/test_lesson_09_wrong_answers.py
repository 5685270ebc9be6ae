"""Lesson 9's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(9, Path(__file__).resolve().parents[2] / "lessons"))


def right(read, score):
    scores = read @ score.T
    return (scores > np.diag(scores)[:, None]).sum(axis=1)


def answers(rank_of_self=right):
    return SimpleNamespace(rank_of_self=rank_of_self)


def test_rule_used_by_these_tests_is_right():
    check(answers())


def test_a_float_array_or_a_list_is_accepted():
    check(answers(lambda read, score: right(read, score).astype(float).tolist()))


def test_stub_is_not_attempted():
    def stub(read, score):
        raise NotImplementedError
    with pytest.raises(NotImplementedError):
        check(answers(stub))


def test_token_counted_against_itself():
    def wrong(read, score):
        scores = read @ score.T
        return (scores >= np.diag(scores)[:, None]).sum(axis=1)
    with pytest.raises(AssertionError, match=r"t is counted against itself \(>= instead of >\)"):
        check(answers(wrong))


def test_rows_and_columns_swapped():
    def wrong(read, score):
        scores = (read @ score.T).T
        return (scores > np.diag(scores)[:, None]).sum(axis=1)
    with pytest.raises(AssertionError, match=r"rows and columns are swapped"):
        check(answers(wrong))


def test_rank_from_the_bottom():
    def wrong(read, score):
        scores = read @ score.T
        return (scores < np.diag(scores)[:, None]).sum(axis=1)
    with pytest.raises(AssertionError, match=r"counts the tokens scoring lower than t"):
        check(answers(wrong))


def test_only_whether_on_top():
    def wrong(read, score):
        return (np.argmax(read @ score.T, axis=1) != np.arange(len(read))).astype(int)
    with pytest.raises(AssertionError, match=r"only says whether t is on top"):
        check(answers(wrong))


def test_whole_score_table_returned():
    with pytest.raises(AssertionError, match=r"that is the whole \(V, V\) table of scores"):
        check(answers(lambda read, score: read @ score.T))


def test_an_unexplained_answer_gets_the_rule():
    with pytest.raises(AssertionError, match=r"for each t count the j with read\[t\] \. score\[j\] >"):
        check(answers(lambda read, score: right(read, score) + 1))


def test_nan_never_passes():
    with pytest.raises(AssertionError, match="NaN"):
        check(answers(lambda read, score: np.full(len(read), np.nan)))


def test_own_score_from_a_separate_sum_is_named():
    def wrong(read, score):  # right on paper; in floating point t can outscore itself
        own = np.sum(read * score, axis=1)[:, None]
        return ((read @ score.T) > own).sum(axis=1)
    with pytest.raises(AssertionError, match=r"t's own score is computed apart from the others"):
        check(answers(wrong))


def test_normalising_the_callers_table_in_place_is_named():
    def wrong(read, score):
        read /= np.linalg.norm(read, axis=1, keepdims=True)  # ranks do not change; the lesson's E would
        return right(read, score)
    with pytest.raises(AssertionError, match=r"changed its argument read in place"):
        check(answers(wrong))


def test_twins_tie_on_their_own_rows():
    def wrong(read, score):  # breaks ties by index: a twin listed first outscores t
        scores = read @ score.T
        own = np.diag(scores)[:, None]
        earlier = np.arange(len(read))[None, :] < np.arange(len(read))[:, None]
        return ((scores > own) | ((scores == own) & earlier)).sum(axis=1)
    with pytest.raises(AssertionError, match=r"2 of 5 cases wrong"):
        check(answers(wrong))
