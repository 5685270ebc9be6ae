"""Lesson 7's pieces, minigrad's side: what runs when the learner's own are not there yet, and
the small optimizer that runs the learner's row update on a whole table.

- `adam_step_after_silence`: the change minigrad's Adam makes to a row on the step its
  gradient returns after k silent steps (the lesson uses the learner's once it passes
  `minigrad check 7`). The arrival step is `Adam.step` itself, not a second copy of its rule.
- `RowAdamW`: AdamW whose per-row rule is a function given to it (the learner's
  `lazy_adamw_rows`): lazy on one table (lesson 7), or every row of every parameter each step
  (PyTorch's AdamW, how lessons 8 to 14 train their models on the learner's rule); it keeps the
  moments, the step count and the step each row was last present, and settles owed catch-up
  decay on `flush()`.
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
from minigrad.optim.optimizer import Optimizer, check_number

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


class RowAdamW(Optimizer):
    """AdamW whose arithmetic is `rule`, the learner's `lazy_adamw_rows` (lesson 7), on the rows of
    every parameter it steps; the steps, the moments and the bookkeeping of absent rows are kept
    here, as minigrad's AdamW keeps them.

    rule(rows, m, v, g, t, last_present, lr, weight_decay, betas, eps, decay) -> (rows, m, v):
    one step on n rows (all (n, d); t this step's number; last_present (n,) the step each row was
    last present, 0 for never). A parameter is seen as rows: a table (V, d) as its V rows, a
    vector (n,) as one row of n numbers, a 0-d number as one row of one.

    lazy=True: a RowSparse gradient steps only the rows it names (`decay` "touched" or
    "catch_up", settled on `flush()`), as AdamW(lazy=True, decay=...); a dense gradient (a tied
    table's) names every row. lazy=False: every row every step, a missing row's gradient zero, as
    PyTorch's AdamW (the rule then gets every row and decay "touched", which is dense decay when
    every row is present).
    """

    def __init__(self, params: Iterable[Tensor], rule: RowRule, lr: float = 1e-3, weight_decay: float = 1e-2,
                 decay: str = "touched", betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, *,
                 lazy: bool = True):
        self.rule = rule
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, decay=decay, betas=betas, eps=eps,
                                      lazy=lazy))

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_number(self._name, "weight_decay", group["weight_decay"], low=0.0)
        check_number(self._name, "eps", group["eps"], low=0.0, low_inclusive=False)
        if group["decay"] not in ("touched", "catch_up"):
            raise ValueError(f"RowAdamW: decay must be 'touched' or 'catch_up', got {group['decay']!r}")
        if not isinstance(group["lazy"], bool):
            raise TypeError(f"RowAdamW: lazy must be True or False, got {group['lazy']!r}")

    def _new_state(self, p: Tensor) -> dict[str, Any]:
        rows = _as_rows(p.data)
        return {"step": 0, "exp_avg": np.zeros_like(rows), "exp_avg_sq": np.zeros_like(rows),
                "last_present": np.zeros(len(rows), dtype=np.int64)}

    def _step_param(self, p: Tensor, grad: np.ndarray | RowSparse, group: dict[str, Any]) -> None:
        state = self._state_of(p)
        state["step"] += 1
        t, values = state["step"], _as_rows(p.data)
        rows: np.ndarray | slice
        g: np.ndarray | RowSparse
        if isinstance(grad, RowSparse) and group["lazy"]:
            rows, g, decay = grad.indices, grad.values, group["decay"]
        elif group["lazy"]:  # a dense gradient names every row: rows absent before settle what they owe
            rows, g, decay = slice(None), grad, group["decay"]
        else:  # every row, a row the gradient does not name with gradient zero
            rows, decay = slice(None), "touched"
            g = grad.to_dense() if isinstance(grad, RowSparse) else grad
        g = _as_rows(np.asarray(g)).reshape(-1, values.shape[1])
        new_rows, new_m, new_v = self.rule(
            values[rows].copy(), state["exp_avg"][rows].copy(), state["exp_avg_sq"][rows].copy(), g.copy(), t,
            state["last_present"][rows].copy(), group["lr"], group["weight_decay"], group["betas"],
            group["eps"], decay)
        values[rows] = new_rows
        state["exp_avg"][rows], state["exp_avg_sq"][rows] = new_m, new_v
        state["last_present"][rows] = t
        p._version += 1

    def second_moment(self, param: Tensor, bias_corrected: bool = False) -> np.ndarray:
        """The rule's v for every row of `param`, shaped like it (bias_corrected: / (1 - beta2**t))."""
        state = self._known_state(param)
        if not state:
            return np.zeros_like(param.data)
        v = state["exp_avg_sq"].reshape(param.shape).copy()
        if bias_corrected:
            v /= 1 - self._group_of(param)["betas"][1] ** state["step"]
        return v

    def flush(self) -> None:
        """catch_up: apply to every row the decay it owes for the steps since it was last present
        (afterwards they owe nothing, as if decayed on every step)."""
        with no_grad():
            for group in self.param_groups:
                if not group["lazy"] or group["decay"] != "catch_up":
                    continue
                for p in group["params"]:
                    state = self.state.get(p)
                    if not state:
                        continue
                    missed = state["step"] - state["last_present"]
                    owed = (1 - group["lr"] * group["weight_decay"]) ** missed
                    rows = _as_rows(p.data)
                    rows *= owed[:, None].astype(p.dtype)
                    state["last_present"][:] = state["step"]
                    p._version += 1


def _as_rows(array: np.ndarray) -> np.ndarray:
    """A parameter's array as rows, sharing its memory: (V, d) as it is, (n,) as (1, n), a 0-d
    number as (1, 1), (n, a, b) as (n, a * b)."""
    if array.ndim == 2:
        return array
    if array.ndim < 2:
        return array.reshape(1, -1)
    return array.reshape(array.shape[0], -1)


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
