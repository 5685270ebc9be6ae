"""Lesson 13's check: the reference passes, the stub is "not attempted", typical mistakes are named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(13, Path(__file__).resolve().parents[2] / "lessons"))


def unit(table):
    return table / np.linalg.norm(table, axis=1, keepdims=True)


def best(scores, exclude):
    scores = np.array(scores, dtype=float)
    scores[list(exclude)] = -np.inf
    return int(np.argmax(scores))


def right(table, a, b, c):
    u = unit(table)
    return best(u @ (u[b] - u[a] + u[c]), (a, b, c))


def answers(fn):
    return SimpleNamespace(solve_analogy=fn)


def test_rules_used_by_these_tests_are_right():
    check(answers(right))


def test_levy_and_goldbergs_form_of_the_same_rule_passes():
    def three_cosines(table, a, b, c):
        u = unit(table)
        return best(u @ u[b] - u @ u[a] + u @ u[c], (a, b, c))

    check(answers(three_cosines))


MISTAKES = {
    "query words not excluded": (
        lambda t, a, b, c: best(unit(t) @ (unit(t)[b] - unit(t)[a] + unit(t)[c]), ()),
        r"the query words a, b and c are not allowed as answers"),
    "raw rows": (lambda t, a, b, c: best(t @ (t[b] - t[a] + t[c]), (a, b, c)),
                 r"that is the largest dot product with b - a \+ c of the raw rows: scale every row"),
    "candidates not scaled": (lambda t, a, b, c: best(t @ (unit(t)[b] - unit(t)[a] + unit(t)[c]), (a, b, c)),
                              r"the candidate rows were not scaled to length 1"),
    "arrow reversed": (lambda t, a, b, c: right(t, b, a, c), r"the arrow points the wrong way"),
    "argmin": (lambda t, a, b, c: best(-(unit(t) @ (unit(t)[b] - unit(t)[a] + unit(t)[c])), (a, b, c)),
               r"that is the worst candidate, not the best"),
    "one-based": (lambda t, a, b, c: right(t, a, b, c) + 1, r"off by one: row ids start at 0"),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_typical_mistake_is_named(name):
    fn, message = MISTAKES[name]
    with pytest.raises(AssertionError, match=r"solve_analogy\(table of shape \(9, 3\), a=\d, b=\d, c=\d\) "
                                             r"returned \d+, expected \d: " + message):
        check(answers(fn))


def test_an_answer_wrong_some_other_way_names_the_rule():
    with pytest.raises(AssertionError, match=r"expected \d, the row with the largest cos\(x, b\) - "
                                             r"cos\(x, a\) "
                                             r"\+ cos\(x, c\) .*\(\d+ of 10 questions wrong\)"):
        check(answers(lambda t, a, b, c: 0 if right(t, a, b, c) != 0 else 1))


def test_a_score_instead_of_an_id_is_refused():
    with pytest.raises(AssertionError, match=r"expected a whole number, got 0\.\d+"):
        check(answers(lambda t, a, b, c: 0.5))


def test_a_vector_instead_of_an_id_is_refused():
    with pytest.raises(AssertionError, match=r"expected one number, got ndarray of shape \(9,\)"):
        check(answers(lambda t, a, b, c: unit(t) @ unit(t)[b]))
