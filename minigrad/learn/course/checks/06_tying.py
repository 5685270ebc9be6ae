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
from minigrad.learn.course.learner import LearnerRaised, probe, run
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


# name: (how to build it with a batch, its table's holder, its output map's holder, their names)
MODELS: dict[str, tuple[Callable[[], tuple[Any, np.ndarray, np.ndarray]], Callable, Callable, str, str]] = {
    "TinyLM": (_tiny_lm, lambda m: m.emb, lambda m: m.head, "emb.weight", "head.weight"),
    "TinyGPT": (_tiny_gpt, lambda m: m.transformer.wte, lambda m: m.lm_head, "transformer.wte.weight",
                "lm_head.weight"),
}


# ---- in the learner's process: their tie_weights on a model built there -----------------------

@probe
def tie_and_backward(answers, name: str) -> dict:
    """Build the untied model `name`, tie it with the learner's tie_weights, run one backward
    under the ledger, and describe what came out, as data."""
    build, table_of, head_of, _, _ = MODELS[name]
    model, ids, targets = build()
    untied_count = sum(p.size for p in model.parameters())
    returned = answers.tie_weights(model)
    report = {"returned": _described(returned, model), "untied_count": untied_count}
    tied: Any = returned if isinstance(returned, Module) else model  # a TinyLM or TinyGPT: it has .loss
    table, head = table_of(tied).weight, head_of(tied).weight
    params = list(tied.parameters())
    report.update(
        head_is_table=head is table, head_is_tensor=isinstance(head, Tensor),
        shares_memory=isinstance(head, Tensor) and bool(np.shares_memory(head.data, table.data)),
        equal_values=isinstance(head, Tensor) and head.shape == table.shape and bool(
            np.array_equal(head.data, table.data)),
        listed=sum(p is table for p in params), count=sum(p.size for p in params), table_size=table.size,
        table=np.asarray(table.data))
    tied.zero_grad()
    loss = tied.loss(ids, targets)
    with ledger(names=tied) as led:
        loss.backward()
    report.update(paths=sorted(led.path_grads(table)),
                  grad=None if table.grad is None else np.asarray(to_dense(table.grad), dtype=np.float64))
    return report


def _described(returned: Any, model: Any) -> str:
    if returned is model:
        return "the model"
    if returned is None:
        return "None"
    kind = "another model" if isinstance(returned, Module) else "a"
    return f"{kind} {type(returned).__name__}".replace("a a", "an a", 1)


# ---- here: the check --------------------------------------------------------------------------

def _reference(name: str, values: np.ndarray) -> np.ndarray:
    """The tied table's gradient with minigrad's own tie, the table holding `values` (which way
    round a tie is made decides them), confirmed by central differences."""
    build, table_of, _, _, _ = MODELS[name]
    model, ids, targets = build()
    model.tie_weights()
    table = table_of(model).weight
    if values.shape != table.shape:
        raise AssertionError(f"{name}: after your tie the table has shape {values.shape}, expected "
                             f"{table.shape}")
    table.data[...] = values
    model.loss(ids, targets).backward()
    analytical = np.asarray(to_dense(table.grad), dtype=np.float64)

    def loss_at() -> float:
        with no_grad():
            return float(model.loss(ids, targets).data)

    numerical = numerical_gradient(loss_at, table, eps=1e-6)
    if not np.allclose(analytical, numerical, rtol=1e-4, atol=1e-7):
        raise RuntimeError("the tied reference disagrees with finite differences: a bug in minigrad or in "
                           "the check")
    return numerical


def _check_returned(name: str, returned: str) -> None:
    if returned == "the model":
        return
    if returned == "None":
        raise AssertionError(f"{name}: tie_weights returned None; return the model it was given, tied (the "
                             "lessons write `model = tie_weights(model)`)")
    if returned.startswith("another model"):
        raise AssertionError(f"{name}: tie_weights returned {returned}, not the model it was given: tie that "
                             "model in place and return it")
    raise AssertionError(f"{name}: tie_weights returned {returned}; return the model")


def _diagnose_tie(name: str, report: dict) -> None:
    _, _, _, table_name, head_name = MODELS[name]
    if report["head_is_table"]:
        return
    pair = f"{head_name} and {table_name}"
    if report["shares_memory"]:
        raise AssertionError(
            f"{name}: {pair} are two Parameters over one array. They start equal, but each gets its own "
            ".grad (the lookup's gradient and the classifier's never meet), the graph has two parameter "
            f"nodes instead of one with two edges, and an optimizer steps the memory twice per step. Assign "
            f"the Parameter itself: {head_name} = {table_name}")
    if report["equal_values"]:
        raise AssertionError(
            f"{name}: you copied the table's numbers into the output map; they are equal now and part ways "
            f"at the first optimizer step. A tie makes {pair} the same Parameter object")
    raise AssertionError(f"{name}: the model is not tied: {pair} are different Parameters with different "
                         "values")


def _check_listed_once(name: str, report: dict) -> None:
    if report["listed"] != 1:
        raise AssertionError(f"{name}: model.parameters() lists the tied table {report['listed']} times; it "
                             "must list it once")
    saved = report["untied_count"] - report["count"]
    if saved != report["table_size"]:
        size = report["table_size"]
        raise AssertionError(f"{name}: tying should remove exactly one (V, d) table of {size} numbers from "
                             f"the parameters, but the count changed by {saved}")


def _check_gradients(name: str, report: dict) -> None:
    """Both paths reach the table, and their sum is the gradient finite differences measure."""
    paths = report["paths"]
    roles = sorted(path.split(" ")[0] for path in paths)
    if roles != ["classifier", "lookup"]:
        raise AssertionError(f"{name}: after one backward the table should receive two gradients, one from "
                             f"the lookup and one from the classifier; the ledger shows {paths}")
    numerical = _reference(name, common.as_array(report["table"], f"{name}: the tied table"))
    analytical = common.as_array(report["grad"], f"{name}: the tied table's gradient")
    common.expect_shape(analytical, numerical.shape, f"{name}: the tied table's gradient")
    if not np.allclose(analytical, numerical, rtol=1e-4, atol=1e-7):
        worst = np.unravel_index(np.argmax(np.abs(analytical - numerical)), numerical.shape)
        raise AssertionError(
            f"{name}: the tied table's gradient disagrees with finite differences at row {worst[0]}: "
            f"backward {analytical[worst]:.6g}, finite differences {numerical[worst]:.6g}")


def check(answers: ModuleType) -> None:
    common.answer_function(answers, "tie_weights")
    for name in MODELS:
        try:
            report = run(answers, tie_and_backward, name)
        except NotImplementedError:
            raise
        except LearnerRaised as error:
            raise AssertionError(f"tie_weights() raised {error.kind}: {error}\nHere model is {name}(..., "
                                 "tied=False); return the model after tying it") from error
        _check_returned(name, report["returned"])
        _diagnose_tie(name, report)
        _check_listed_once(name, report)
        _check_gradients(name, report)
