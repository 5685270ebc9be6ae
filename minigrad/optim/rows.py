"""Lesson 7's row machinery: what an optimizer does to the rows of a table a gradient did not name.

- A gradient may be a `RowSparse` (the rows a batch read). By default it means what the dense
  array means: a missing row has gradient zero, and Adam's moments still move it. With
  `lazy=True` only the rows present update their moments and values (the rule of
  `torch.optim.SparseAdam`, here for every optimizer), so a step costs O(rows present), not O(V).
- `decay="dense" | "touched" | "catch_up"`: weight decay on every row every step; only on the
  rows present; or, for a row absent for k steps, the k missed factors (1 - lr*wd)**k applied
  when it is next present (or on `flush()`).
- Per-row bookkeeping for the lessons: `last_touched(p)`, the step each row last had a gradient.

`RowOptimizer` adds this to the PyTorch-style base (optimizer.py); SGD, Adam and AdamW
(optimizers.py) define only their update rule, `_update`, on the rows this machinery hands them.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from types import EllipsisType, FrameType
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor, check_in_range, no_grad
from minigrad.optim.optimizer import Optimizer, check_number

DECAY_MODES = ("dense", "touched", "catch_up")

# Per-row bookkeeping in a parameter's state, one entry per row:
#   last_touched:    the step at which the row last had a gradient (0: never)
#   decayed_through: for catch_up, the running sum of log(1 - lr*wd) when the row was last decayed
ROW_STATE = {"last_touched": np.int64, "decayed_through": np.float64}


class PerformanceWarning(UserWarning):
    """A setting that works as asked but costs more than the learner probably meant."""


# ---- which rows one step works on ------------------------------------------------------------
class StepRows:
    """The rows of one parameter that one step works on.

    present: the rows the gradient names (an index array), or `...` for a dense gradient
    rows:    the rows the update rule runs on: `present` when lazy, else `...` (every row)
    grad:    the gradient of `rows`: (n, *row_shape) for an index array, else the full shape
    present_in_rows: `present` addressed inside the arrays that `take` returns
    decay:   a factor the update multiplies every row of p by before its step, or None
    """

    present: np.ndarray | EllipsisType
    rows: np.ndarray | EllipsisType
    present_in_rows: np.ndarray | EllipsisType
    grad: np.ndarray
    decay: float | None = None

    def __init__(self, grad: np.ndarray | RowSparse, lazy: bool):
        if not isinstance(grad, RowSparse):
            self.present = self.rows = self.present_in_rows = ...
            self.grad = grad
        elif lazy:
            self.present = self.rows = grad.indices
            self.present_in_rows = ...
            self.grad = grad.values
        else:  # dense semantics: a missing row has gradient zero
            self.present = self.present_in_rows = grad.indices
            self.rows = ...
            self.grad = grad.to_dense()

    def take(self, array: np.ndarray) -> np.ndarray:
        """The rows of `array` this step updates: a view of every row, or a copy of some rows."""
        if self.rows is Ellipsis:
            return array[...]
        return np.take(array, self.rows, axis=0)  # measured faster than array[rows] on big tables

    def put(self, array: np.ndarray, rows: np.ndarray) -> None:
        """Write rows from `take` back (a view of every row was updated in place already)."""
        if self.rows is not Ellipsis:
            array[self.rows] = rows


def zeros_written(like: np.ndarray) -> np.ndarray:
    """Zeros in memory that is really written now. np.zeros maps untouched pages lazily, so a
    lazy step that first reaches a rare row would pay a page fault then: once at creation (as
    PyTorch's zeros_like does) keeps every later step O(rows present)."""
    return np.full_like(like, 0)


def per_row(factor: np.ndarray, ndim: int) -> np.ndarray:
    """A (n,) factor shaped to scale n rows of an array with `ndim` dims."""
    return factor.reshape(factor.shape + (1,) * max(ndim - 1, 0))


# ---- the optimizer that knows about rows ------------------------------------------------------
class RowOptimizer(Optimizer):
    """The base of SGD, Adam and AdamW: lazy rows, the three decay modes, per-row bookkeeping.

    A subclass defines `_update(p, p_rows, grad, rows, group, state)`: one step of its rule on
    the rows `rows.take` gave, in place. Weight decay, lazy rows and catch-up are handled here.
    Every group has the options `lr`, `weight_decay`, `lazy` and `decay`.
    """

    # AdamW: decay multiplies the weights (p *= 1 - lr*wd); SGD and Adam add wd * p to the gradient.
    decoupled_decay = False
    # True when `_update` applies `rows.decay` (1 - lr*wd, or None) to p first, in its own pass
    decays_in_update = False
    decay_modes: tuple[str, ...] = DECAY_MODES

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        name = self._name
        check_number(name, "weight_decay", group["weight_decay"], low=0.0)
        decay, lazy, wd = group["decay"], group["lazy"], group["weight_decay"]
        if not isinstance(lazy, bool):
            raise TypeError(f"{name}: lazy must be True or False, got {lazy!r}")
        if decay is None:  # the group records what was chosen, so repr and state_dict show it
            group["decay"] = decay = self._default_decay(lazy, wd)
        if decay not in DECAY_MODES:
            raise ValueError(f"{name}: decay must be one of {', '.join(map(repr, DECAY_MODES))} "
                             f"or None, got {decay!r}")
        if decay not in self.decay_modes:
            raise ValueError(self._unsupported_decay_message(decay))
        if lazy and wd and decay == "dense":
            self._check_lazy_dense_decay(wd)
        if decay == "catch_up":
            _catch_up_keep(name, group["lr"], wd)

    def _check_lazy_dense_decay(self, wd: float) -> None:
        """lazy=True with decay='dense' and weight decay: AdamW can (every row decays, each step
        O(V): a PerformanceWarning says so); an optimizer whose decay is in the gradient cannot."""
        name = self._name
        if self.decoupled_decay:
            warnings.warn(
                f"{name}(lazy=True, decay='dense', weight_decay={wd}) multiplies every row of the "
                "table by (1 - lr*wd) each step, so a lazy step costs O(V), not O(rows present); "
                "leave decay unset (None) or pass decay='catch_up' for the same decay paid when a "
                "row is next present, in O(rows present)",
                PerformanceWarning, stacklevel=_caller_outside_optim())
            return
        raise ValueError(
            f"{name}(lazy=True) cannot use decay='dense' with weight_decay={wd}: {name} adds "
            "weight_decay * p to the gradient, and a lazy step runs only on the rows present, so "
            "absent rows cannot be decayed without being stepped; leave decay unset (for "
            f"{self._default_decay(True, wd)!r}) or use decay="
            + " or ".join(repr(m) for m in self.decay_modes if m != "dense") + ", or lazy=False"
        )

    def _default_decay(self, lazy: bool, wd: float) -> str:
        """decay=None: PyTorch's dense decay, unless the step is lazy and there is decay to
        apply; then the mode that keeps a lazy step O(rows present): catch_up where the
        optimizer can catch up, else touched."""
        if not (lazy and wd):
            return "dense"
        return "catch_up" if "catch_up" in self.decay_modes else "touched"

    def _unsupported_decay_message(self, decay: str) -> str:
        return f"{self._name}: decay={decay!r} is not supported"

    # ---- one step on one parameter ----------------------------------------------------------
    def _step_param(self, p: Tensor, grad: np.ndarray | RowSparse, group: dict[str, Any]) -> None:
        state = self._state_of(p)
        state["step"] += 1
        rows = StepRows(grad, group["lazy"])
        lr, wd, decay = group["lr"], group["weight_decay"], group["decay"]
        every_row_decays = wd and decay == "dense" and self.decoupled_decay
        if every_row_decays and rows.rows is Ellipsis and self.decays_in_update:
            rows.decay = 1 - lr * wd  # the update multiplies each row in its own pass (fewer passes)
        elif every_row_decays:
            p.data *= 1 - lr * wd  # every row decays, named by the gradient or not
        p_rows = rows.take(p.data)
        grad_rows = self._decay_rows(p_rows, rows, group, state)
        self._update(p, p_rows, grad_rows, rows, group, state)
        rows.put(p.data, p_rows)
        state["last_touched"][rows.present] = state["step"]
        p._version += 1

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        raise NotImplementedError

    def _decay_rows(self, p_rows: np.ndarray, rows: StepRows, group: dict[str, Any],
                    state: dict[str, Any]) -> np.ndarray:
        """Apply this step's row-wise weight decay to `p_rows`; return the gradient to step with.

        dense:    every row (AdamW did it on the whole table already; SGD/Adam fold wd * p into g)
        touched:  the rows present only
        catch_up: as touched, after multiplying each present row by the factors it missed
        """
        lr, wd, decay = group["lr"], group["weight_decay"], group["decay"]
        grad, present = rows.grad, rows.present_in_rows
        if decay == "dense":
            return grad + wd * p_rows if wd and not self.decoupled_decay else grad
        factor: Any = None  # what multiplies the present rows
        if decay == "catch_up":
            factor = per_row(self._settle_catch_up(state, rows.present, lr, wd), p_rows.ndim)
        if wd and self.decoupled_decay:
            factor = (1 - lr * wd) * (1.0 if factor is None else factor)
        if factor is not None:
            p_rows[present] *= np.asarray(factor, dtype=p_rows.dtype)
        if not wd or self.decoupled_decay:
            return grad
        if present is Ellipsis:
            return grad + wd * p_rows
        grad[present] += wd * p_rows[present]  # grad is our own densified copy here
        return grad

    def _settle_catch_up(self, state: dict[str, Any], present: Any, lr: float, wd: float) -> np.ndarray:
        """The decay each present row owes for the steps it missed; book this step as decayed.

        `decay_log` sums log(1 - lr*wd) over the steps taken; a row's mark is that sum when it
        was last decayed, so it owes exp(sum - mark): (1 - lr*wd)**k for k missed steps at a
        constant lr, and the exact product when lr changes.
        """
        if "decayed_through" not in state:  # the first catch-up step: nothing owed yet
            state["decay_log"] = 0.0
            state["decayed_through"] = np.zeros(state["last_touched"].shape, ROW_STATE["decayed_through"])
        marks = state["decayed_through"]
        owed = np.exp(state["decay_log"] - marks[present])
        state["decay_log"] += math.log(_catch_up_keep(self._name, lr, wd))
        marks[present] = state["decay_log"]
        return owed

    def flush(self) -> None:
        """Apply the decay every row still owes under decay='catch_up' (before evaluating,
        saving or reading the weights). Afterwards momentum-free rows equal dense decay exactly
        when their gradients did not depend on their own value (see docs/optim.md)."""
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state.get(p)
                    if not state or "decayed_through" not in state:
                        continue
                    marks = state["decayed_through"]
                    owed = np.exp(state["decay_log"] - marks)
                    p.data *= per_row(owed, p.ndim).astype(p.dtype)
                    marks[...] = state["decay_log"]
                    p._version += 1

    # ---- per-row state ----------------------------------------------------------------------
    def _new_state(self, p: Tensor) -> dict[str, Any]:
        last_touched = np.zeros(p.shape[:1], dtype=ROW_STATE["last_touched"])
        return {**super()._new_state(p), "last_touched": last_touched}

    def _state_layout(self, p: Tensor, key: str) -> tuple[tuple[int, ...], np.dtype]:
        # per-row bookkeeping has one entry a row; moments and buffers are shaped like the parameter
        if key in ROW_STATE:
            return p.shape[:1], np.dtype(ROW_STATE[key])
        return super()._state_layout(p, key)

    def last_touched(self, param: Tensor) -> np.ndarray:
        """(V,) int64: the step at which each row last appeared in `param`'s gradient (0: never).

        A dense gradient touches every row; a RowSparse gradient touches the rows it names.
        """
        state = self._known_state(param)
        return state["last_touched"].copy() if state else np.zeros(param.shape[:1], dtype=np.int64)


def _catch_up_keep(name: str, lr: float, wd: float) -> float:
    """1 - lr*wd, the factor of one step of decay; catch-up needs it positive to take its log."""
    keep = 1 - lr * wd
    if keep <= 0:
        raise ValueError(f"{name}: decay='catch_up' needs lr * weight_decay < 1, got lr={lr}, "
                         f"weight_decay={wd} (lr * weight_decay = {lr * wd:g})")
    return keep


def check_rows(rows: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """`rows` as an int array of row ids of a parameter of `shape`, or a clear error."""
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        raise TypeError(f"{name}: rows must be integer row ids, got dtype {rows.dtype}")
    if not shape:
        raise ValueError(f"{name}: a 0-d parameter has no rows; pass rows=None")
    check_in_range(rows, shape[0], who=name, item="row", name="rows",
                   range_of=f"a parameter with {shape[0]} rows")
    return rows


_OPTIM_DIR = Path(__file__).resolve().parent


def _caller_outside_optim() -> int:
    """The stacklevel of the first frame outside minigrad/optim, so a warning points at the
    user's line however deep the constructor chain (AdamW -> Adam -> Optimizer -> add_param_group)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and Path(frame.f_code.co_filename).resolve().parent == _OPTIM_DIR:
        frame, level = frame.f_back, level + 1
    return level
