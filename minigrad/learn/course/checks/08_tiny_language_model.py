"""Check for lesson 8: the learner's training step and evaluation, against minigrad's own.

`train_step` is run for three steps on small models (TinyLM with one target a window under SGD,
where a summed loss shows as a step N times too long; TinyGPT with a target at every position
under AdamW) and every parameter is compared, step by step, with minigrad's `train_step` on the
same batches; the usual slips in the order of the five lines are recomputed and named.
`mean_loss` is run on a model that records each call (how many windows, whether a graph was
being recorded) and compared with minigrad's `mean_loss`; unevenly filled chunks, averages of
averages and a count of windows instead of targets are named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Tensor, is_grad_enabled
from minigrad.learn.course.learner import LearnerRaised, probe, run
from minigrad.learn.train import mean_loss as minigrads_mean_loss
from minigrad.learn.train import next_token_loss
from minigrad.models import TinyGPT, TinyLM
from minigrad.nn import Module
from minigrad.optim import SGD, AdamW

from . import _common as common

RTOL, ATOL = 1e-9, 1e-12  # float64 models: the same arithmetic, in another order at most


def _tiny_lm(dtype: Any = np.float64) -> TinyLM:
    return TinyLM(11, embedding_dim=4, hidden=6, context=2, tied=True, dtype=dtype, rng=3)


def _tiny_gpt(dtype: Any = np.float64) -> TinyGPT:
    return TinyGPT(9, context=4, d_model=4, n_heads=2, n_layers=1, tied=False, dtype=dtype, rng=5)


# The models the check trains and measures, by name: each process builds its own, the same.
MODELS: dict[str, Callable[[], Module]] = {
    "TinyLM": lambda: _tiny_lm(),
    "TinyGPT": lambda: _tiny_gpt(),
    "float32 TinyLM": lambda: _tiny_lm(np.float32),
}

# The optimizers, by name.
OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "SGD": lambda p: SGD(p, lr=0.5),
    "AdamW": lambda p: AdamW(p, lr=0.05, weight_decay=0.1),
}


def _lm_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """Three batches of 5 windows; ids repeat inside a batch and across batches."""
    rng = np.random.default_rng(8)
    return [(rng.integers(0, 11, (5, 2)), rng.integers(0, 11, 5)) for _ in range(3)]


def _gpt_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(80)
    return [(rng.integers(0, 9, (3, 4)), rng.integers(0, 9, (3, 4))) for _ in range(3)]


# (where, model, optimizer, batches, predictions a batch): the runs of train_step compared
RUNS: list[tuple[str, str, str, Callable[[], list], int]] = [
    ("TinyLM under SGD", "TinyLM", "SGD", _lm_batches, 5),
    ("TinyGPT under AdamW (a target at every position)", "TinyGPT", "AdamW", _gpt_batches, 12),
    ("float32 TinyLM under AdamW", "float32 TinyLM", "AdamW", _lm_batches, 5),
]


# ---- in the learner's process: their train_step and mean_loss on models built there ---------------

_TRAINING: dict[int, tuple[Module, Any]] = {}  # a run's model and optimizer, between its steps


@probe
def take_a_step(answers, run_number: int, number: int) -> dict:
    """Step `number` (1, 2, ...) of run `run_number` with the learner's train_step: what it
    returned, the parameters after it, and whether the optimizer given ever stepped."""
    _, model_name, optimizer_name, batches, _ = RUNS[run_number]
    if number == 1:
        model = MODELS[model_name]()
        _TRAINING[run_number] = (model, OPTIMIZERS[optimizer_name](model.parameters()))
    model, optimizer = _TRAINING[run_number]
    ids, targets = batches()[number - 1]
    returned = answers.train_step(model, optimizer, ids, targets)
    return {"returned": returned, "after": [p.data.copy() for p in model.parameters()],
            "stepped": any(optimizer.step_count(p) > 0 for p in model.parameters())}


@probe
def measure(answers, model_name: str, ids: np.ndarray, targets: np.ndarray, batch_size: Any) -> dict:
    """The learner's mean_loss on a watched model whose parameters hold a gradient left from
    training (batch_size None: called without it): what it returned, each call the model got
    (windows, whether a graph was recorded), and whether the weights and the .grads were left alone."""
    model = _Watched(MODELS[model_name]())
    for p in model.parameters():
        p.grad = np.full(p.shape, 0.25, dtype=p.dtype)  # a gradient left from a training step
    before = [p.data.copy() for p in model.parameters()]
    given = () if batch_size is None else (batch_size,)
    value = answers.mean_loss(model, ids, targets, *given)
    return {"value": value, "calls": model.calls,
            "weights_kept": all(np.array_equal(p.data, b) for p, b in zip(model.parameters(), before)),
            "grads_kept": all(isinstance(p.grad, np.ndarray) and np.all(p.grad == 0.25)
                              for p in model.parameters())}


# ---- here: the check --------------------------------------------------------------------------


# ---- train_step ---------------------------------------------------------------------------------

# Orders of the step's actions: the right one, and the slips the check names. Each entry is
# (name, the actions in order, what the learner is told).
ORDERS: list[tuple[str, tuple[str, ...], str]] = [
    ("right", ("zero_grad", "backward", "step"), ""),
    ("no zero_grad", ("backward", "step"),
     "from the second step on, your parameters moved as if each batch's gradient were added to the "
     "ones before it: .grad adds up across backward() calls, so call optimizer.zero_grad() before "
     "loss.backward()"),
    ("two steps", ("zero_grad", "backward", "step", "step"),
     "each batch moved your parameters twice: optimizer.step() once a batch"),
]


def _reference(build: Callable[[], Module], make: Callable[[Any], Any], batches: Sequence[Any],
               actions: tuple[str, ...], scale: float = 1.0) -> tuple[list[list[np.ndarray]], list[float]]:
    """Parameters after each step and each batch's loss, stepping with minigrad's own ops in the
    order `actions`; `scale` multiplies the loss (the batch size N: a summed loss)."""
    model = build()
    optimizer = make(model.parameters())
    after, losses = [], []
    for ids, targets in batches:
        loss = next_token_loss(model(ids), targets) * scale
        for action in actions:
            {"zero_grad": optimizer.zero_grad, "backward": loss.backward, "step": optimizer.step}[action]()
        after.append([p.data.copy() for p in model.parameters()])
        losses.append(loss.item())
    return after, losses


def _learners_run(answers: Any, run_number: int) -> tuple[list[list[np.ndarray]], list[Any], bool]:
    """The learner's run: the parameters after each step, what each step returned, and whether
    the optimizer given ever stepped."""
    after, returned, stepped = [], [], False
    for number, (ids, targets) in enumerate(RUNS[run_number][3](), 1):
        hint = (f"on step {number}, with ids of shape {ids.shape} and targets of shape {targets.shape} "
                "(F.cross_entropy takes logits (N, V) and targets (N,): a model's (B, C, V) logits are "
                "B * C rows)")
        try:
            report = run(answers, take_a_step, run_number, number)
        except NotImplementedError:
            raise
        except LearnerRaised as error:  # the learner's bug, reported rather than crashing the check
            message = f"train_step() raised {common.kind_of(error)}: {error}\n{hint}"
            if "modified in place" in str(error):
                message += ("\n(an optimizer step between the forward pass and loss.backward() changes the "
                            "weights the forward kept: step after backward)")
            raise AssertionError(message) from error
        after.append(report["after"])
        returned.append(report["returned"])
        stepped = report["stepped"]
    return after, returned, stepped


def _same(a: list[np.ndarray], b: list[np.ndarray], rtol: float = RTOL, atol: float = ATOL) -> bool:
    return all(x.shape == y.shape and np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(a, b))


def _check_returned(returned: list[Any], losses: list[float], after_update: list[float], batch: int,
                    where: str) -> None:
    for number, (value, expected) in enumerate(zip(returned, losses), 1):
        if isinstance(value, Tensor):
            raise AssertionError(f"{where}: train_step returned a Tensor; return loss.item(), a Python float "
                                 "(a tensor that required grad keeps the whole graph of the step alive)")
        got = common.as_number(value, f"{where}: train_step's returned loss (step {number})")
        if np.isclose(got, expected, rtol=1e-9, atol=0):
            continue
        if np.isclose(got, after_update[number - 1], rtol=1e-9, atol=0):
            raise AssertionError(f"{where}: train_step returned the batch's loss after the update (step "
                                 f"{number}: {got:.6g}, before it {expected:.6g}); return the loss the "
                                 "gradients came from")
        common.assert_number(got, expected, f"{where}: train_step's returned loss (step {number})", mistakes=[
            (expected * batch, f"the loss summed over the batch's {batch} predictions; train on their mean "
                               "(F.cross_entropy's default, reduction='mean')")])


def _diagnose_steps(after: list[list[np.ndarray]], build: Callable[[], Module], make: Callable[[Any], Any],
                    batches: Sequence[Any], batch: int, where: str) -> None:
    right, _ = _reference(build, make, batches, ORDERS[0][1])
    if all(_same(got, expected) for got, expected in zip(after, right)):
        return
    start = [p.data for p in build().parameters()]
    if _same(after[0], start, rtol=0, atol=0):
        raise AssertionError(f"{where}: no parameter moved on the first step. Did optimizer.step() run after "
                             "loss.backward(), with the gradients still there (zero_grad after backward "
                             "erases them)?")
    for _, actions, diagnosis in ORDERS[1:]:
        wrong, _ = _reference(build, make, batches, actions)
        if all(_same(got, expected) for got, expected in zip(after, wrong)):
            raise AssertionError(f"{where}: {diagnosis}")
    summed, _ = _reference(build, make, batches, ORDERS[0][1], scale=batch)
    if _same(after[0], summed[0]):
        raise AssertionError(f"{where}: the first step was {batch} times too long: you trained on the loss "
                             f"summed over the batch's {batch} predictions; train on their mean")
    first_wrong = next(number for number, (got, expected) in enumerate(zip(after, right), 1)
                       if not _same(got, expected))
    raise AssertionError(f"{where}: after step {first_wrong} your parameters differ from minigrad's "
                         "train_step on the same batches: one step is the batch's mean cross-entropy, "
                         "optimizer.zero_grad(), loss.backward(), optimizer.step()")


def _check_train_step(answers: Any) -> None:
    for run_number, (where, model_name, optimizer_name, batches, batch) in enumerate(RUNS):
        build, make = MODELS[model_name], OPTIMIZERS[optimizer_name]
        after, returned, stepped = _learners_run(answers, run_number)
        if model_name.startswith("float32"):
            _check_float32(after, returned, build, make)
            continue
        _, losses = _reference(build, make, batches(), ORDERS[0][1])
        if not stepped and not _same(after[-1], [p.data for p in build().parameters()], rtol=0, atol=0):
            raise AssertionError(f"{where}: your parameters moved, but the optimizer you were given never "
                                 "took a step: step with that one (a new optimizer each step forgets Adam's "
                                 "moments)")
        _diagnose_steps(after, build, make, batches(), batch, where)
        _check_returned(returned, losses, _losses_after_each_update(build, make, batches()), batch, where)


def _losses_after_each_update(build: Callable[[], Module], make: Callable[[Any], Any],
                              batches: Sequence[Any]) -> list[float]:
    """Each batch's loss just after its own update (what a step that measures too late returns)."""
    model = build()
    optimizer = make(model.parameters())
    losses = []
    for ids, targets in batches:
        loss = next_token_loss(model(ids), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(next_token_loss(model(ids), targets).item())
    return losses


def _check_float32(after: list[list[np.ndarray]], returned: list[Any], build: Callable[[], Module],
                   make: Callable[[Any], Any]) -> None:
    """A float32 model, as the lessons train: the same steps to float32's precision."""
    right, _ = _reference(build, make, _lm_batches(), ORDERS[0][1])
    if not _same(after[-1], right[-1], rtol=1e-4, atol=1e-6):
        raise AssertionError("with a float32 TinyLM, your steps end away from minigrad's train_step on the "
                             "same batches (float64 models matched): keep the model's own dtype")
    common.as_number(returned[-1], "train_step's returned loss for a float32 model")


# ---- mean_loss ----------------------------------------------------------------------------------

class _Watched(Module):
    """A model that remembers, for each call, how many windows it got and whether a graph was being
    recorded."""

    def __init__(self, model: Module):
        super().__init__()
        self.model = model
        self.calls: list[tuple[int, bool]] = []

    def forward(self, ids: Any) -> Tensor:
        self.calls.append((len(ids), is_grad_enabled()))
        return self.model(ids)


def _mistakes(model: Module, ids: np.ndarray, targets: np.ndarray, rows: int) -> list[tuple[float, str]]:
    """What the usual slips give, as (value, diagnosis)."""
    chunks = [slice(start, start + rows) for start in range(0, len(ids), rows)]
    means = [minigrads_mean_loss(model, ids[c], targets[c]) for c in chunks]
    total = minigrads_mean_loss(model, ids, targets) * targets.size
    wrong = [(float(np.mean(means)), "you averaged the chunks' mean losses, but the last chunk holds "
                                     "fewer windows: add up every target's loss and divide by the number "
                                     "of targets"),
             (means[0], "only the first chunk was counted: run the model on every chunk"),
             (total, "that is the sum over the targets, not their mean")]
    if targets.ndim == 2:
        wrong.append((total / len(ids), f"you divided by the {len(ids)} windows, but each predicts "
                                        f"{targets.shape[1]} tokens: divide by the {targets.size} targets"))
    return wrong


def _check_mean_loss_case(answers: Any, model_name: str, ids: np.ndarray, targets: np.ndarray,
                          batch_size: int, where: str) -> None:
    hint = f"{where}: ids {ids.shape}, targets {targets.shape}, batch_size={batch_size}"
    report = _measured(answers, model_name, ids, targets, batch_size, hint)
    value = report["value"]
    if isinstance(value, Tensor):
        raise AssertionError(f"{where}: mean_loss returned a Tensor; return a Python float (.item())")
    got = common.as_number(value, f"{where}: mean_loss")
    model = MODELS[model_name]()
    expected = minigrads_mean_loss(model, ids, targets, batch_size)
    _name_a_slip(got, expected, model, ids, targets, batch_size, where)
    _check_calls(report["calls"], ids, targets, batch_size, where)
    _check_left_alone(report, where)
    common.assert_number(got, expected, f"{where}: mean_loss", rtol=1e-9)


def _measured(answers: Any, model_name: str, ids: np.ndarray, targets: np.ndarray, batch_size: Any,
              hint: str) -> dict:
    """The probe `measure`, with an error of the learner's code reported as call_answer does."""
    try:
        return run(answers, measure, model_name, ids, targets, batch_size)
    except NotImplementedError:
        raise
    except LearnerRaised as error:
        raise AssertionError(f"mean_loss() raised {common.kind_of(error)}: {error}\n{hint}") from error


def _name_a_slip(got: float, expected: float, model: Module, ids: np.ndarray, targets: np.ndarray,
                 batch_size: int, where: str) -> None:
    per_window = 1 if targets.ndim == 1 else targets.shape[1]
    for wrong, diagnosis in _mistakes(model, ids, targets, max(1, batch_size // per_window)):
        same_as_right = np.isclose(wrong, expected, rtol=1e-9, atol=0)  # then it is no slip here
        if np.isclose(got, wrong, rtol=1e-9, atol=0) and not same_as_right:
            raise AssertionError(f"{where}: mean_loss: {diagnosis} (got {got:.6g})")


def _check_left_alone(report: dict, where: str) -> None:
    """The weights as they were, and the 0.25 left in every .grad."""
    if not report["weights_kept"]:
        raise AssertionError(f"{where}: mean_loss changed the model's weights; measuring must leave them "
                             "as they are")
    if not report["grads_kept"]:
        raise AssertionError(f"{where}: mean_loss changed the parameters' .grad (a backward, or zero_grad); "
                             "measuring must leave the training state alone")


def _check_calls(calls: list, ids: np.ndarray, targets: np.ndarray, batch_size: int, where: str) -> None:
    per_window = 1 if targets.ndim == 1 else targets.shape[1]
    allowed = max(1, batch_size // per_window)
    if any(recording for _, recording in calls):
        raise AssertionError(f"{where}: the model ran while a graph was being recorded: evaluate under "
                             "`with mg.no_grad():`, so that no backward graph is kept for nothing")
    largest = max((n for n, _ in calls), default=0)
    if largest > allowed:
        counted = (f" (batch_size={batch_size} counts predicted positions; each window here predicts "
                   f"{per_window})" if per_window > 1 else "")
        raise AssertionError(f"{where}: the model got {largest} windows in one call, but "
                             f"batch_size={batch_size} allows {allowed}{counted}: run it on chunks")
    if sum(n for n, _ in calls) != len(ids):
        read = sum(n for n, _ in calls)
        raise AssertionError(f"{where}: the model read {read} windows in all, but there are {len(ids)}: "
                             "every window once")


def _check_mean_loss(answers: Any) -> None:
    rng = np.random.default_rng(88)
    lm_ids, lm_targets = rng.integers(0, 11, (7, 2)), rng.integers(0, 11, 7)
    gpt_ids, gpt_targets = rng.integers(0, 9, (5, 4)), rng.integers(0, 9, (5, 4))
    _check_mean_loss_case(answers, "TinyLM", lm_ids, lm_targets, 3, "TinyLM, 7 windows")
    _check_mean_loss_case(answers, "TinyGPT", gpt_ids, gpt_targets, 8, "TinyGPT, 5 windows of 4 targets")
    _check_mean_loss_case(answers, "TinyGPT", gpt_ids, gpt_targets, 3,
                          "TinyGPT with batch_size=3, fewer than one window's 4 targets")
    _check_mean_loss_case(answers, "float32 TinyLM", lm_ids, lm_targets, 1024, "a float32 TinyLM")
    what = "mean_loss(model, ids, targets)"
    report = _measured(answers, "TinyLM", lm_ids, lm_targets, None, what)
    got = common.as_number(report["value"], what)
    if not np.isclose(got, minigrads_mean_loss(_tiny_lm(), lm_ids, lm_targets), rtol=1e-9):
        raise AssertionError(f"{what}, called without batch_size, gives another number; keep the stub's "
                             "default, batch_size=1024")


def check(answers: ModuleType) -> None:
    common.answer_function(answers, "train_step")
    common.answer_function(answers, "mean_loss")
    _check_train_step(answers)
    _check_mean_loss(answers)
