"""Check for lesson 6: the learner ties a language model's output map to its token table.

For TinyLM and TinyGPT built untied: afterwards the two roles must be one Parameter object
(not equal numbers, not two Parameters over one array), listed once among the parameters; a
backward must send the table a lookup path and a classifier path (the ledger), and the summed
gradient must agree with finite differences.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Tensor, no_grad, to_dense
from minigrad.models import TinyGPT, TinyLM
from minigrad.nn import Module
from minigrad.tools.gradcheck import numerical_gradient
from minigrad.tools.ledger import ledger

from . import _common as common


def _tiny_lm() -> tuple[Any, np.ndarray, np.ndarray]:
    model = TinyLM(7, embedding_dim=3, hidden=4, context=2, tied=False, dtype=np.float64, rng=3)
    return model, np.array([[1, 4], [4, 0], [2, 2]]), np.array([4, 6, 1])


def _tiny_gpt() -> tuple[Any, np.ndarray, np.ndarray]:
    model = TinyGPT(9, context=4, d_model=4, n_heads=2, n_layers=1, tied=False, dtype=np.float64, rng=3)
    return model, np.array([[1, 5, 5, 0], [8, 2, 3, 1]]), np.array([[5, 5, 0, 3], [2, 3, 1, 7]])


# (what it is, how to build it with a batch, its table, its output map's weight holder)
MODELS: list[tuple[str, Callable[[], tuple[Any, np.ndarray, np.ndarray]], Callable, Callable]] = [
    ("TinyLM", _tiny_lm, lambda m: m.emb, lambda m: m.head),
    ("TinyGPT", _tiny_gpt, lambda m: m.transformer.wte, lambda m: m.lm_head),
]


def _diagnose_tie(name: str, table: Any, head: Any, table_name: str, head_name: str) -> None:
    if head is table:
        return
    pair = f"{head_name} and {table_name}"
    if isinstance(head, Tensor) and np.shares_memory(head.data, table.data):
        raise AssertionError(
            f"{name}: {pair} are two Parameters over one array. They start equal, but each gets its own "
            ".grad (the lookup's gradient and the classifier's never meet), the graph has two parameter "
            f"nodes instead of one with two edges, and an optimizer steps the memory twice per step. Assign "
            f"the Parameter itself: {head_name} = {table_name}")
    if isinstance(head, Tensor) and head.shape == table.shape and np.array_equal(head.data, table.data):
        raise AssertionError(
            f"{name}: you copied the table's numbers into the output map; they are equal now and part ways "
            f"at the first optimizer step. A tie makes {pair} the same Parameter object")
    raise AssertionError(f"{name}: the model is not tied: {pair} are different Parameters with different "
                         "values")


def _check_listed_once(name: str, model: Any, table: Any, untied_count: int) -> None:
    params = list(model.parameters())
    if sum(p is table for p in params) != 1:
        listed = sum(p is table for p in params)
        raise AssertionError(f"{name}: model.parameters() lists the tied table {listed} times; it must list "
                             "it once")
    saved = untied_count - sum(p.size for p in params)
    if saved != table.size:
        raise AssertionError(f"{name}: tying should remove exactly one (V, d) table of {table.size} numbers "
                             f"from the parameters, but the count changed by {saved}")


def _check_gradients(name: str, model: Any, table: Any, ids: np.ndarray, targets: np.ndarray) -> None:
    """Both paths reach the table, and their sum is the gradient finite differences measure."""
    model.zero_grad()
    loss = model.loss(ids, targets)
    with ledger(names=model) as led:
        loss.backward()
    paths = sorted(led.path_grads(table))
    roles = sorted(path.split(" ")[0] for path in paths)
    if roles != ["classifier", "lookup"]:
        raise AssertionError(f"{name}: after one backward the table should receive two gradients, one from "
                             f"the lookup and one from the classifier; the ledger shows {paths}")

    def loss_at() -> float:
        with no_grad():
            return float(model.loss(ids, targets).data)

    numerical = numerical_gradient(loss_at, table, eps=1e-6)
    analytical = np.asarray(to_dense(table.grad), dtype=np.float64)
    if not np.allclose(analytical, numerical, rtol=1e-4, atol=1e-7):
        worst = np.unravel_index(np.argmax(np.abs(analytical - numerical)), numerical.shape)
        raise AssertionError(
            f"{name}: the tied table's gradient disagrees with finite differences at row {worst[0]}: "
            f"backward {analytical[worst]:.6g}, finite differences {numerical[worst]:.6g}")


def check(answers: ModuleType) -> None:
    tie_weights = common.answer_function(answers, "tie_weights")
    for name, build, table_of, head_of in MODELS:
        model, ids, targets = build()
        untied_count = sum(p.size for p in model.parameters())
        hint = f"Here model is {name}(..., tied=False); return the model after tying it"
        returned = common.call_answer(tie_weights, model, hint=hint)
        if returned is not None and not isinstance(returned, Module):
            raise AssertionError(f"{name}: tie_weights returned a {type(returned).__name__}; return "
                                 "the model")
        tied = model if returned is None else returned
        table_name, head_name = (("emb.weight", "head.weight") if name == "TinyLM"
                                 else ("transformer.wte.weight", "lm_head.weight"))
        table, head = table_of(tied).weight, head_of(tied).weight
        _diagnose_tie(name, table, head, table_name, head_name)
        _check_listed_once(name, tied, table, untied_count)
        _check_gradients(name, tied, table, ids, targets)
