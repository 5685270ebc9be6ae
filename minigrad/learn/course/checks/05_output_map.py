"""Check for lesson 5: the learner's CrossEntropy Function, forward and backward.

The loss must match minigrad's, stay finite for large logits, and its backward must agree with
minigrad's backward (itself confirmed by finite differences) and with gradcheck; the typical
wrong backwards are recomputed and named.
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Context, Tensor, tensor
from minigrad.learn.course.learner import LearnerRaised, probe, run
from minigrad.nn import functional as F

from . import _common as common

# (targets, C, reduction, upstream G): one position first, so sign and target mistakes show in
# the simplest setting; then batches, where 1/N, the reduction and G show.
CASES = [
    (np.array([2]), 5, "mean", 1.0),
    (np.array([1, 4, 1, 0]), 6, "mean", 1.0),
    (np.array([[0, 3, 3], [2, 1, 0]]), 4, "mean", 2.5),
    (np.array([1, 2, 0]), 3, "sum", -0.5),
]


def _softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _reference_loss(logits: Tensor, targets: np.ndarray, reduction: str = "mean") -> Tensor:
    """minigrad's loss for the exercise's layout, the classes on the last axis: every position
    one row (F.cross_entropy, as PyTorch's, reads the classes of a 3-d input on axis 1)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), np.reshape(targets, -1), reduction=reduction)


# ---- in the learner's process: their CrossEntropy on the check's inputs ------------------------

_KEPT: dict[str, tuple[Context, np.ndarray, np.ndarray]] = {}  # a forward's ctx and the caller's arrays


@probe
def loss_forward(answers, key: str, logits: np.ndarray, targets: np.ndarray, reduction: str) -> Any:
    """The learner's CrossEntropy.forward; its ctx and the caller's two arrays kept under `key`."""
    ctx = Context()
    ctx.needs_input_grad = (True, False)
    with np.errstate(all="ignore"):
        loss = answers.CrossEntropy.forward(ctx, logits, targets, reduction=reduction)
    _KEPT[key] = (ctx, logits, targets)
    return loss


@probe
def loss_backward(answers, key: str, upstream: np.ndarray, next_logits: np.ndarray | None = None,
                  next_targets: np.ndarray | None = None) -> Any:
    """The learner's CrossEntropy.backward for the forward kept under `key`; the caller may first
    write new values into the arrays it gave the forward (`next_logits`, `next_targets`)."""
    ctx, logits, targets = _KEPT.pop(key)
    if next_logits is not None:
        logits[...] = next_logits
    if next_targets is not None:
        targets[...] = next_targets
    with np.errstate(all="ignore"):
        return answers.CrossEntropy.backward(ctx, upstream)


@probe
def loss_backward_twice(answers, key: str, upstream: np.ndarray) -> tuple:
    """The learner's CrossEntropy.backward run twice on the forward kept under `key`, each time
    on its own copy of `upstream`: (first result, second result, whether the first wrote into its grad)."""
    ctx, _, _ = _KEPT.pop(key)
    given = upstream.copy()
    with np.errstate(all="ignore"):
        first = copy.deepcopy(answers.CrossEntropy.backward(ctx, given))
        second = answers.CrossEntropy.backward(ctx, upstream.copy())
    return first, second, not np.array_equal(given, upstream)


@probe
def loss_through_the_engine(answers, logits: np.ndarray, targets: np.ndarray) -> tuple:
    """(loss, dL/dlogits) of the learner's CrossEntropy run by the engine, as a model runs it."""
    z = tensor(logits, requires_grad=True, name="logits")
    loss = answers.CrossEntropy.apply(z, targets)
    loss.backward()
    return loss.data, z.grad


# ---- here: the check --------------------------------------------------------------------------

def _forward(answers: Any, logits: np.ndarray, targets: np.ndarray, reduction: str) -> str:
    """Run the learner's forward (kept in their process for the backward); check the loss."""
    loss = run(answers, loss_forward, "loss", logits.copy(), targets.copy(), reduction)
    what = f"CrossEntropy.forward (reduction={reduction!r})"
    got = common.as_array(loss, what)
    if got.shape != ():
        divide = " and divide by their count" if reduction == "mean" else ""
        raise AssertionError(f"{what} returned shape {got.shape}: the loss is one number, a 0-d array "
                             f"(sum the positions{divide})")
    expected = _reference_loss(tensor(logits.astype(np.float64)), targets, reduction).item()
    if not common.close(got, expected):
        common.assert_number(got, expected, what, _loss_mistakes(logits, targets, reduction))
    if np.asarray(loss).dtype != logits.dtype:
        raise AssertionError(f"{what} returned a {np.asarray(loss).dtype} loss for {logits.dtype} logits; "
                             "return it in the logits' dtype")
    return "loss"


def _loss_mistakes(logits: np.ndarray, targets: np.ndarray, reduction: str) -> list[tuple[float, str]]:
    """The losses the usual forward slips give, each with its diagnosis."""
    def loss(p: np.ndarray, divide: bool) -> float:
        picked = -np.log(np.take_along_axis(p, targets[..., None], axis=-1)).sum()
        return float(picked / targets.size if divide else picked)

    mean = reduction == "mean"
    mistakes = []
    if mean:
        mistakes.append((loss(_softmax(logits), False), f"that is the sum over the {targets.size} positions; "
                                                        "reduction='mean' divides it by their count"))
    for axis in range(logits.ndim - 1):  # every axis but the classes'
        positions = "the positions" if logits.ndim == 2 else f"axis {axis}, not the classes"
        one = " (along an axis of length 1 every probability is 1, so the loss comes out 0)" \
            if logits.shape[axis] == 1 else ""
        mistakes.append((loss(_softmax(logits, axis=axis), mean),
                         f"the softmax runs over the wrong axis ({positions}){one}: the probabilities are "
                         "over the classes, the last axis (axis=-1)"))
    return mistakes


def _backward(answers: Any, key: str, upstream: float, shape: tuple[int, ...],
              **overwrite: Any) -> np.ndarray:
    grads = run(answers, loss_backward, key, np.asarray(upstream), **overwrite)
    gradient = common.float_input_gradient(grads, "CrossEntropy", "dL/dlogits", "the targets", "class ids")
    got = common.as_array(gradient, "dL/dlogits")
    common.expect_shape(got, shape, "dL/dlogits", known={
        shape[:-1]: "one number per position: the loss depends on every logit, so every logit needs its own "
                    "gradient, shaped like the logits",
    })
    return got


def _mistakes(logits: np.ndarray, targets: np.ndarray, reduction: str, upstream: float,
              expected: np.ndarray) -> list[tuple[np.ndarray, str]]:
    P = _softmax(logits)
    Y = np.eye(logits.shape[-1])[targets]
    n = targets.size
    scale = upstream / n if reduction == "mean" else upstream
    mistakes = [
        (-expected, "the sign is flipped: raising the target's logit must lower the loss, so its gradient is "
                    "negative, and every other logit's positive"),
        (P * scale, "every logit gets its probability p_i, but the target's logit also appears in the "
                    "loss by itself (-z_target): its gradient needs one more term, -1"),
        (-Y * scale, "only the target's logit has a gradient (-1), but the log of the sum of exps in the "
                     "loss depends on every logit: each logit also gets its share, its probability"),
        (Y * (P - 1) * scale, "only the target's logit has a gradient, but every logit sits in the sum of "
                              "exps: a wrong class's logit gets a gradient of its probability too"),
        ((P - Y) * upstream / logits.shape[-1],
         "the factor in front is 1/C (the number of classes) where it should be 1/N, the "
         "number of positions"),
    ]
    if upstream != 1.0:
        unscaled = (P - Y) * (1 / n if reduction == "mean" else 1.0)
        mistakes.append((unscaled, f"you ignored grad (here {upstream:g}), the gradient arriving at the "
                                   "loss: the chain rule multiplies your dL/dlogits by it"))
    if reduction == "mean" and n > 1:
        mistakes.append(((P - Y) * upstream, f"it is {n} times too large: with reduction='mean' the loss is "
                                             f"divided by the N = {n} positions, and so is its gradient"))
    if reduction == "sum":
        mistakes.append(((P - Y) * upstream / n, "you divided by the number of positions, but "
                                                 "reduction='sum' adds them up without dividing"))
    if logits.ndim > 1:
        wrong_axis = _softmax(logits, axis=0)
        mistakes.append(((wrong_axis - Y) * scale, "the softmax runs over the wrong axis (the positions): "
                                                   "the probabilities are over the classes, the last axis "
                                                   "(axis=-1)"))
    return mistakes


def _check_case(answers: Any, targets: np.ndarray, classes: int, reduction: str, upstream: float,
                rng: np.random.Generator) -> None:
    logits = rng.standard_normal((*targets.shape, classes)) * 2.0
    key = _forward(answers, logits, targets, reduction)
    got = _backward(answers, key, upstream, logits.shape)
    expected = upstream * common.reference_gradient(
        lambda z: _reference_loss(z, targets, reduction), [logits])
    common.assert_matches(got, expected, f"dL/dlogits (reduction={reduction!r}, grad={upstream:g})",
                          _mistakes(logits, targets, reduction, upstream, expected), by_rows=False)


def _check_large_logits(answers: Any) -> None:
    logits = np.array([[1000.0, 0.0, -5.0], [-800.0, 20.0, 30.0]])
    targets = np.array([1, 2])
    key = _forward(answers, logits, targets, "mean")
    got = _backward(answers, key, 1.0, logits.shape)
    expected = common.reference_gradient(lambda z: _reference_loss(z, targets), [logits])
    common.assert_matches(got, expected, "dL/dlogits for logits in the hundreds", by_rows=False)


def _check_kept_arrays(answers: Any, rng: np.random.Generator) -> None:
    """After forward the caller writes the next batch into the logits and targets arrays it
    passed (a training loop reusing its buffers): the backward must still give the gradient of
    the loss forward computed."""
    targets, classes = np.array([2, 0, 1]), 4
    logits = rng.standard_normal((targets.size, classes))
    next_logits, next_targets = rng.standard_normal(logits.shape), (targets + 1) % classes
    key = _forward(answers, logits, targets, "mean")
    got = _backward(answers, key, 1.0, logits.shape, next_logits=next_logits, next_targets=next_targets)
    reference = {(a, b): common.reference_gradient(lambda z, t=t: _reference_loss(z, t), [z0])
                 for a, z0 in (("kept", logits), ("next", next_logits))
                 for b, t in (("kept", targets), ("next", next_targets))}
    if common.close(got, reference["kept", "kept"]):
        return
    changed = {"logits": ("next", "kept"), "targets": ("kept", "next"),
               "logits and targets": ("next", "next")}
    kept = [name for name, which in changed.items() if common.close(got, reference[which])]
    if kept:
        raise AssertionError(
            f"after forward, the caller wrote the next batch into the {kept[0]} arrays it had passed, and "
            "your backward used the new values: forward must keep its own copy of what backward needs (the "
            "probabilities it computed, targets.copy()), not the caller's arrays")
    common.assert_matches(got, reference["kept", "kept"],
                          "dL/dlogits (the caller's arrays changed after forward)", by_rows=False)


def _check_float32(answers: Any, rng: np.random.Generator) -> None:
    logits = rng.standard_normal((3, 4)).astype(np.float32)
    targets = np.array([0, 3, 1])
    key = _forward(answers, logits, targets, "mean")
    grads = run(answers, loss_backward, key, np.asarray(1.0, dtype=np.float32))
    grad = common.float_input_gradient(grads, "CrossEntropy", "dL/dlogits", "the targets", "class ids")
    if np.asarray(grad).dtype != np.float32:
        raise AssertionError(f"for float32 logits your backward returned {np.asarray(grad).dtype}; keep the "
                             "gradient in the logits' dtype (the engine refuses a mismatch in a model)")


def _check_backward_leaves_its_inputs(answers: Any, rng: np.random.Generator) -> None:
    """Neither the gradient backward is given nor what forward saved is written into."""
    targets, classes = np.array([1, 0, 2]), 3
    logits = rng.standard_normal((targets.size, classes))
    key = _forward(answers, logits, targets, "mean")
    *runs, wrote = run(answers, loss_backward_twice, key, np.asarray(2.0))
    one, two = (common.as_array(common.float_input_gradient(grads, "CrossEntropy", "dL/dlogits",
                                                            "the targets", "class ids"), "dL/dlogits")
                for grads in runs)
    common.assert_backward_leaves_its_inputs("CrossEntropy", wrote, one, two)


def _check_through_the_engine(answers: Any, rng: np.random.Generator) -> None:
    """As the lesson will run it: apply and backward in the engine, against minigrad's gradient,
    which central differences confirm."""
    targets = np.array([[1, 0], [2, 2]])
    logits = rng.standard_normal((2, 2, 3))
    expected = common.reference_gradient(lambda z: _reference_loss(z, targets), [logits])
    loss, grad = run(answers, loss_through_the_engine, logits, targets)
    report = common.finite_difference_report("logits", grad, expected)
    if report:
        raise AssertionError(f"your CrossEntropy disagrees with finite differences:\n{report}")


def _overflow_message(answers: Any) -> str | None:
    """Why the large-logits case fails with NaN or inf, when it does."""
    logits = np.array([[1000.0, 0.0, -5.0]])
    try:
        loss = run(answers, loss_forward, "overflow", logits, np.array([1]), "mean")
        grad = run(answers, loss_backward, "overflow", np.asarray(1.0))[0]
        finite = all(np.all(np.isfinite(np.asarray(x, dtype=float))) for x in (loss, grad))
    except (LearnerRaised, TypeError, ValueError, IndexError):
        return None
    if finite:
        return None
    return ("with a logit of 1000 your loss or gradient is NaN or inf: exp(1000) overflows. Subtract each "
            "position's largest logit before exp (softmax does not change when every logit moves by the same "
            "amount)")


def check(answers: ModuleType) -> None:
    common.answer_function_class(answers, "CrossEntropy")
    rng = np.random.default_rng(55)
    for targets, classes, reduction, upstream in CASES:
        _check_case(answers, targets, classes, reduction, upstream, rng)
    overflow = _overflow_message(answers)
    if overflow:
        raise AssertionError(overflow)
    _check_large_logits(answers)
    _check_kept_arrays(answers, rng)
    _check_float32(answers, rng)
    _check_backward_leaves_its_inputs(answers, rng)
    _check_through_the_engine(answers, rng)
