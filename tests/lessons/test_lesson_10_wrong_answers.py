"""Lesson 10's check: the reference passes, the stub is "not attempted", and the usual slips in
splitting a tied table's gradient by path are each named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner

ROOT = Path(__file__).resolve().parents[2]
check = runner.load_check(runner.get_lesson(10, ROOT / "lessons"))
SOLUTION = runner.load_module(ROOT / "lessons" / "solutions" / "10_tying_over_training.py")


def answers(split=SOLUTION.classifier_and_lookup):
    return SimpleNamespace(classifier_and_lookup=split)


def dense(grad, shape):
    out = np.zeros(shape)
    if isinstance(grad, mg.RowSparse):
        np.add.at(out, grad.indices, grad.values)
        return out
    return np.asarray(grad, dtype=np.float64)


def split_with(roles=("classifier", "lookup"), add=True, first_only=False):
    def split(led, table):
        sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
        seen = set()
        for c in led.contributions(table):
            role = c.path.split(" ")[0]
            if first_only and role in seen:
                continue
            seen.add(role)
            if not add and isinstance(c.grad, mg.RowSparse):
                sides[role][c.grad.indices] = c.grad.values  # writes over the part already there
            else:
                sides[role] += dense(c.grad, table.shape)
        return sides[roles[0]], sides[roles[1]]
    return split


def test_the_reference_passes():
    check(answers())


def test_path_grads_and_to_dense_pass_too():
    def split(led, table):
        sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
        for path, grad in led.path_grads(table).items():
            sides[path.split(" ")[0]] += mg.engine.to_dense(grad)
        return sides["classifier"], sides["lookup"]
    check(answers(split))


def test_the_stub_is_not_attempted():
    stub = runner.load_module(ROOT / "lessons" / "exercises" / "10_tying_over_training.py")
    with pytest.raises(NotImplementedError):
        check(stub)


def test_swapped_roles_are_named():
    with pytest.raises(AssertionError, match=r"the two are swapped"):
        check(answers(split_with(roles=("lookup", "classifier"))))


def test_the_whole_gradient_as_the_classifiers_is_named():
    def split(led, table):
        return mg.engine.to_dense(table.grad), np.zeros(table.shape)
    with pytest.raises(AssertionError, match=r"all of the table's gradient went to the classifier"):
        check(answers(split))


def test_a_second_path_left_out_is_named():
    with pytest.raises(AssertionError, match=r"only the first path of each kind was counted"):
        check(answers(split_with(first_only=True)))


def test_a_rows_part_written_over_is_named():
    with pytest.raises(AssertionError, match=r"a row that two lookups read got only the last one's part"):
        check(answers(split_with(add=False)))


def test_row_lengths_instead_of_rows_are_named():
    def split(led, table):
        c, k = SOLUTION.classifier_and_lookup(led, table)
        return np.linalg.norm(c, axis=1), np.linalg.norm(k, axis=1)
    with pytest.raises(AssertionError, match=r"one number per row: return the \(V, d\) gradient itself"):
        check(answers(split))


def test_a_row_sparse_lookup_is_refused():
    def split(led, table):
        grads = led.path_grads(table)
        lookup = next(g for p, g in grads.items() if p.startswith("lookup"))
        classifier = next(g for p, g in grads.items() if p.startswith("classifier"))
        return classifier, lookup
    with pytest.raises(AssertionError, match=r"the lookup part is a RowSparse; return a dense"):
        check(answers(split))


def test_adding_into_the_ledgers_arrays_is_named():
    def split(led, table):
        sides = {}
        for c in led.contributions(table):
            role = c.path.split(" ")[0]
            grad = c.grad.to_dense() if isinstance(c.grad, mg.RowSparse) else c.grad
            if role in sides:
                sides[role] += grad  # the first contribution's own array, changed in place
            else:
                sides[role] = grad
        return sides["classifier"], sides["lookup"]
    with pytest.raises(AssertionError, match=r"the ledger's own record changed while your function ran"):
        check(answers(split))


def test_a_nan_never_passes():
    def split(led, table):
        c, k = SOLUTION.classifier_and_lookup(led, table)
        c[0, 0] = np.nan
        return c, k
    with pytest.raises(AssertionError, match=r"NaN"):
        check(answers(split))
