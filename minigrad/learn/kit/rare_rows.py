"""Lesson 7's pieces, minigrad's side: what runs when the learner's own are not there yet, and
the small optimizer that runs the learner's row update on a whole table.

- `adam_step_after_silence`: the change minigrad's Adam makes to a row on the step its
  gradient returns after k silent steps (the lesson uses the learner's once it passes
  `minigrad check 7`). The arrival step is `Adam.step` itself, not a second copy of its rule.
- `RowAdamW`: AdamW(lazy=True) for one table, whose per-row rule is a function given to it
  (the learner's `lazy_adamw_rows`); it keeps the moments, the step count and the step each
  row was last present, and settles owed catch-up decay on `flush()`.
- `lazy_adamw`: the optimizer a lesson trains with: RowAdamW around the learner's rule when
  there is one, else minigrad's own `AdamW(lazy=True, decay=...)`.
- `row_gradient_noise`: how noisy each row's gradient is from batch to batch (the noise that
  sets the ceiling on a rare row's step), from a series of row-sparse gradients.
- `longest_silences`: each row's longest run of steps without a gradient, from the ids each
  step read (lesson 15's piece, minigrad's side).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor, no_grad
from minigrad.nn import Parameter
from minigrad.optim import Adam, AdamW

RowRule = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]


def adam_step_after_silence(m: np.ndarray, v: np.ndarray, t: int, k: int, g: np.ndarray, lr: float,
                            betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                            lazy: bool = False) -> np.ndarray:
    """The change minigrad's Adam (no weight decay) makes to one row on step t + k + 1, when the
    row had moments m, v after step t, was absent from the gradient on the k steps after, and
    then gets gradient g. lazy=False: an absent row counts as a zero gradient (torch.optim.Adam
    on a dense gradient); lazy=True: it is not touched at all (torch.optim.SparseAdam's rule).
    m, v, g: (d,) -> (d,).

    The silent steps are k zero gradients for the row (lazy: none), and a zero gradient only
    multiplies the moments by beta: the optimizer is handed the state they leave, at step t + k,
    so a silence of 30,000 steps costs one step. The arrival step is minigrad's `Adam.step`."""
    m, v, g = (np.asarray(x, dtype=np.float64) for x in (m, v, g))
    if not m.shape == v.shape == g.shape:
        raise ValueError(f"adam_step_after_silence: m {m.shape}, v {v.shape} and g {g.shape} must be one "
                         "row each, of one shape")
    beta1, beta2 = betas
    silent = 0 if lazy else k  # the zero gradients the row's moments saw while it was absent
    row = Parameter(np.zeros((1, *g.shape)))
    optimizer = Adam([row], lr=lr, betas=betas, eps=eps, lazy=lazy)
    state = optimizer.state_dict()
    state["state"][0] = {"step": t + k, "last_touched": np.array([t]),
                         "exp_avg": beta1**silent * m[None], "exp_avg_sq": beta2**silent * v[None]}
    optimizer.load_state_dict(state)
    row.grad = RowSparse([0], g[None], row.shape)
    optimizer.step()
    return row.data[0].copy()


class RowAdamW:
    """AdamW(lazy=True, decay=...) on one table, its per-row arithmetic done by `rule`.

    rule(rows, m, v, g, t, last_present, lr, weight_decay, betas, eps, decay) -> (rows, m, v):
    one step on the n rows the gradient names (all (n, d); t this step's number; last_present
    (n,) the step each row was last present, 0 for never). Steps, the moments and the
    bookkeeping of absent rows are kept here, the same as minigrad's AdamW keeps them. A dense
    gradient (a tied table's) names every row, as it does for AdamW(lazy=True).
    """

    def __init__(self, params: Iterable[Tensor], rule: RowRule, lr: float, weight_decay: float,
                 decay: str, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        (self.table,) = list(params)  # one table: the lesson trains an embedding alone
        if decay not in ("touched", "catch_up"):
            raise ValueError(f"RowAdamW: decay must be 'touched' or 'catch_up', got {decay!r}")
        self.rule, self.lr, self.weight_decay, self.decay = rule, lr, weight_decay, decay
        self.betas, self.eps = betas, eps
        self.m, self.v = np.zeros_like(self.table.data), np.zeros_like(self.table.data)
        self.t = 0
        self.last_present = np.zeros(self.table.shape[0], dtype=np.int64)

    def zero_grad(self) -> None:
        self.table.grad = None

    def step(self) -> None:
        grad = self.table.grad
        if grad is None:
            return
        if isinstance(grad, RowSparse):
            grad = grad.coalesce()
            rows, values = grad.indices, grad.values
        else:  # dense: every row is present
            rows, values = np.arange(self.table.shape[0]), np.asarray(grad)
        if rows.size == 0:
            return  # nothing reached the table: not a step, as in minigrad's optimizers
        self.t += 1
        new_rows, new_m, new_v = self.rule(
            self.table.data[rows].copy(), self.m[rows].copy(), self.v[rows].copy(), values.copy(),
            self.t, self.last_present[rows].copy(), self.lr, self.weight_decay, self.betas, self.eps,
            self.decay)
        with no_grad():
            self.table.data[rows] = new_rows
            self.table._version += 1
        self.m[rows], self.v[rows] = new_m, new_v
        self.last_present[rows] = self.t

    def flush(self) -> None:
        """catch_up: apply to every row the decay it owes for the steps since it was last present
        (afterwards they owe nothing, as if decayed on every step)."""
        if self.decay != "catch_up":
            return
        owed = (1 - self.lr * self.weight_decay) ** (self.t - self.last_present)
        with no_grad():
            self.table.data *= owed[:, None].astype(self.table.dtype)
            self.table._version += 1
        self.last_present[:] = self.t


def lazy_adamw(params: Iterable[Tensor], rule: RowRule | None, *, lr: float, weight_decay: float,
               decay: str) -> Any:
    """AdamW(lazy=True, decay=decay) for the table in `params`: RowAdamW around `rule` (the
    learner's row update), or minigrad's own AdamW when rule is None."""
    if rule is None:
        return AdamW(params, lr=lr, weight_decay=weight_decay, lazy=True, decay=decay)
    return RowAdamW(params, rule, lr=lr, weight_decay=weight_decay, decay=decay)


def row_gradient_noise(gradients: Iterable[RowSparse], min_seen: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """(rows, noise) over a series of row-sparse gradients of one (V, d) table, for every row
    present in at least `min_seen` of them: noise^2 = the variance over the gradients where the
    row is present, summed over its coordinates, / its squared mean gradient, summed likewise.
    A gradient g (1 + s z) with z standard normal has noise s. The squared mean is corrected for
    the mean's own sampling error (variance / n); a row whose mean is lost in it gets inf."""
    total: np.ndarray | None = None
    squares: np.ndarray  # made with total, at the first gradient
    seen: np.ndarray
    for grad in gradients:
        if not isinstance(grad, RowSparse) or len(grad.shape) != 2:
            raise TypeError(f"row_gradient_noise: expected RowSparse gradients of a (V, d) table, got "
                            f"{type(grad).__name__} of shape {getattr(grad, 'shape', None)}")
        if total is None:
            total, squares, seen = np.zeros(grad.shape), np.zeros(grad.shape), np.zeros(grad.shape[0])
        if grad.shape != total.shape:
            raise ValueError(f"row_gradient_noise: a gradient of shape {grad.shape} among ones of "
                             f"{total.shape}")
        grad = grad.coalesce()  # one row per id, so a row counts once per gradient
        values = np.asarray(grad.values, dtype=np.float64)
        total[grad.indices] += values
        squares[grad.indices] += values**2
        seen[grad.indices] += 1
    if total is None:
        raise ValueError("row_gradient_noise: no gradients given")
    rows = np.flatnonzero(seen >= min_seen)
    mean = total[rows] / seen[rows, None]
    # clipped at 0: for a constant gradient rounding can leave E[g^2] - E[g]^2 a hair below 0
    variance = np.maximum(squares[rows] / seen[rows, None] - mean**2, 0.0).sum(axis=1)
    signal = (mean**2).sum(axis=1) - variance / seen[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        return rows, np.where(signal > 0, np.sqrt(variance / np.maximum(signal, 0.0)), np.inf)


def longest_silences(steps: Iterable[np.ndarray], vocab_size: int) -> np.ndarray:
    """(V,) each row's longest run of consecutive steps on which it was not read, given the ids
    each step read (any shape). The run before a row's first read and after its last count too,
    so a row never read is silent for every step."""
    last = np.full(vocab_size, -1)  # the step each row was last read (-1: not yet)
    longest = np.zeros(vocab_size, dtype=np.int64)
    count = 0
    for count, ids in enumerate(steps, start=1):
        read = np.unique(np.asarray(ids).ravel())
        longest[read] = np.maximum(longest[read], count - 2 - last[read])  # steps since its last read
        last[read] = count - 1
    return np.maximum(longest, count - 1 - last)  # and the silence after its last read
