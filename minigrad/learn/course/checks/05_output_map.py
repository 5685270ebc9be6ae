"""Check for lesson 5: the learner's CrossEntropy Function, forward and backward.

The loss must match minigrad's, stay finite for large logits, and its backward must agree with
minigrad's backward (itself confirmed by finite differences) and with gradcheck; the typical
wrong backwards are recomputed and named.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from minigrad.engine import Context, Tensor, tensor
from minigrad.nn import functional as F
from minigrad.tools.gradcheck import gradcheck

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


def _forward(cross_entropy: type, logits: np.ndarray, targets: np.ndarray, reduction: str) -> Context:
    ctx = Context()
    ctx.needs_input_grad = (True, False)
    with np.errstate(all="ignore"):
        loss = cross_entropy.forward(ctx, logits.copy(), targets.copy(), reduction=reduction)
    what = f"CrossEntropy.forward (reduction={reduction!r})"
    got = common.as_array(loss, what)
    if got.shape != ():
        divide = " and divide by their count" if reduction == "mean" else ""
        raise AssertionError(f"{what} returned shape {got.shape}: the loss is one number, a 0-d array "
                             f"(sum the positions{divide})")
    expected = _reference_loss(tensor(logits.astype(np.float64)), targets, reduction).item()
    if not common.close(got, expected):
        per_position = -np.log(np.take_along_axis(_softmax(logits), targets[..., None], axis=-1)).sum()
        if reduction == "mean" and common.close(got, per_position):
            raise AssertionError(f"{what} returned the sum over the {targets.size} positions; "
                                 "reduction='mean' divides it by their count")
        common.assert_number(got, expected, what)
    if np.asarray(loss).dtype != logits.dtype:
        raise AssertionError(f"{what} returned a {np.asarray(loss).dtype} loss for {logits.dtype} logits; "
                             "return it in the logits' dtype")
    return ctx


def _backward(cross_entropy: type, ctx: Context, upstream: float, shape: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        grads = cross_entropy.backward(ctx, np.asarray(upstream))
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


def _check_case(cross_entropy: type, targets: np.ndarray, classes: int, reduction: str, upstream: float,
                rng: np.random.Generator) -> None:
    logits = rng.standard_normal((*targets.shape, classes)) * 2.0
    ctx = _forward(cross_entropy, logits, targets, reduction)
    got = _backward(cross_entropy, ctx, upstream, logits.shape)
    expected = upstream * common.reference_gradient(
        lambda z: _reference_loss(z, targets, reduction), [logits])
    common.assert_matches(got, expected, f"dL/dlogits (reduction={reduction!r}, grad={upstream:g})",
                          _mistakes(logits, targets, reduction, upstream, expected), by_rows=False)


def _check_large_logits(cross_entropy: type) -> None:
    logits = np.array([[1000.0, 0.0, -5.0], [-800.0, 20.0, 30.0]])
    targets = np.array([1, 2])
    ctx = _forward(cross_entropy, logits, targets, "mean")
    got = _backward(cross_entropy, ctx, 1.0, logits.shape)
    expected = common.reference_gradient(lambda z: _reference_loss(z, targets), [logits])
    common.assert_matches(got, expected, "dL/dlogits for logits in the hundreds", by_rows=False)


def _check_float32(cross_entropy: type, rng: np.random.Generator) -> None:
    logits = rng.standard_normal((3, 4)).astype(np.float32)
    targets = np.array([0, 3, 1])
    ctx = _forward(cross_entropy, logits, targets, "mean")
    with np.errstate(all="ignore"):
        grad = cross_entropy.backward(ctx, np.asarray(1.0, dtype=np.float32))[0]
    if np.asarray(grad).dtype != np.float32:
        raise AssertionError(f"for float32 logits your backward returned {np.asarray(grad).dtype}; keep the "
                             "gradient in the logits' dtype (the engine refuses a mismatch in a model)")


def _check_finite_differences(cross_entropy: type, rng: np.random.Generator) -> None:
    targets = np.array([[1, 0], [2, 2]])
    logits = tensor(rng.standard_normal((2, 2, 3)), requires_grad=True, name="logits")
    report = gradcheck(lambda z: cross_entropy.apply(z, targets), [logits], raise_exception=False)
    if not report.ok:
        raise AssertionError(f"your CrossEntropy disagrees with finite differences:\n{report}")


def _overflow_message(cross_entropy: type) -> str | None:
    """Why the large-logits case fails with NaN or inf, when it does."""
    logits = np.array([[1000.0, 0.0, -5.0]])
    ctx = Context()
    with np.errstate(all="ignore"):
        try:
            loss = cross_entropy.forward(ctx, logits, np.array([1]), reduction="mean")
            grad = cross_entropy.backward(ctx, np.asarray(1.0))[0]
        except Exception:
            return None
    if np.all(np.isfinite(loss)) and np.all(np.isfinite(grad)):
        return None
    return ("with a logit of 1000 your loss or gradient is NaN or inf: exp(1000) overflows. Subtract each "
            "position's largest logit before exp (softmax does not change when every logit moves by the same "
            "amount)")


def check(answers: ModuleType) -> None:
    cross_entropy = common.answer_function_class(answers, "CrossEntropy")
    rng = np.random.default_rng(55)
    for targets, classes, reduction, upstream in CASES:
        _check_case(cross_entropy, targets, classes, reduction, upstream, rng)
    overflow = _overflow_message(cross_entropy)
    if overflow:
        raise AssertionError(overflow)
    _check_large_logits(cross_entropy)
    _check_float32(cross_entropy, rng)
    _check_finite_differences(cross_entropy, rng)

