"""Check for lesson 7: Adam's step for a row coming back from a silence, and a lazy AdamW step
on the rows present with touched-only or catch-up decay.

The reference is minigrad's own optimizer, run on a small table (Adam and AdamW with PyTorch's
formulas); each typical mistake is recomputed and, when the learner's answer equals it, named.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from minigrad.engine import RowSparse
from minigrad.learn.kit.rare_rows import adam_step_after_silence
from minigrad.nn import Parameter
from minigrad.optim import Adam, AdamW

from . import _common as common

BETAS = (0.9, 0.999)
OTHER_BETAS = (0.8, 0.99)  # betas are an argument: a function that assumes the defaults is caught
D = 3
# adam_step_after_silence: (t, k, lr, eps, lazy, betas); eps = 1e-3 makes where eps sits visible;
# the last three are long: the arrival step is past 100, where a bias correction left out (or
# stopped) changes the step by a few parts in a thousand only, and past 3,000 silent steps
SILENCES = [(6, 4, 0.01, 1e-8, False, BETAS), (5, 0, 0.02, 1e-8, False, BETAS),
            (4, 7, 0.01, 1e-8, True, BETAS), (7, 3, 0.05, 1e-3, False, BETAS),
            (6, 4, 0.01, 1e-8, False, OTHER_BETAS), (4, 7, 0.01, 1e-8, True, OTHER_BETAS),
            (150, 400, 0.01, 1e-8, False, BETAS), (20, 3000, 0.01, 1e-8, True, BETAS),
            (300, 30000, 0.001, 1e-8, False, OTHER_BETAS)]
LONG = 200  # silences longer than this are taken from minigrad's arrival step on the moments they leave
# lazy_adamw_rows: (decay, lr, weight_decay, betas, steps present); a large lr * wd so that every
# factor shows
PRESENT = [[0, 2], [1, 2], [2], [0, 2], [2, 3], [1, 2, 4]]  # the rows present on steps 1..6; row 4 is new
# 150 steps: row 0 present on step 2 and then on step 150 only; rows 1 and 2 on every step
LONG_PRESENT = [[1, 2]] + [[0, 1, 2]] + [[1, 2]] * 147 + [[0, 1, 2]]
STEPS = [("touched", 0.05, 2.0, BETAS, PRESENT), ("catch_up", 0.05, 2.0, BETAS, PRESENT),
         ("catch_up", 0.02, 0.5, BETAS, PRESENT), ("catch_up", 0.05, 2.0, OTHER_BETAS, PRESENT),
         ("catch_up", 0.01, 0.5, BETAS, LONG_PRESENT), ("touched", 0.01, 0.5, OTHER_BETAS, LONG_PRESENT)]


RTOL, ATOL = 1e-7, 1e-12


def _close(a: Any, b: Any) -> bool:
    return bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _default_betas(betas: tuple[float, float]) -> str:
    return f"you used betas = {BETAS}, the defaults, but this call passes betas = {betas}: use the ones given"


def _off_by(got: np.ndarray, expected: np.ndarray) -> str:
    """How far apart two vectors are, in numbers that show it (when they print alike): the
    largest difference, where, relative to the value, and the tolerance."""
    difference = np.abs(got - expected)
    worst = np.unravel_index(np.argmax(difference - RTOL * np.abs(expected)), difference.shape)
    relative = difference[worst] / max(abs(expected[worst]), 1e-300)
    where = f"[{', '.join(map(str, worst))}]" if worst else ""
    rounding = (" (about float32's rounding: is some quantity float32, such as a factor computed with "
                "np.float32? compute in float64)" if 1e-9 < relative < 1e-5 else "")
    return (f"they differ most at {where or 'the value'}: {expected[worst]:.12g} against "
            f"{got[worst]:.12g}, by {difference[worst]:.3g} ({relative:.3g} of the value; the tolerance is "
            f"{RTOL:g} of it + {ATOL:g}){rounding}")


# ---- piece 1: Adam's step after k silent steps ---------------------------------------------

def _adam_after_silence(t: int, k: int, lr: float, eps: float, lazy: bool, betas: tuple[float, float],
                        rng: np.random.Generator) -> tuple:
    """Run minigrad's Adam on a 2-row table: t steps with row 0 present, k with row 1 only, then
    one with row 0's gradient g. Returns (m, v, g, the change of row 0 on the last step). A
    silence longer than LONG is not stepped through: minigrad's arrival step is taken on the
    moments it leaves (kit.rare_rows.adam_step_after_silence), which is the same to rounding."""
    table = Parameter(rng.standard_normal((2, D)))
    optimizer = Adam([table], lr=lr, betas=betas, eps=eps, lazy=lazy)
    for _ in range(t):
        table.grad = RowSparse([0, 1], rng.standard_normal((2, D)), table.shape)
        optimizer.step()
    state = optimizer.state_dict()["state"][0]
    m, v = state["exp_avg"][0].copy(), state["exp_avg_sq"][0].copy()
    g = rng.standard_normal(D)
    if k > LONG:
        return m, v, g, adam_step_after_silence(m, v, t, k, g, lr, betas, eps, lazy)
    for _ in range(k):
        table.grad = RowSparse([1], rng.standard_normal((1, D)), table.shape)
        optimizer.step()
    before = table.data[0].copy()
    table.grad = RowSparse([0], g[None], table.shape)
    optimizer.step()
    return m, v, g, table.data[0] - before


def _step_variant(m, v, t, k, g, lr, eps, betas, *, silent_decays: int, bias_step: int | None,
                  eps_before_correction: bool = False, sign: float = -1.0, with_lr: bool = True,
                  decay_m: bool = True, decay_v: bool = True) -> np.ndarray:
    """Adam's step with one thing changed: how often the moments decay while silent, which step
    the bias correction counts (None: none), where eps sits, the sign, lr, the betas."""
    beta1, beta2 = betas
    m = beta1 ** (silent_decays if decay_m else 0) * m
    v = beta2 ** (silent_decays if decay_v else 0) * v
    m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
    c1, c2 = (1.0, 1.0) if bias_step is None else (1 - beta1**bias_step, 1 - beta2**bias_step)
    denominator = (np.sqrt(v) + eps) / np.sqrt(c2) if eps_before_correction else np.sqrt(v / c2) + eps
    return sign * (lr if with_lr else 1.0) * (m / c1) / denominator


def _silence_mistakes(m, v, t, k, g, lr, eps, lazy, betas) -> list[tuple[np.ndarray, str]]:
    right = 0 if lazy else k
    arrival = t + k + 1
    variant = lambda betas=betas, **change: _step_variant(m, v, t, k, g, lr, eps, betas, **{  # noqa: E731
        "silent_decays": right, "bias_step": arrival, **change})
    mistakes = []
    if betas != BETAS:
        mistakes.append((variant(betas=BETAS), _default_betas(betas)))
    if lazy and k:
        mistakes.append((variant(silent_decays=k),
                         "with lazy=True an absent row is not touched at all: its m and v stay as they were "
                         "during the silent steps (you let them decay)"))
    if not lazy and k:
        mistakes += [
            (variant(silent_decays=0),
             "you left m and v as they were during the k silent steps; with lazy=False an absent row counts "
             "as a zero gradient, so every silent step multiplies m by beta1 and v by beta2"),
            (variant(silent_decays=k - 1),
             f"the moments decayed {k - 1} times during the silence, but there are k = {k} silent steps, "
             "each multiplying them by beta once (and the arrival step multiplies them once more, before "
             "adding g)"),
            (variant(silent_decays=k + 1),
             f"the moments decayed {k + 1} times before the arrival step: k = {k} silent steps each multiply "
             "them by beta once, and the arrival step multiplies once more as part of adding g, not twice"),
            (variant(decay_m=False), "you decayed v during the silence but not m: both moments decay on a "
                                     "step with a zero gradient"),
            (variant(decay_v=False), "you decayed m during the silence but not v: both moments decay on a "
                                     "step with a zero gradient"),
        ]
    if k:
        mistakes += [
            (variant(bias_step=t + 1),
             f"your bias correction counts step t + 1 = {t + 1}, as if the silent steps had not happened; "
             f"it counts the optimizer's steps on the table, t + k + 1 = {arrival}"),
            (variant(bias_step=t + k),
             f"your bias correction counts step t + k = {t + k}; the arrival step is step t + k + 1 = "
             f"{arrival}"),
        ]
    mistakes += [
        (variant(bias_step=None), "you left out the bias correction: Adam divides m by 1 - beta1^step and v "
                                  "by 1 - beta2^step (step = the optimizer's step count on that step)"),
        (variant(sign=1.0),
         "your step has the wrong sign: Adam moves the row against m, the gradient's average"),
        (variant(with_lr=False),
         "you left out the learning rate lr: the step is lr * m_hat / (sqrt(v_hat) + eps)"),
        (variant(eps_before_correction=True),
         "you added eps to sqrt(v) before the bias correction (SparseAdam's placement); minigrad's and "
         "PyTorch's Adam add it to sqrt(v_hat), after dividing v by 1 - beta2^step"),
    ]
    return mistakes


def _check_adam_step_after_silence(function: Any, rng: np.random.Generator) -> None:
    for t, k, lr, eps, lazy, betas in SILENCES:
        m, v, g, expected = _adam_after_silence(t, k, lr, eps, lazy, betas, rng)
        shown = "" if betas == BETAS else f", betas = {betas}"
        what = f"adam_step_after_silence(t = {t}, k = {k}, lr = {lr}, eps = {eps:g}, lazy = {lazy}{shown})"
        hint = f"Here m, v and g have shape ({D},); return the change of the row, shape ({D},)"
        answer = common.call_answer(function, m, v, t, k, g, lr, betas, eps, lazy, hint=hint)
        got = common.as_array(answer, what)
        common.expect_shape(got, (D,), what, known={(): "return the change of every coordinate of the "
                                                        "row, not its norm"})
        if _close(got, expected):
            continue
        for wrong, diagnosis in _silence_mistakes(m, v, t, k, g, lr, eps, lazy, betas):
            if _close(got, wrong):
                raise AssertionError(f"{what}: {diagnosis}")
        raise AssertionError(f"{what} is off: minigrad's Adam moved the row by {common.short(expected, 6)}, "
                             f"yours says {common.short(got, 6)}; {_off_by(got, expected)}")


# ---- piece 2: one lazy AdamW step on the rows present --------------------------------------

def _adamw_step(decay: str, lr: float, weight_decay: float, betas: tuple[float, float], present: list,
                rng: np.random.Generator) -> tuple:
    """minigrad's AdamW(lazy=True, decay=decay) on a 5-row table for the steps in `present` (the
    rows of each); what the learner is given for the last step, and the rows, m and v after it."""
    table = Parameter(rng.standard_normal((5, D)))
    optimizer = AdamW([table], lr=lr, betas=betas, weight_decay=weight_decay, lazy=True, decay=decay)
    for step_rows in present[:-1]:
        table.grad = RowSparse(step_rows, rng.standard_normal((len(step_rows), D)), table.shape)
        optimizer.step()
    rows = np.array(present[-1])
    state = optimizer.state_dict()["state"][0]
    given = dict(rows=table.data[rows].copy(), m=state["exp_avg"][rows].copy(),
                 v=state["exp_avg_sq"][rows].copy(), g=rng.standard_normal((rows.size, D)), t=len(present),
                 last_present=optimizer.last_touched(table)[rows].copy(), betas=betas)
    table.grad = RowSparse(rows, given["g"], table.shape)
    optimizer.step()
    state = optimizer.state_dict()["state"][0]
    return given, (table.data[rows].copy(), state["exp_avg"][rows].copy(), state["exp_avg_sq"][rows].copy())


def _rows_variant(given: dict, lr: float, weight_decay: float, *, exponent: Any, decay_after: bool = False,
                  l2: bool = False, bias: bool = True, betas: tuple | None = None) -> np.ndarray:
    """The rows after a lazy AdamW step with one thing changed: the decay's exponent per row,
    decaying after Adam's step, L2 decay in the gradient, no bias correction, other betas."""
    (beta1, beta2), t = betas or given["betas"], given["t"]
    rows, g = given["rows"], given["g"] + (weight_decay * given["rows"] if l2 else 0.0)
    factor = 1.0 if l2 else (1 - lr * weight_decay) ** np.asarray(exponent, dtype=float).reshape(-1, 1)
    m = beta1 * given["m"] + (1 - beta1) * g
    v = beta2 * given["v"] + (1 - beta2) * g * g
    c1, c2 = (1 - beta1**t, 1 - beta2**t) if bias else (1.0, 1.0)
    step = lr * (m / c1) / (np.sqrt(v / c2) + 1e-8)
    return (rows - step) * factor if decay_after else rows * factor - step


def _rows_mistakes(given: dict, decay: str, lr: float, weight_decay: float) -> list[tuple[np.ndarray, str]]:
    t, last = given["t"], given["last_present"]
    right = t - last if decay == "catch_up" else np.ones(len(last))
    variant = lambda **change: _rows_variant(given, lr, weight_decay, **{"exponent": right, **change})  # noqa: E731
    mistakes = []
    if given["betas"] != BETAS:
        mistakes.append((variant(betas=BETAS), _default_betas(given["betas"])))
    if decay == "catch_up":
        mistakes += [
            (variant(exponent=t - last - 1),
             "catch-up: you applied the factors the row missed, t - last_present - 1 of them, but not this "
             "step's own: a present row is decayed on this step too"),
            (variant(exponent=t - last + 1),
             "catch-up: you applied t - last_present + 1 factors, one too many: the row was decayed on step "
             "last_present itself"),
            (variant(exponent=np.ones(len(last))),
             "with decay=\"catch_up\" a row that was absent must also get the decay of every step it "
             "missed, (1 - lr * weight_decay) per step; you decayed it once, as decay=\"touched\" does"),
        ]
    else:
        mistakes.append((variant(exponent=t - last),
                         "with decay=\"touched\" a present row is decayed once, on this step only; the "
                         "catch-up of missed steps belongs to decay=\"catch_up\""))
    mistakes += [
        (variant(decay_after=True), "you decayed the rows after Adam's step; AdamW decays the weights first, "
                                    "p <- p (1 - lr * weight_decay), then subtracts Adam's step"),
        (variant(l2=True), "you added weight_decay * row to the gradient (Adam's L2 decay); AdamW's decay is "
                           "decoupled: it multiplies the row by (1 - lr * weight_decay) and leaves g alone"),
        (variant(bias=False),
         "you left out the bias correction: divide m by 1 - beta1^t and v by 1 - beta2^t, t = this step's "
         "number on the table"),
        (_rows_variant(given, lr, weight_decay / lr, exponent=right),
         "you used (1 - weight_decay) per step; AdamW's factor is (1 - lr * weight_decay): the decay is "
         "scaled by the learning rate"),
    ]
    return mistakes


def _check_lazy_adamw_rows(function: Any, rng: np.random.Generator) -> None:
    for decay, lr, weight_decay, betas, present in STEPS:
        given, (rows, m, v) = _adamw_step(decay, lr, weight_decay, betas, present, rng)
        shown = "" if betas == BETAS else f", betas = {betas}"
        what = (f"lazy_adamw_rows(decay = {decay!r}, lr = {lr}, weight_decay = {weight_decay}, "
                f"t = {len(present)}{shown})")
        got_rows, got_m, got_v = _call_lazy_adamw_rows(function, given, what, lr, weight_decay, decay)
        _check_moments(got_m, got_v, given, m, v, what)
        if not _close(got_rows, rows):
            _diagnose_rows(got_rows, rows, given, what, decay, lr, weight_decay)


def _call_lazy_adamw_rows(function: Any, given: dict[str, Any], what: str, lr: float, weight_decay: float,
                          decay: str) -> tuple[np.ndarray, ...]:
    """The learner's (rows, m, v) after the step, each read as an (n, D) array."""
    n = len(given["rows"])
    hint = f"Here rows, m, v and g have shape ({n}, {D}), last_present = {given['last_present'].tolist()}"
    args = {key: np.array(value, copy=True) if isinstance(value, np.ndarray) else value
            for key, value in given.items()}
    answer = common.call_answer(function, args["rows"], args["m"], args["v"], args["g"], args["t"],
                                args["last_present"], lr, weight_decay, given["betas"], 1e-8, decay,
                                hint=hint)
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AssertionError(f"{what}: return three arrays, (rows, m, v) after the step; yours returned "
                             f"{type(answer).__name__}")
    got = tuple(common.as_array(a, f"{what}, {name}") for a, name in zip(answer, ("rows", "m", "v")))
    for array, name in zip(got, ("rows", "m", "v")):
        common.expect_shape(array, (n, D), f"{what}: the returned {name}")
    return got


def _check_moments(got_m: np.ndarray, got_v: np.ndarray, given: dict[str, Any], m: np.ndarray, v: np.ndarray,
                   what: str) -> None:
    if _close(got_m, m) and _close(got_v, v):
        return
    if _close(got_m, given["m"]) and _close(got_v, given["v"]):
        raise AssertionError(f"{what}: the returned moments are wrong: they are the moments before the step; "
                             "update them with g (m <- beta1 m + (1 - beta1) g, and likewise v with g^2) and "
                             "return the new ones")
    (beta1, beta2), g = BETAS, given["g"]
    if given["betas"] != BETAS and _close(got_m, beta1 * given["m"] + (1 - beta1) * g) \
            and _close(got_v, beta2 * given["v"] + (1 - beta2) * g * g):
        raise AssertionError(f"{what}: the returned moments are wrong: {_default_betas(given['betas'])}")
    off = _off_by(got_m, m) if not _close(got_m, m) else _off_by(got_v, v)
    raise AssertionError(f"{what}: the returned moments are wrong; minigrad's AdamW has m = "
                         f"{common.short(m)}, "
                         f"yours {common.short(got_m)}; {off}")


def _diagnose_rows(got_rows: np.ndarray, rows: np.ndarray, given: dict[str, Any], what: str, decay: str,
                   lr: float, weight_decay: float) -> None:
    """The returned rows are wrong: name the typical mistake they equal, or the worst row."""
    for wrong, diagnosis in _rows_mistakes(given, decay, lr, weight_decay):
        if _close(got_rows, wrong):
            raise AssertionError(f"{what}: {diagnosis}")
    worst = int(np.argmax(np.abs(got_rows - rows).max(axis=1)))
    raise AssertionError(f"{what}: the row in position {worst} (last present on step "
                         f"{int(given['last_present'][worst])}, now step {given['t']}) should become "
                         f"{common.short(rows[worst], 6)}, yours is {common.short(got_rows[worst], 6)}; "
                         f"{_off_by(got_rows[worst], rows[worst])}")


def check(answers: ModuleType) -> None:
    rng = np.random.default_rng(77)
    _check_adam_step_after_silence(common.answer_function(answers, "adam_step_after_silence"), rng)
    _check_lazy_adamw_rows(common.answer_function(answers, "lazy_adamw_rows"), rng)
