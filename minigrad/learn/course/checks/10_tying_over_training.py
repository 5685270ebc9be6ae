"""Check for lesson 10: classifier_and_lookup(led, table), a tied table's gradient split by path.

The learner's two parts are compared with each path's gradient as minigrad's RowSparse and
dense arrays sum them, and with the table's own .grad, which they must add up to. The cases:
a tied TinyLM after one backward; the same model read twice before one backward (two paths of
each kind, their rows overlapping); a float32 tied TinyGPT. Swapped roles, a path left out, a
row's part written over instead of added to, the whole gradient given to one side, and a
ledger changed in place are named.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, to_dense
from minigrad.learn.course.learner import LearnerRaised, probe, run
from minigrad.models import TinyGPT, TinyLM
from minigrad.tools.ledger import Ledger, ledger

from . import _common as common


def _tiny_lm() -> TinyLM:
    return TinyLM(11, embedding_dim=4, hidden=6, context=2, tied=True, dtype=np.float64, rng=10)


def _recorded(model: Any, batches: list[tuple[np.ndarray, np.ndarray]]) -> Ledger:
    """The ledger of one backward through the model's loss on each batch, summed."""
    model.zero_grad()
    loss = sum((model.loss(ids, targets) for ids, targets in batches[1:]), model.loss(*batches[0]))
    with ledger(names=model) as led:
        loss.backward()
    return led


_LM_BATCH = (np.array([[1, 4], [4, 4], [2, 7]]), np.array([4, 9, 1]))
_SECOND_BATCH = (np.array([[4, 0], [9, 1]]), np.array([1, 4]))


def _lm_once() -> tuple[Any, Ledger]:
    model = _tiny_lm()
    return model, _recorded(model, [_LM_BATCH])


def _lm_twice() -> tuple[Any, Ledger]:
    model = _tiny_lm()
    return model, _recorded(model, [_LM_BATCH, _SECOND_BATCH])


def _gpt() -> tuple[Any, Ledger]:
    rng = np.random.default_rng(10)
    gpt = TinyGPT(9, context=4, d_model=4, n_heads=2, n_layers=1, tied=True, rng=10)
    return gpt, _recorded(gpt, [(rng.integers(0, 9, (2, 4)), rng.integers(0, 9, (2, 4)))])


# (where, how to build the model and the ledger of its backward): the same in both processes
CASES: list[tuple[str, Callable[[], tuple[Any, Ledger]]]] = [
    ("a tied TinyLM, one backward", _lm_once),
    ("a tied TinyLM read twice before one backward (paths 'lookup emb' and 'lookup emb #2', ...)", _lm_twice),
    ("a float32 tied TinyGPT", _gpt),
]


# ---- in the learner's process: their split of a case's ledger --------------------------------

@probe
def split_of_case(answers, index: int) -> dict:
    """The learner's classifier_and_lookup on case `index`'s ledger, and whether the ledger's own
    record changed while it ran."""
    model, led = CASES[index][1]()
    table = model.input_table
    before = _path_arrays(led, table)
    result = answers.classifier_and_lookup(led, table)
    after = _path_arrays(led, table)
    return {"result": result, "ledger_changed": any(not np.array_equal(before[p], after[p]) for p in before)}


# ---- here: the check --------------------------------------------------------------------------

def _sides(led: Ledger, table: Any, keep: Callable[[int], bool] = lambda k: True) -> dict[str, np.ndarray]:
    """Each side's sum of the ledger's contributions (those `keep` accepts, by their index among
    their side's), each made dense by minigrad's to_dense."""
    sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
    seen = {"classifier": 0, "lookup": 0}
    for contribution in led.contributions(table):
        role = contribution.path.split(" ")[0]
        if keep(seen[role]):
            sides[role] += np.asarray(to_dense(contribution.grad), dtype=np.float64)
        seen[role] += 1
    return sides


def _overwritten(led: Ledger, table: Any) -> dict[str, np.ndarray]:
    """Each side with a RowSparse contribution's rows written over what was there (side[rows] =
    values), not added to it: a row read by two lookups keeps the last one's part only."""
    sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
    for contribution in led.contributions(table):
        side, grad = sides[contribution.path.split(" ")[0]], contribution.grad
        if isinstance(grad, RowSparse):
            side[grad.indices] = grad.values
        else:
            side += np.asarray(grad, dtype=np.float64)
    return sides


def _mistakes(led: Ledger, table: Any, expected: dict[str, np.ndarray]) -> list[tuple[tuple, str]]:
    total = expected["classifier"] + expected["lookup"]
    first = _sides(led, table, keep=lambda k: k == 0)
    overwritten = _overwritten(led, table)
    return [
        ((expected["lookup"], expected["classifier"]), "the two are swapped: the classifier's path is named "
                                                       "'classifier ...' and the lookup's 'lookup ...'"),
        ((total, np.zeros(table.shape)), "all of the table's gradient went to the classifier: split it by "
                                         "the path each contribution came along"),
        ((np.zeros(table.shape), total), "all of the table's gradient went to the lookup: split it by the "
                                         "path each contribution came along"),
        ((first["classifier"], first["lookup"]), "only the first path of each kind was counted; a model read "
                                                 "twice has a second ('lookup emb #2 ...'): add every "
                                                 "contribution of a kind"),
        ((overwritten["classifier"], overwritten["lookup"]),
         "a row that two lookups read got only the last one's part (side[rows] = values writes over what "
         "is there): the parts add up (np.add.at), they do not replace each other"),
    ]


def _as_side(value: Any, what: str, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(value, RowSparse):
        raise AssertionError(f"{what} is a RowSparse; return a dense (V, d) numpy array (the lesson adds the "
                             "rows' lengths and divides by Adam's step sizes row by row)")
    got = common.as_array(value, what)
    common.expect_shape(got, shape, what, known={
        shape[:1]: "one number per row: return the (V, d) gradient itself, not its rows' lengths"})
    return got


def _learners_parts(answers: Any, index: int, table: Any) -> list[np.ndarray]:
    """The learner's (classifier, lookup) for case `index`, checked to be two dense (V, d)
    arrays, after checking that computing them left the ledger's own record as it was."""
    where = CASES[index][0]
    try:
        report = run(answers, split_of_case, index)
    except NotImplementedError:
        raise
    except LearnerRaised as error:  # the learner's bug, reported rather than crashing the check
        raise AssertionError(f"classifier_and_lookup() raised {common.kind_of(error)}: {error}\n"
                             f"{where}: table of shape {table.shape}") from error
    result = report["result"]
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise AssertionError(f"{where}: classifier_and_lookup must return a pair (classifier, lookup), got "
                             f"{common.type_name(result)}")
    if report["ledger_changed"]:
        raise AssertionError(f"{where}: the ledger's own record changed while your function ran (a `+=` into "
                             "a contribution's .grad?): copy before adding")
    return [_as_side(value, f"{where}: the {side} part", table.shape)
            for value, side in zip(result, ("classifier", "lookup"))]


def _path_arrays(led: Ledger, table: Any) -> dict[str, np.ndarray]:
    return {path: np.array(to_dense(grad), dtype=np.float64) for path, grad in led.path_grads(table).items()}


def _check_case(answers: Any, index: int) -> None:
    where, build = CASES[index]
    model, led = build()
    table = model.input_table
    got = _learners_parts(answers, index, table)
    expected = _sides(led, table)
    tolerance: dict[str, Any] = dict(rtol=1e-9, atol=1e-12)
    if table.dtype == np.float32:
        tolerance = dict(rtol=1e-5, atol=1e-7)
    if not np.allclose(expected["classifier"] + expected["lookup"], to_dense(table.grad), **tolerance):
        raise RuntimeError(f"check 10: the ledger's paths do not add up to the table's .grad ({where}); "
                           "this is a bug in minigrad or in the check, not in your answer")
    if all(np.allclose(g, e, **tolerance) for g, e in zip(got, (expected["classifier"], expected["lookup"]))):
        return
    for wrong, diagnosis in _mistakes(led, table, expected):
        if all(np.allclose(g, w, **tolerance) for g, w in zip(got, wrong)):
            raise AssertionError(f"{where}: {diagnosis}")
    for g, side in zip(got, ("classifier", "lookup")):
        common.assert_matches(g, expected[side], f"{where}: the {side} part", max_reported=2)


def check(answers: ModuleType) -> None:
    common.answer_function(answers, "classifier_and_lookup")
    for index in range(len(CASES)):
        _check_case(answers, index)
