"""Check for lesson 13: three_cos_add(table, questions), the 3CosAdd answers and the rank of the
right word; and NegativeSamplingLoss, skip-gram's loss on the rows a batch reads, as a Function.

The analogy reference takes another route than the usual sum of unit vectors: for each
candidate x it adds the three cosines cos(x, b) - cos(x, a) + cos(x, c), each from a dot product
and two norms, which ranks the candidates exactly as cos(x, unit(b) - unit(a) + unit(c)) does.
The loss is compared with minigrad's own (`minigrad.models.skipgram.loss_on_rows`, built from
its ops) and its backward with minigrad's backward, itself confirmed by central differences;
then the learner's Function runs inside the engine, behind two lookups with repeated ids, and
is gradchecked there.
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import Context, tensor
from minigrad.learn.course.learner import probe, run
from minigrad.models.skipgram import loss_on_rows, negative_sampling_loss

from . import _common as common

# ---- three_cos_add ------------------------------------------------------------------------------


def _tables() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Rows of very unequal lengths (so scaling matters), each table asked several questions; one
    table with an all-zero row (a word never learned); one in float32, as a model's."""
    cases: list[tuple[str, np.ndarray, np.ndarray]] = []
    for seed in (11, 12):
        rng = np.random.default_rng(seed)
        table = rng.standard_normal((9, 3)) * rng.uniform(0.2, 4.0, (9, 1))
        abc = np.array([(0, 1, 2), (3, 4, 5), (6, 7, 8), (2, 5, 8), (1, 0, 4)])
        d = np.array([_answer(table, *q) for q in abc])  # the right word: its rank is 1
        d[1::2] = (abc[1::2, 2] + 1) % 9  # other questions: a word ranked lower down
        clash = np.array([word in question for word, question in zip(d, abc)])
        d[clash] = [next(x for x in range(9) if x not in q) for q in abc[clash]]
        cases.append((f"a table of shape {table.shape}", table, np.column_stack([abc, d])))
    rng = np.random.default_rng(13)
    unlearned = rng.standard_normal((8, 4))
    unlearned[5] = 0.0
    cases.append(("a table whose row 5 is all zero", unlearned,
                  np.array([(0, 1, 2, 3), (2, 3, 4, 5), (1, 6, 7, 0), (4, 2, 6, 1)])))
    model_like = (rng.standard_normal((10, 6)) * rng.uniform(0.5, 2.0, (10, 1))).astype(np.float32)
    cases.append(("a float32 table", model_like, np.array([(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 0, 1)])))
    return cases


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    lengths = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / lengths) if lengths else 0.0


def _scores(table: np.ndarray, a: int, b: int, c: int) -> list[float]:
    table = table.astype(np.float64)
    return [_cos(x, table[b]) - _cos(x, table[a]) + _cos(x, table[c]) for x in table]


def _answer(table: np.ndarray, a: int, b: int, c: int) -> int:
    scores = _scores(table, a, b, c)
    return max((x for x in range(len(table)) if x not in (a, b, c)), key=lambda x: scores[x])


def _rank(table: np.ndarray, a: int, b: int, c: int, d: int) -> int:
    scores = _scores(table, a, b, c)
    return 1 + sum(1 for x in range(len(table)) if x not in (a, b, c) and scores[x] > scores[d])


def _slips(table: np.ndarray, questions: np.ndarray) -> list[tuple[tuple[np.ndarray, np.ndarray], str]]:
    """(answers, ranks) that the usual slips give, with what to say."""
    table = table.astype(np.float64)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = table / np.where(norms > 0, norms, 1.0)
    a, b, c, d = questions.T
    n = np.arange(len(questions))

    def answered(scores: np.ndarray, exclude: bool = True, strict: bool = True) -> tuple:
        scores = scores.copy()
        if exclude:
            for query in (a, b, c):
                scores[n, query] = -np.inf
        above = scores > scores[n, d][:, None] if strict else scores >= scores[n, d][:, None]
        return scores.argmax(axis=1), 1 + above.sum(axis=1)

    right = (unit[b] - unit[a] + unit[c]) @ unit.T
    kept = answered(right, exclude=False)
    return [
        (kept, "the query words a, b and c are not allowed as answers: leave them out (one of them "
               "usually scores highest), and do not count them when ranking d"),
        (answered((table[b] - table[a] + table[c]) @ table.T),
         "that is the largest dot product with b - a + c of the raw rows: scale every row to length 1 "
         "first (a long row would win on its length)"),
        (answered((unit[b] - unit[a] + unit[c]) @ table.T),
         "the candidate rows were not scaled to length 1 (only the query rows were): a long row wins on "
         "its length"),
        (answered((unit[a] - unit[b] + unit[c]) @ unit.T),
         "the arrow points the wrong way: a : b :: c : ? adds b - a to c, not a - b"),
        ((answered(right)[0], answered(right)[1] - 1),
         "the ranks start at 0; the rank of a right answer is 1"),
        (answered(right, strict=False), "d was counted among the words that score higher than d (>= instead "
                                        "of >): a right answer has rank 1"),
    ]


def _answered(three_cos_add: Any, what: str, table: np.ndarray, questions: np.ndarray) -> list[np.ndarray]:
    """The learner's (answers, ranks), each checked to be (n,)."""
    hint = "table (V, d), questions (n, 4) ids a, b, c, d; return (answers (n,), ranks (n,))"
    result = common.call_keeping_inputs(three_cos_add, table, questions, hint=hint)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise AssertionError(f"{what} must return a pair (answers, ranks), got {type(result).__name__}")
    got = [common.as_array(value, f"{what}: the {name}") for value, name in zip(result, ("answers", "ranks"))]
    for value, name in zip(got, ("answers", "ranks")):
        common.expect_shape(value, (len(questions),), f"{what}: the {name}")
    return got


def _check_analogies(three_cos_add: Any) -> None:
    for where, table, questions in _tables():
        what = f"three_cos_add({where}, {len(questions)} questions)"
        got = _answered(three_cos_add, what, table, questions)
        expected = (np.array([_answer(table, *q[:3]) for q in questions]),
                    np.array([_rank(table, *q) for q in questions]))
        if all(np.array_equal(g, e) for g, e in zip(got, expected)):
            continue
        for wrong, diagnosis in _slips(table, questions):
            if all(np.array_equal(g, w) for g, w in zip(got, wrong)):
                raise AssertionError(f"{what}: {diagnosis}")
        k = int(np.flatnonzero((got[0] != expected[0]) | (got[1] != expected[1]))[0])
        raise AssertionError(f"{what}: question {k} ({', '.join(map(str, questions[k]))}): expected answer "
                             f"{expected[0][k]} with d at rank {expected[1][k]}, got {got[0][k]:.0f} and "
                             f"{got[1][k]:.0f}; score each word x other than a, b and c by cos(x, b) - "
                             "cos(x, a) + cos(x, c), an all-zero row by 0")


# ---- NegativeSamplingLoss -------------------------------------------------------------------------

# (B, K, d): one pair and one noise word; a batch; no noise word at all
SHAPES = [(1, 1, 2), (3, 2, 4), (2, 0, 3)]


def _loss_mistakes(v: np.ndarray, u: np.ndarray, upstream: float) -> list[tuple[tuple, str]]:
    """(dv, du) the usual slips give."""
    B = len(v)
    sign = np.ones(u.shape[1])
    sign[1:] = -1
    z = np.einsum("bkd,bd->bk", u, v) * sign
    slope = -1.0 / (1.0 + np.exp(z))  # d(-log s(z))/dz = -s(-z)

    def grads(dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.einsum("bk,bkd->bd", dz, u), dz[:, :, None] * v[:, None, :]

    right = slope * sign * upstream / B
    return [
        (grads(slope * upstream / B), "the noise words' terms have the wrong sign: their score enters the "
                                      "loss as -u_k . v (log s(-u_k . v)), so the chain rule brings a "
                                      "factor -1"),
        (grads(-slope * sign * upstream / B), "the sign is flipped everywhere: raising the context's score "
                                               "must lower the loss"),
        (grads(1.0 / (1.0 + np.exp(-z)) * sign * upstream / B),
         "d(-log s(z))/dz is -s(-z) = s(z) - 1, not s(z)"),
        (grads(slope * sign * upstream), f"the mean over the B = {B} pairs divides the gradient by B too"),
        (grads(slope * sign / B), f"you ignored grad (here {upstream:g}): the chain rule multiplies by it"),
        ((grads(right)[0], np.zeros_like(u)), "the output rows u got no gradient: each score u_k . v depends "
                                              "on u_k as well as on v"),
        ((np.zeros_like(v), grads(right)[1]), "the centre rows v got no gradient: each score u_k . v depends "
                                              "on v as well as on u_k"),
    ]


# ---- in the learner's process: their NegativeSamplingLoss on the check's inputs ---------------

_KEPT: dict[str, tuple[Context, np.ndarray, np.ndarray]] = {}  # a forward's ctx and the caller's arrays


@probe
def loss_forward(answers, key: str, v: np.ndarray, u: np.ndarray) -> Any:
    """The learner's NegativeSamplingLoss.forward; its ctx and the caller's arrays kept under `key`."""
    ctx = Context()
    ctx.needs_input_grad = (True, True)
    with np.errstate(all="ignore"):
        out = answers.NegativeSamplingLoss.forward(ctx, v, u)
    _KEPT[key] = (ctx, v, u)
    return out


@probe
def loss_backward(answers, key: str, upstream: np.ndarray, next_v: Any = None, next_u: Any = None) -> Any:
    """The learner's NegativeSamplingLoss.backward for the forward kept under `key`; the caller may
    first write new numbers into the arrays it gave the forward (`next_v`, `next_u`)."""
    ctx, v, u = _KEPT.pop(key)
    if next_v is not None:
        v[...], u[...] = next_v, next_u
    with np.errstate(all="ignore"):
        return answers.NegativeSamplingLoss.backward(ctx, upstream)


@probe
def loss_backward_twice(answers, key: str, upstream: np.ndarray) -> tuple:
    """The learner's NegativeSamplingLoss.backward run twice on the forward kept under `key`, each
    time on its own copy of `upstream`: (first result, second result, whether the first wrote
    into its grad)."""
    ctx, _, _ = _KEPT.pop(key)
    given = upstream.copy()
    with np.errstate(all="ignore"):
        first = copy.deepcopy(answers.NegativeSamplingLoss.backward(ctx, given))
        second = answers.NegativeSamplingLoss.backward(ctx, upstream.copy())
    return first, second, not np.array_equal(given, upstream)


@probe
def loss_in_the_engine(answers, tables: list, centres: np.ndarray, contexts: np.ndarray,
                       negatives: np.ndarray) -> tuple:
    """(loss, each table's .grad) of skip-gram's loss with the learner's Function on the rows
    read, run by the engine as lesson 13's model runs it."""
    inputs = [tensor(tables[0], requires_grad=True, name="input"),
              tensor(tables[1], requires_grad=True, name="output")]
    loss = negative_sampling_loss(inputs[0], inputs[1], centres, contexts, negatives,
                                  on_rows=answers.NegativeSamplingLoss.apply)
    loss.backward()
    return loss.data, [table.grad for table in inputs]


# ---- here: the check --------------------------------------------------------------------------

def _forward(answers: Any, v: np.ndarray, u: np.ndarray, what: str) -> str:
    """Run the learner's forward (kept in their process for the backward, under a key, returned);
    check the loss."""
    key = "loss"
    with np.errstate(all="ignore"):
        out = run(answers, loss_forward, key, v, u)
    got = common.as_array(out, f"{what}: NegativeSamplingLoss.forward")
    if got.shape != ():
        raise AssertionError(f"{what}: forward returned shape {got.shape}; the loss is one number, a 0-d "
                             "array (the mean over the pairs)")
    if np.asarray(out).dtype != v.dtype:
        raise AssertionError(f"{what}: forward returned a {np.asarray(out).dtype} loss for {v.dtype} rows; "
                             "return it in v's dtype")
    expected = loss_on_rows(tensor(v.astype(np.float64)), tensor(u.astype(np.float64))).item()
    rtol = 1e-5 if v.dtype == np.float32 else 1e-9
    common.assert_number(got, expected, f"{what}: the loss", rtol=rtol, mistakes=[
        (expected * len(v), f"that is the sum over the {len(v)} pairs; the loss is their mean")])
    return key


def _backward(answers: Any, key: str, upstream: float, v: np.ndarray, u: np.ndarray, what: str,
              **refill: Any) -> tuple[np.ndarray, np.ndarray]:
    grads = run(answers, loss_backward, key, np.asarray(upstream, dtype=v.dtype), **refill)
    if not isinstance(grads, (tuple, list)) or len(grads) != 2:
        raise AssertionError(f"{what}: backward must return two gradients, (dL/dv, dL/du), one per input of "
                             f"forward; got {type(grads).__name__}")
    got = [common.as_array(g, f"{what}: dL/d{name}") for g, name in zip(grads, "vu")]
    for g, raw, x, name in zip(got, grads, (v, u), "vu"):
        common.expect_shape(g, x.shape, f"{what}: dL/d{name}")
        if np.asarray(raw).dtype != x.dtype:
            raise AssertionError(f"{what}: dL/d{name} is {np.asarray(raw).dtype} for {x.dtype} rows; keep "
                                 "the gradient in its input's dtype (the engine refuses a mismatch)")
    return got[0], got[1]


def _check_case(answers: Any, B: int, K: int, d: int, rng: np.random.Generator) -> None:
    what = f"B = {B} pairs, K = {K} noise words, d = {d}"
    v, u = rng.standard_normal((B, d)), rng.standard_normal((B, 1 + K, d))
    upstream = 2.5
    key = _forward(answers, v, u, what)
    got = _backward(answers, key, upstream, v, u, what)
    expected = [upstream * common.reference_gradient(loss_on_rows, [v, u], wrt=k) for k in (0, 1)]
    if all(common.close(g, e, rtol=1e-7, atol=1e-10) for g, e in zip(got, expected)):
        return
    for wrong, diagnosis in _loss_mistakes(v, u, upstream):
        if all(np.allclose(g, w, rtol=1e-7, atol=1e-10) for g, w in zip(got, wrong)):
            raise AssertionError(f"{what}: {diagnosis}")
    for g, e, name in zip(got, expected, "vu"):
        common.assert_matches(g.reshape(len(g), -1), e.reshape(len(e), -1), f"{what}: dL/d{name}",
                              max_reported=2)


def _check_kept_inputs(answers: Any, rng: np.random.Generator) -> None:
    """The caller's arrays change between forward and backward (a buffer refilled for the next batch)."""
    v, u = rng.standard_normal((3, 4)), rng.standard_normal((3, 3, 4))
    key = _forward(answers, v, u, "kept inputs")
    got = _backward(answers, key, 1.0, v, u, "kept inputs", next_v=np.full(v.shape, 0.5),
                    next_u=np.full(u.shape, -0.5))
    expected = [common.reference_gradient(loss_on_rows, [v, u], wrt=k) for k in (0, 1)]
    if not all(common.close(g, e) for g, e in zip(got, expected)):
        raise AssertionError("after forward the caller wrote new numbers into the v and u arrays it had "
                             "passed, and your backward used them: forward must keep its own copies "
                             "(v.copy())")


def _check_large_scores(answers: Any) -> None:
    v = np.array([[30.0, 0.0], [-30.0, 1.0]])
    u = np.array([[[30.0, 1.0], [-20.0, 0.0]], [[30.0, 0.0], [25.0, 2.0]]])  # scores of +-900 and +-750
    what = "scores in the hundreds"
    with np.errstate(all="ignore"):
        try:
            key = _forward(answers, v, u, what)
            got = _backward(answers, key, 1.0, v, u, what)
        except AssertionError as error:
            if "NaN" in str(error) or "infinit" in str(error):
                raise AssertionError(f"{what}: {error}. log(sigmoid(z)) underflows for a confident wrong "
                                     "score: use log s(z) = min(z, 0) - log(1 + e^-|z|), and s(-z) from exp "
                                     "of a non-positive number") from error
            raise
    expected = [common.reference_gradient(loss_on_rows, [v, u], wrt=k) for k in (0, 1)]
    for g, e, name in zip(got, expected, "vu"):
        common.assert_matches(g.reshape(len(g), -1), e.reshape(len(e), -1), f"{what}: dL/d{name}")


def _check_in_the_engine(answers: Any, rng: np.random.Generator) -> None:
    """Behind two lookups, ids repeated within and across the pairs, through the engine, float64:
    each table's gradient against minigrad's loss, confirmed by central differences."""
    tables = [rng.standard_normal((7, 3)) for _ in range(2)]
    batch = (np.array([1, 4, 1]), np.array([4, 2, 2]), np.array([[2, 6], [1, 1], [4, 0]]))
    _, grads = run(answers, loss_in_the_engine, tables, *batch)
    def minigrads(a: Any, b: Any) -> Any:
        return negative_sampling_loss(a, b, *batch)

    report = [common.finite_difference_report(name, grad, common.reference_gradient(minigrads, tables, wrt=k))
              for k, (name, grad) in enumerate(zip(("input", "output"), grads))]
    if any(report):
        raise AssertionError("your NegativeSamplingLoss, behind the two lookups, disagrees with finite "
                             "differences:\n" + "\n".join(line for line in report if line))
    v32, u32 = (rng.standard_normal(shape).astype(np.float32) for shape in ((2, 3), (2, 3, 3)))
    key = _forward(answers, v32, u32, "float32 rows")
    _backward(answers, key, 1.0, v32, u32, "float32 rows")


def _check_backward_leaves_its_inputs(answers: Any, rng: np.random.Generator) -> None:
    """Neither the gradient backward is given nor what forward saved is written into."""
    v, u = rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 3))
    key = _forward(answers, v, u, "a backward run twice")
    *runs, wrote = run(answers, loss_backward_twice, key, np.asarray(2.0))
    one, two = (np.concatenate([common.as_array(g, f"NegativeSamplingLoss.backward: dL/d{name}").ravel()
                                for g, name in zip(grads, "vu")]) for grads in runs)
    common.assert_backward_leaves_its_inputs("NegativeSamplingLoss", wrote, one, two)


def _check_loss(answers: Any) -> None:
    rng = np.random.default_rng(13)
    for B, K, d in SHAPES:
        _check_case(answers, B, K, d, rng)
    _check_kept_inputs(answers, rng)
    _check_backward_leaves_its_inputs(answers, rng)
    _check_large_scores(answers)
    _check_in_the_engine(answers, rng)


def check(answers: ModuleType) -> None:
    three_cos_add = common.answer_function(answers, "three_cos_add")
    common.answer_function_class(answers, "NegativeSamplingLoss")
    _check_analogies(three_cos_add)
    _check_loss(answers)
