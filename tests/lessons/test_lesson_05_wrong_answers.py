"""Lesson 5's check: the learner's CrossEntropy Function. The reference passes, the stub is "not
attempted" and gives no formula away, and each typical wrong backward gets its own diagnosis."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner

LESSON = runner.get_lesson(5, Path(__file__).resolve().parents[2] / "lessons")
check = runner.load_check(LESSON)


def cross_entropy_with(dz, shift: bool = True, softmax_axis: int = -1):
    """A CrossEntropy whose backward returns dz(p, y, scale, grad, n, classes)."""

    class CrossEntropy(mg.Function):
        @staticmethod
        def forward(ctx, logits, targets, reduction="mean"):
            z = logits - logits.max(axis=-1, keepdims=True) if shift else logits
            e = np.exp(z)
            p = e / e.sum(axis=softmax_axis, keepdims=True)
            ctx.p, ctx.y = p, np.eye(logits.shape[-1])[targets]
            ctx.n, ctx.scale = targets.size, 1.0 / targets.size if reduction == "mean" else 1.0
            log_p = z - np.log(e.sum(axis=-1, keepdims=True))
            picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
            return np.asarray(-picked.sum() * ctx.scale, dtype=logits.dtype)

        @staticmethod
        def backward(ctx, grad):
            return dz(ctx.p, ctx.y, ctx.scale, grad, ctx.n, ctx.p.shape[-1]).astype(ctx.p.dtype), None

    return SimpleNamespace(CrossEntropy=CrossEntropy)


def right(p, y, scale, grad, n, classes):
    return (p - y) * scale * grad


def test_the_reference_and_a_lookalike_pass_and_the_stub_is_not_attempted():
    assert runner.check_answers(LESSON, LESSON.solution_path).passed
    assert runner.check_answers(LESSON, LESSON.exercise_path).status == runner.NOT_ATTEMPTED
    check(cross_entropy_with(right))


def test_the_stub_and_the_lesson_before_the_exercise_give_no_formula_away():
    stub = LESSON.exercise_path.read_text()
    lesson = LESSON.path.read_text()
    before = lesson[: lesson.index("## Build it")]
    for text in (stub, before):
        rule = r"p\s*-\s*y|p_i\s*-\s*y_i|\(p - |p - onehot|y - p"
        assert not re.search(rule, text), "the rule is given away"


def test_sign_flipped():
    with pytest.raises(AssertionError, match="the sign is flipped"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: (y - p) * scale * grad))


def test_forgotten_target_term():
    with pytest.raises(AssertionError, match="its gradient needs one more term, -1"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: p * scale * grad))


def test_only_the_target_logit():
    with pytest.raises(AssertionError, match="only the target's logit has a gradient"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: y * (p - 1) * scale * grad))


def test_mean_forgotten():
    with pytest.raises(AssertionError, match="it is 4 times too large: with reduction='mean'"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: (p - y) * grad))


def test_upstream_gradient_ignored():
    with pytest.raises(AssertionError, match=r"you ignored grad \(here 2.5\)"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: (p - y) * scale))


def test_divided_by_the_classes():
    with pytest.raises(AssertionError, match="the factor in front is 1/C"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: (p - y) / c * grad))


def test_softmax_over_the_positions():
    with pytest.raises(AssertionError, match="the softmax runs over the wrong axis \\(the positions\\)"):
        check(cross_entropy_with(right, softmax_axis=0))


def test_overflow_without_the_shift():
    with pytest.raises(AssertionError, match="exp\\(1000\\) overflows. Subtract each position's largest "
                                             "logit"):
        check(cross_entropy_with(right, shift=False))


def test_a_gradient_per_position_instead_of_per_logit():
    with pytest.raises(AssertionError, match="one number per position"):
        check(cross_entropy_with(lambda p, y, scale, grad, n, c: ((p - y) * scale * grad).sum(axis=-1)))


def keeps(forward_keeps: str):
    """The reference CrossEntropy, but its forward keeps the caller's arrays (`forward_keeps` is
    the line that stores them) and its backward recomputes from them."""

    class CrossEntropy(mg.Function):
        @staticmethod
        def forward(ctx, logits, targets, reduction="mean"):
            exec(forward_keeps)  # e.g. ctx.logits, ctx.targets = logits, targets.copy()
            ctx.scale = 1.0 / targets.size if reduction == "mean" else 1.0
            shifted = logits - logits.max(axis=-1, keepdims=True)
            log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
            picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
            return np.asarray(-picked.sum() * ctx.scale, dtype=logits.dtype)

        @staticmethod
        def backward(ctx, grad):
            z = ctx.logits - ctx.logits.max(axis=-1, keepdims=True)
            p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
            y = np.eye(p.shape[-1])[ctx.targets]
            return ((p - y) * ctx.scale * grad).astype(p.dtype), None

    return SimpleNamespace(CrossEntropy=CrossEntropy)


@pytest.mark.parametrize("kept, which", [
    ("ctx.logits, ctx.targets = logits, targets.copy()", "logits"),
    ("ctx.logits, ctx.targets = logits.copy(), targets", "targets"),
    ("ctx.logits, ctx.targets = logits, targets", "logits and targets"),
])
def test_an_op_that_keeps_the_callers_arrays_is_named(kept, which):
    expected = f"wrote the next batch into the {which} arrays it had passed, and your backward used the new"
    with pytest.raises(AssertionError, match=expected):
        check(keeps(kept))
    check(keeps("ctx.logits, ctx.targets = logits.copy(), targets.copy()"))  # its own copies: right


def test_a_loss_over_the_wrong_axis_is_named_not_a_factor_of_zero():
    class CrossEntropy(mg.Function):
        @staticmethod
        def forward(ctx, logits, targets, reduction="mean"):
            log_p = logits - np.log(np.exp(logits).sum(axis=0, keepdims=True))  # over the positions
            picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
            count = targets.size if reduction == "mean" else 1
            return np.asarray(-picked.sum() / count, dtype=logits.dtype)

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("not reached: the forward is refused first")

    with pytest.raises(AssertionError) as refused:
        check(SimpleNamespace(CrossEntropy=CrossEntropy))
    message = str(refused.value)
    assert "the softmax runs over the wrong axis (the positions) (along an axis of length 1 every " \
           "probability is 1, so the loss comes out 0)" in message
    assert "factor" not in message


def test_a_backward_that_writes_into_what_forward_saved():
    def subtracts_from_the_saved_probabilities(p, y, scale, grad, n, classes):
        p -= y  # ctx.p itself: a second backward subtracts y again
        return p * scale * grad

    with pytest.raises(AssertionError, match="run a second time on the same forward, CrossEntropy[.]backward "
                                             "returned a different gradient: it wrote into what forward"):
        check(cross_entropy_with(subtracts_from_the_saved_probabilities))


def test_a_backward_that_writes_into_the_gradient_it_is_given():
    def scales_grad_in_place(p, y, scale, grad, n, classes):
        grad *= scale  # the caller's array
        return (p - y) * grad

    with pytest.raises(AssertionError, match="CrossEntropy[.]backward wrote into grad, the gradient it was"):
        check(cross_entropy_with(scales_grad_in_place))
