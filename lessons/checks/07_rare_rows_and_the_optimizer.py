"""Check for lesson 7: an absent row under AdamW(lazy=True, decay="dense") only decays, by
(1 - lr * weight_decay) per step."""

import warnings
from types import ModuleType

import numpy as np

import minigrad as mg
from minigrad.optim import AdamW, PerformanceWarning

from . import _common as common

BETAS, EPS = (0.9, 0.999), 1e-8
ROW, V, D = 2, 4, 5
# (silent steps k, lr, weight_decay, steps the row had gradients before): lr * wd = 0.01, then 0.03
CASES = [(25, 0.02, 0.5, 6), (3, 0.1, 0.3, 2)]


def _run_adamw(k: int, lr: float, weight_decay: float, history: int, rng: np.random.Generator) -> tuple:
    """Train a small table with minigrad's AdamW: `history` steps with ROW present, then k without.

    Returns (what the learner is given, the row's norm after the k steps)."""
    table = mg.nn.Parameter(rng.standard_normal((V, D)))
    with warnings.catch_warnings():  # dense decay on a lazy step is what this check is about
        warnings.simplefilter("ignore", PerformanceWarning)
        optimizer = AdamW([table], lr=lr, betas=BETAS, eps=EPS, weight_decay=weight_decay, lazy=True,
                          decay="dense")
    for _ in range(history):
        table.grad = mg.RowSparse([0, ROW], rng.standard_normal((2, D)), table.shape)
        optimizer.step()
    state = optimizer.state_dict()["state"][0]
    given = (table.data[ROW].copy(), state["exp_avg"][ROW].copy(), state["exp_avg_sq"][ROW].copy(),
             int(state["step"]))
    for _ in range(k):
        table.grad = mg.RowSparse([0, 3], rng.standard_normal((2, D)), table.shape)  # never ROW
        optimizer.step()
    return given, float(np.linalg.norm(table.data[ROW]))


def _with_adam_updates(row, m, v, step, k, lr, weight_decay, moments_decay: bool, decay: bool) -> float:
    """The row after k steps of decay plus Adam's update from its own moments, which either stay
    frozen or decay as if the gradient were zero (what a non-lazy optimizer does)."""
    (beta1, beta2), p = BETAS, row.astype(np.float64)
    for t in range(step + 1, step + k + 1):
        if moments_decay:
            m, v = beta1 * m, beta2 * v
        if decay:
            p = p * (1 - lr * weight_decay)
        p = p - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + EPS)
    return float(np.linalg.norm(p))


def _mistakes(row, m, v, step, k, lr, weight_decay) -> list:
    norm, keep = float(np.linalg.norm(row)), 1 - lr * weight_decay
    factor = f"(1 - lr * weight_decay) = {keep:g}"
    return [
        ((1 - weight_decay) ** k * norm,
         f"you used (1 - weight_decay)^k: AdamW's decay is scaled by the learning rate, a factor {factor} "
         "per step"),
        (keep ** (k - 1) * norm,
         f"you applied {k - 1} factors of {factor}, but each of the k = {k} steps decays the row once"),
        (keep ** (k + 1) * norm,
         f"you applied {k + 1} factors of {factor}, but there are k = {k} steps, each decaying the row once"),
        (norm,
         "the norm did not change, but decay=\"dense\" multiplies every row on every step, present in the "
         "gradient or not (decay=\"touched\" would leave it alone)"),
        ((1 - k * lr * weight_decay) * norm,
         "you subtracted k * lr * weight_decay of the original norm; each step multiplies the row as it is "
         f"then, so the factors compound: {factor} to the power k"),
        (np.exp(-k * lr * weight_decay) * norm,
         "you used exp(-k * lr * weight_decay), the continuous approximation; the row is multiplied exactly "
         f"k times by {factor}"),
        ((keep**k * norm) ** 2, "that is the squared norm; return the norm itself"),
        (_with_adam_updates(row, m, v, step, k, lr, weight_decay, moments_decay=False, decay=True),
         "you also applied Adam's update with the row's frozen moments, but with lazy=True an absent row is "
         "not updated at all: its m and v stay as they were and only the decay reaches it"),
        (_with_adam_updates(row, m, v, step, k, lr, weight_decay, moments_decay=True, decay=True),
         "you let m and v decay and applied Adam's update on every step: that is AdamW(lazy=False), where an "
         "absent row counts as a zero gradient. With lazy=True an absent row is not updated; only the decay "
         "reaches it"),
        (_with_adam_updates(row, m, v, step, k, lr, weight_decay, moments_decay=False, decay=False),
         "you applied Adam's update and no decay, but an absent row is not updated when lazy=True, and "
         "decay=\"dense\" shrinks it by a factor (1 - lr * weight_decay) on every step"),
    ]


def check(answers: ModuleType) -> None:
    norm_after_silence = common.answer_function(answers, "norm_after_silence")
    rng = np.random.default_rng(77)
    for k, lr, weight_decay, history in CASES:
        (row, m, v, step), expected = _run_adamw(k, lr, weight_decay, history, rng)
        if not np.isclose(expected, np.linalg.norm(row) * (1 - lr * weight_decay) ** k, rtol=1e-12):
            raise RuntimeError("lesson 7 check: minigrad's AdamW did not decay the absent row as documented; "
                               "this is a bug in minigrad.optim, not in your answer")
        what = f"the norm after k = {k} silent steps (lr = {lr}, weight_decay = {weight_decay})"
        hint = f"Here row, exp_avg and exp_avg_sq have shape ({D},), step = {step}, k = {k}; return a float"
        answer = common.call_answer(norm_after_silence, row, m, v, step, k, lr, weight_decay, BETAS, EPS,
                                    hint=hint)
        got = common.as_array(answer, what)
        common.expect_shape(got, (), what, known={
            (D,): "that is a whole row; return its norm, one number (np.linalg.norm)",
        })
        common.assert_number(got, expected, what, _mistakes(row, m, v, step, k, lr, weight_decay))
