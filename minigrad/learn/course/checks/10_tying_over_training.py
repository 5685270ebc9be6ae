"""Check for lesson 10: classifier_and_lookup(led, table), a tied table's gradient split by path.

The learner's two parts are compared with each path's gradient as minigrad's RowSparse and
dense arrays sum them, and with the table's own .grad, which they must add up to. The cases:
a tied TinyLM after one backward; the same model read twice before one backward (two paths of
each kind, their rows overlapping); a float32 tied TinyGPT; and a lookup whose row-sparse
gradient names a row more than once (its parts add up). Swapped roles, a path left out, a
repeated row written over instead of added to, the whole gradient given to one side, and a
ledger changed in place are named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Function, RowSparse, to_dense, use
from minigrad.models import TinyGPT, TinyLM
from minigrad.tools.ledger import Ledger, ledger

from . import _common as common


class _RowsNamedTwice(Function):
    """A lookup whose backward names a row once per position that read it, unsummed (a
    RowSparse may: its repeated rows add)."""

    @staticmethod
    def forward(ctx, weight: np.ndarray, ids: np.ndarray, sparse: bool = True,
                padding_idx: int | None = None) -> np.ndarray:
        ctx.ids, ctx.shape = ids.copy(), weight.shape
        return weight[ids]

    @staticmethod
    def backward(ctx, grad: np.ndarray) -> tuple[RowSparse, None]:
        rows = ctx.ids.reshape(-1)
        return RowSparse(rows, grad.reshape(rows.size, -1), ctx.shape, coalesced=False), None


def _tiny_lm() -> TinyLM:
    return TinyLM(11, embedding_dim=4, hidden=6, context=2, tied=True, dtype=np.float64, rng=10)


def _recorded(model: Any, batches: list[tuple[np.ndarray, np.ndarray]], lookup: type | None = None
              ) -> Ledger:
    """The ledger of one backward through the model's loss on each batch, summed."""
    model.zero_grad()
    with use(Embedding=lookup) if lookup is not None else contextlib.nullcontext():
        loss = sum((model.loss(ids, targets) for ids, targets in batches[1:]), model.loss(*batches[0]))
    with ledger(names=model) as led:
        loss.backward()
    return led


def _cases() -> list[tuple[str, Any, Ledger]]:
    rng = np.random.default_rng(10)
    lm_batch = (np.array([[1, 4], [4, 4], [2, 7]]), np.array([4, 9, 1]))
    second = (np.array([[4, 0], [9, 1]]), np.array([1, 4]))
    cases = []
    model = _tiny_lm()
    cases.append(("a tied TinyLM, one backward", model, _recorded(model, [lm_batch])))
    model = _tiny_lm()
    cases.append(("a tied TinyLM read twice before one backward (paths 'lookup emb' and 'lookup emb #2', "
                  "...)", model, _recorded(model, [lm_batch, second])))
    gpt = TinyGPT(9, context=4, d_model=4, n_heads=2, n_layers=1, tied=True, rng=10)
    gpt_batch = (rng.integers(0, 9, (2, 4)), rng.integers(0, 9, (2, 4)))
    cases.append(("a float32 tied TinyGPT", gpt, _recorded(gpt, [gpt_batch])))
    model = _tiny_lm()
    cases.append(("a tied TinyLM whose lookup names row 4 three times in one RowSparse", model,
                  _recorded(model, [lm_batch], lookup=_RowsNamedTwice)))
    return cases


def _sides(led: Ledger, table: Any, keep: Callable[[int], bool] = lambda k: True,
           dense: Callable[[Any], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Each side's sum of the ledger's contributions (those `keep` accepts, by their index among
    their side's), each made dense by `dense` (default: minigrad's to_dense)."""
    dense = dense or (lambda grad: np.asarray(to_dense(grad), dtype=np.float64))
    sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
    seen = {"classifier": 0, "lookup": 0}
    for contribution in led.contributions(table):
        role = contribution.path.split(" ")[0]
        if keep(seen[role]):
            sides[role] += dense(contribution.grad)
        seen[role] += 1
    return sides


def _overwritten(grad: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A RowSparse made dense by writing each row's values over the last (repeats not added)."""
    out = np.zeros(shape)
    if isinstance(grad, RowSparse):
        out[grad.indices] = grad.values
        return out
    return np.asarray(grad, dtype=np.float64)


def _mistakes(led: Ledger, table: Any, expected: dict[str, np.ndarray]) -> list[tuple[tuple, str]]:
    total = expected["classifier"] + expected["lookup"]
    first = _sides(led, table, keep=lambda k: k == 0)
    overwritten = _sides(led, table, dense=lambda grad: _overwritten(grad, table.shape))
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
         "a row the RowSparse names more than once got only its last values: its parts add up (np.add.at, "
         "or += row by row), they do not replace each other"),
    ]


def _as_side(value: Any, what: str, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(value, RowSparse):
        raise AssertionError(f"{what} is a RowSparse; return a dense (V, d) numpy array (the lesson adds the "
                             "rows' lengths and divides by Adam's step sizes row by row)")
    got = common.as_array(value, what)
    common.expect_shape(got, shape, what, known={
        shape[:1]: "one number per row: return the (V, d) gradient itself, not its rows' lengths"})
    return got


def _check_case(split: Callable, where: str, model: Any, led: Ledger) -> None:
    table = model.input_table
    before = {path: np.asarray(to_dense(grad), dtype=np.float64).copy()
              for path, grad in led.path_grads(table).items()}
    result = common.call_answer(split, led, table, hint=f"{where}: table of shape {table.shape}")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise AssertionError(f"{where}: classifier_and_lookup must return a pair (classifier, lookup), got "
                             f"{type(result).__name__}")
    got = [_as_side(value, f"{where}: the {side} part", table.shape)
           for value, side in zip(result, ("classifier", "lookup"))]
    after = {path: np.asarray(to_dense(grad), dtype=np.float64)
             for path, grad in led.path_grads(table).items()}
    if any(not np.array_equal(before[path], after[path]) for path in before):
        raise AssertionError(f"{where}: the ledger's own record changed while your function ran (a `+=` into "
                             "a contribution's .grad?): copy before adding")
    expected = _sides(led, table)
    tolerance = dict(rtol=1e-5, atol=1e-7) if table.dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)
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
    split = common.answer_function(answers, "classifier_and_lookup")
    for where, model, led in _cases():
        _check_case(split, where, model, led)
