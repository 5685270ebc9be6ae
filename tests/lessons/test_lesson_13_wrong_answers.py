"""Lesson 13's check: the references pass, the stub is "not attempted", and the usual slips in
the analogy test and in skip-gram's loss and backward are each named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner

ROOT = Path(__file__).resolve().parents[2]
check = runner.load_check(runner.get_lesson(13, ROOT / "lessons"))
SOLUTION = runner.load_module(ROOT / "lessons" / "solutions" / "13_analogy_arithmetic.py")


def answers(three_cos_add=SOLUTION.three_cos_add, loss=SOLUTION.NegativeSamplingLoss):
    return SimpleNamespace(three_cos_add=three_cos_add, NegativeSamplingLoss=loss)


def test_the_references_pass():
    check(answers())


def test_levy_and_goldbergs_sum_of_cosines_passes_too():
    def by_cosines(table, questions):
        norms = np.linalg.norm(table, axis=1)
        cos = (table @ table.T) / np.maximum(np.outer(norms, norms), 1e-300)
        answers_, ranks = [], []
        for a, b, c, d in questions:
            scores = cos[:, b] - cos[:, a] + cos[:, c]
            scores[[a, b, c]] = -np.inf
            answers_.append(int(np.argmax(scores)))
            ranks.append(1 + int((scores > scores[d]).sum()))
        return np.array(answers_), np.array(ranks)
    check(answers(three_cos_add=by_cosines))


def test_the_stub_is_not_attempted():
    stub = runner.load_module(ROOT / "lessons" / "exercises" / "13_analogy_arithmetic.py")
    with pytest.raises(NotImplementedError):
        check(stub)


# ---- three_cos_add ------------------------------------------------------------------------------

def scored(unit_rows=True, unit_query=True, exclude=True, arrow=1, strict=True, start=1, guard=True):
    def three_cos_add(table, questions):
        norms = np.linalg.norm(table, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):  # the unguarded slip divides by 0
            unit = table / (np.where(norms > 0, norms, 1.0) if guard else norms)
        query_rows = unit if unit_query else table
        candidates = unit if unit_rows else table
        a, b, c, d = questions.T
        scores = (arrow * (query_rows[b] - query_rows[a]) + query_rows[c]) @ candidates.T
        n = np.arange(len(questions))
        if exclude:
            for q in (a, b, c):
                scores[n, q] = -np.inf
        above = scores > scores[n, d][:, None] if strict else scores >= scores[n, d][:, None]
        return scores.argmax(axis=1), start + above.sum(axis=1)
    return three_cos_add


@pytest.mark.parametrize("slip, message", [
    (dict(exclude=False), r"the query words a, b and c are not allowed as answers"),
    (dict(unit_rows=False, unit_query=False), r"largest dot product with b - a \+ c of the raw rows"),
    (dict(unit_rows=False), r"the candidate rows were not scaled to length 1"),
    (dict(arrow=-1), r"the arrow points the wrong way"),
    (dict(start=0), r"the ranks start at 0"),
    (dict(strict=False), r"d was counted among the words that score higher than d"),
])
def test_an_analogy_slip_is_named(slip, message):
    with pytest.raises(AssertionError, match=message):
        check(answers(three_cos_add=scored(**slip)))


def test_an_unguarded_zero_row_is_caught():
    with pytest.raises(AssertionError, match=r"a table whose row 5 is all zero"):
        check(answers(three_cos_add=scored(guard=False)))


def test_normalising_the_callers_table_in_place_is_named():
    def in_place(table, questions):
        table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
        return SOLUTION.three_cos_add(table, questions)
    with pytest.raises(AssertionError, match=r"changed its argument table in place"):
        check(answers(three_cos_add=in_place))


def test_answers_only_are_refused():
    with pytest.raises(AssertionError, match=r"must return a pair \(answers, ranks\)"):
        check(answers(three_cos_add=lambda table, questions: SOLUTION.three_cos_add(table, questions)[0]))


# ---- NegativeSamplingLoss -----------------------------------------------------------------------

def log_sigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def loss_with(noise_sign=-1, slope_of=lambda z: -1.0 / (1.0 + np.exp(np.clip(z, -500, 500))), mean=True,
              use_grad=True, copy=True, naive_log=False, zero_u=False, cast=None):
    class NegativeSamplingLoss(mg.Function):
        @staticmethod
        def forward(ctx, v, u):
            sign = np.ones(u.shape[1], dtype=v.dtype)
            sign[1:] = -1
            z = np.einsum("bkd,bd->bk", u, v) * sign
            ctx.v, ctx.u = (v.copy(), u.copy()) if copy else (v, u)
            ctx.sign = np.ones(u.shape[1]) if noise_sign == 1 else sign
            ctx.slope, ctx.B = slope_of(z), (len(v) if mean else 1)
            value = -np.log(1 / (1 + np.exp(-z))).sum() if naive_log else -log_sigmoid(z).sum()
            return np.asarray(value / len(v), dtype=v.dtype)

        @staticmethod
        def backward(ctx, grad):
            dz = ctx.slope * ctx.sign * ((grad if use_grad else 1.0) / ctx.B)
            dv = np.einsum("bk,bkd->bd", dz, ctx.u)
            du = np.zeros_like(ctx.u) if zero_u else dz[:, :, None] * ctx.v[:, None, :]
            return dv.astype(cast or ctx.v.dtype), du.astype(cast or ctx.u.dtype)
    return NegativeSamplingLoss


def test_the_helper_right_loss_passes():
    check(answers(loss=loss_with()))


@pytest.mark.parametrize("slip, message", [
    (dict(noise_sign=1), r"the noise words' terms have the wrong sign"),
    (dict(slope_of=lambda z: 1.0 / (1.0 + np.exp(-z))), r"d\(-log s\(z\)\)/dz is -s\(-z\)"),
    (dict(mean=False), r"the mean over the B = 3 pairs divides the gradient by B too"),
    (dict(use_grad=False), r"you ignored grad \(here 2.5\)"),
    (dict(zero_u=True), r"the output rows u got no gradient"),
    (dict(copy=False), r"forward must keep its own copies"),
    (dict(naive_log=True), r"scores in the hundreds: .*log\(sigmoid\(z\)\) underflows"),
    (dict(cast=np.float64), r"float32 rows: dL/dv is float64 for float32 rows"),
])
def test_a_loss_slip_is_named(slip, message):
    with pytest.raises(AssertionError, match=message):
        check(answers(loss=loss_with(**slip)))


def test_a_loss_summed_over_the_pairs_is_named():
    class Summed(loss_with()):
        @staticmethod
        def forward(ctx, v, u):
            return loss_with().forward(ctx, v, u) * len(v)
    with pytest.raises(AssertionError, match=r"that is the sum over the 3 pairs; the loss is their mean"):
        check(answers(loss=Summed))


def test_a_backward_that_writes_into_its_grad_is_named():
    class IntoGrad(loss_with()):
        @staticmethod
        def backward(ctx, grad):
            grad /= ctx.B  # the mean's 1/B written into the array the engine gave
            dz = ctx.slope * ctx.sign * grad
            return np.einsum("bk,bkd->bd", dz, ctx.u), dz[:, :, None] * ctx.v[:, None, :]
    with pytest.raises(AssertionError, match=r"NegativeSamplingLoss.backward wrote into grad"):
        check(answers(loss=IntoGrad))


def test_a_backward_that_changes_what_forward_saved_is_named():
    class IntoCtx(loss_with()):
        @staticmethod
        def backward(ctx, grad):
            ctx.slope *= ctx.sign * grad / ctx.B  # the saved slopes turned into dL/dz in place
            return np.einsum("bk,bkd->bd", ctx.slope, ctx.u), ctx.slope[:, :, None] * ctx.v[:, None, :]
    with pytest.raises(AssertionError, match=r"run a second time on the same forward, NegativeSamplingLoss"):
        check(answers(loss=IntoCtx))


def test_a_function_that_is_not_a_minigrad_function_is_refused():
    with pytest.raises(AssertionError, match=r"NegativeSamplingLoss must be a class that subclasses"):
        check(answers(loss=lambda v, u: 0.0))
