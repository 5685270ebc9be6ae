"""Optimizers that know about rare rows: SGD, Adam and AdamW, dense or lazy, with three
semantics for weight decay on the rows a gradient did not name.

Formulas and defaults are PyTorch's (`torch.optim.SGD`, `Adam`, `AdamW`), so a run here can be
compared number for number with a run there. What is added is what an embedding table needs:

- A gradient may be a `RowSparse` (the rows a batch read). By default it means what the dense
  array means: a missing row has gradient zero, and Adam's moments still move it. With
  `lazy=True` only the rows present update their moments and values (the rule of
  `torch.optim.SparseAdam`, here for every optimizer), so a step costs O(rows present), not O(V).
- `decay="dense" | "touched" | "catch_up"`: weight decay on every row every step; only on the
  rows present; or, for a row absent for k steps, the k missed factors (1 - lr*wd)**k applied
  when it is next present (or on `flush()`).
- Introspection for the lessons: `last_touched(p)` (the step each row last had a gradient),
  `step_count(p)`, and Adam's `second_moment(p, rows)`.

Every update runs in place under `no_grad()` and bumps the parameter's version: tied
parameters and views keep sharing memory, and a pending backward that saved a parameter
notices that it changed.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor, check_in_range, enable_grad, fast, no_grad

DECAY_MODES = ("dense", "touched", "catch_up")


class PerformanceWarning(UserWarning):
    """A setting that works as asked but costs more than the learner probably meant."""


def _caller_outside_optim() -> int:
    """The stacklevel of the first frame outside this file, so a warning points at the user's
    line however deep the constructor chain (AdamW -> Adam -> Optimizer -> add_param_group)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level
# Per-row bookkeeping in a parameter's state, one entry per row:
#   last_touched:    the step at which the row last had a gradient (0: never)
#   decayed_through: for catch_up, the running sum of log(1 - lr*wd) when the row was last decayed
ROW_STATE = {"last_touched": np.int64, "decayed_through": np.float64}


# ---- which rows one step works on ------------------------------------------------------------
class _StepRows:
    """The rows of one parameter that one step works on.

    present: the rows the gradient names (an index array), or `...` for a dense gradient
    rows:    the rows the update rule runs on: `present` when lazy, else `...` (every row)
    grad:    the gradient of `rows`: (n, *row_shape) for an index array, else the full shape
    present_in_rows: `present` addressed inside the arrays that `take` returns
    decay:   a factor the update multiplies every row of p by before its step, or None
    """

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


def _zeros_written(like: np.ndarray) -> np.ndarray:
    """Zeros in memory that is really written now. np.zeros maps untouched pages lazily, so a
    lazy step that first reaches a rare row would pay a page fault then: once at creation (as
    PyTorch's zeros_like does) keeps every later step O(rows present)."""
    return np.full_like(like, 0)


def _per_row(factor: np.ndarray, ndim: int) -> np.ndarray:
    """A (n,) factor shaped to scale n rows of an array with `ndim` dims."""
    return factor.reshape(factor.shape + (1,) * max(ndim - 1, 0))


# ---- the base class ------------------------------------------------------------------------
class Optimizer:
    """Parameter groups, per-parameter state, and the row bookkeeping every optimizer shares.

    A subclass defines `_update(p, p_rows, grad, rows, group, state)`: one step of its rule on the
    rows `rows.take` gave, in place. Weight decay, lazy rows and catch-up are handled here.
    """

    # AdamW: decay multiplies the weights (p *= 1 - lr*wd); SGD and Adam add wd * p to the gradient.
    decoupled_decay = False
    # True when `_update` applies `rows.decay` (1 - lr*wd, or None) to p first, in its own pass
    decays_in_update = False
    decay_modes: tuple[str, ...] = DECAY_MODES

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]):
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Tensor, dict[str, Any]] = {}
        for group in _as_groups(params, self._name):
            self.add_param_group(group)

    @property
    def _name(self) -> str:
        return type(self).__name__

    # ---- parameter groups -----------------------------------------------------------------
    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add `{"params": [...], option: value, ...}`; options not given take the defaults."""
        index = len(self.param_groups)
        if not isinstance(group, dict):
            raise TypeError(f"{self._name}: a parameter group must be a dict with a 'params' key, "
                            f"got {type(group).__name__}")
        if "params" not in group:
            raise ValueError(f"{self._name}: parameter group {index} has no 'params' key")
        unknown = sorted(set(group) - set(self.defaults) - {"params"})
        if unknown:
            raise ValueError(f"{self._name}: unknown option {unknown[0]!r} in parameter group {index}; "
                             f"the options are {sorted(self.defaults)}")
        params = _param_list(group["params"], self._name, index)
        full = {**self.defaults, **group, "params": params}
        self._check_group(full)
        owner = {id(p): i for i, g in enumerate(self.param_groups) for p in g["params"]}
        seen: set[int] = set()
        for position, p in enumerate(params):
            label = _label(p, index, position)
            if id(p) in seen:
                raise ValueError(f"{self._name}: {label} is listed twice in parameter group {index}; "
                                 "a parameter (even a tied one) is stepped once, so list it once")
            if id(p) in owner:
                raise ValueError(f"{self._name}: {label} is already in parameter group {owner[id(p)]}; "
                                 "a parameter can belong to one group only")
            seen.add(id(p))
        self.param_groups.append(full)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise a clear error for an option value this optimizer cannot use."""
        name = self._name
        _check_number(name, "lr", group["lr"], low=0.0)
        _check_number(name, "weight_decay", group["weight_decay"], low=0.0)
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
        if lazy and wd and decay == "dense" and self.decoupled_decay:
            warnings.warn(
                f"{name}(lazy=True, decay='dense', weight_decay={wd}) multiplies every row of the "
                "table by (1 - lr*wd) each step, so a lazy step costs O(V), not O(rows present); "
                "leave decay unset (None) or pass decay='catch_up' for the same decay paid when a "
                "row is next present, in O(rows present)",
                PerformanceWarning, stacklevel=_caller_outside_optim())
        if lazy and wd and decay == "dense" and not self.decoupled_decay:
            raise ValueError(
                f"{name}(lazy=True) cannot use decay='dense' with weight_decay={wd}: {name} adds "
                "weight_decay * p to the gradient, and a lazy step runs only on the rows present, so "
                "absent rows cannot be decayed without being stepped; leave decay unset (for "
                f"{self._default_decay(True, wd)!r}) or use decay="
                + " or ".join(repr(m) for m in self.decay_modes if m != "dense") + ", or lazy=False"
            )
        if decay == "catch_up":
            _catch_up_keep(name, group["lr"], wd)

    def _default_decay(self, lazy: bool, wd: float) -> str:
        """decay=None: PyTorch's dense decay, unless the step is lazy and there is decay to
        apply; then the mode that keeps a lazy step O(rows present): catch_up where the
        optimizer can catch up, else touched."""
        if not (lazy and wd):
            return "dense"
        return "catch_up" if "catch_up" in self.decay_modes else "touched"

    def _unsupported_decay_message(self, decay: str) -> str:
        return f"{self._name}: decay={decay!r} is not supported"

    # ---- stepping ---------------------------------------------------------------------------
    def zero_grad(self) -> None:
        """Forget every parameter's gradient (`.grad = None`, as PyTorch does by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; return `closure()`'s loss if given.

        A parameter whose `.grad` is None, or an empty RowSparse, is left exactly as it is.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for index, group in enumerate(self.param_groups):
                for position, p in enumerate(group["params"]):
                    grad = _read_grad(p, self._name, index, position)
                    if grad is not None:
                        self._step_param(p, grad, group)
        return loss

    def _step_param(self, p: Tensor, grad: np.ndarray | RowSparse, group: dict[str, Any]) -> None:
        state = self._state_of(p)
        state["step"] += 1
        rows = _StepRows(grad, group["lazy"])
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

    def _decay_rows(self, p_rows: np.ndarray, rows: _StepRows, group: dict[str, Any],
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
            factor = _per_row(self._settle_catch_up(state, rows.present, lr, wd), p_rows.ndim)
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
                    p.data *= _per_row(owed, p.ndim).astype(p.dtype)
                    marks[...] = state["decay_log"]
                    p._version += 1

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: _StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        raise NotImplementedError

    # ---- state -----------------------------------------------------------------------------
    def _state_of(self, p: Tensor) -> dict[str, Any]:
        state = self.state.get(p)
        if state is None:
            state = {"step": 0, "last_touched": np.zeros(p.shape[:1], dtype=ROW_STATE["last_touched"])}
            self.state[p] = state
        return state

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {...}}, "param_groups": [{options, "params": [index, ...]}]}.

        Parameters are numbered in group order, as in PyTorch. Arrays are copies: the snapshot
        does not change as training goes on.
        """
        index = {id(p): i for i, p in enumerate(self._all_params())}
        groups = [{**{k: v for k, v in g.items() if k != "params"},
                   "params": [index[id(p)] for p in g["params"]]} for g in self.param_groups]
        state = {index[id(p)]: {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v
                                for k, v in s.items()} for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned, for an optimizer over parameters of the same shapes."""
        name = self._name
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state has {len(saved_groups)} parameter "
                             f"groups, this optimizer has {len(self.param_groups)}")
        by_index: dict[int, Tensor] = {}
        for i, (saved, own) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError(f"{name}.load_state_dict: parameter group {i} has "
                                 f"{len(saved['params'])} parameters in the state but "
                                 f"{len(own['params'])} in this optimizer")
            by_index.update(zip(saved["params"], own["params"]))
        new_groups = []
        for saved, own in zip(saved_groups, self.param_groups):
            group = {**own, **{k: v for k, v in saved.items() if k != "params"}}
            unknown = sorted(set(group) - set(self.defaults) - {"params"})
            if unknown:
                raise ValueError(f"{name}.load_state_dict: unknown option {unknown[0]!r} in the state")
            self._check_group(group)
            new_groups.append(group)
        new_state = {}
        for key, saved in state_dict["state"].items():
            if key not in by_index:
                raise KeyError(f"{name}.load_state_dict: the state has an entry for parameter {key}, "
                               f"which no group lists")
            p = by_index[key]
            new_state[p] = {k: _restored(v, p, k, name) for k, v in saved.items()}
        self.param_groups[:] = new_groups
        self.state = new_state

    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    # ---- introspection ---------------------------------------------------------------------
    def _known_state(self, param: Tensor) -> dict[str, Any] | None:
        if not any(p is param for p in self._all_params()):
            raise ValueError(f"{self._name}: this optimizer does not hold the parameter of shape "
                             f"{getattr(param, 'shape', None)} (is it from another model?)")
        return self.state.get(param)

    def step_count(self, param: Tensor) -> int:
        """How many steps have updated `param` (steps without a gradient for it do not count)."""
        state = self._known_state(param)
        return state["step"] if state else 0

    def last_touched(self, param: Tensor) -> np.ndarray:
        """(V,) int64: the step at which each row last appeared in `param`'s gradient (0: never).

        A dense gradient touches every row; a RowSparse gradient touches the rows it names.
        """
        state = self._known_state(param)
        return state["last_touched"].copy() if state else np.zeros(param.shape[:1], dtype=np.int64)

    def __repr__(self) -> str:
        lines = [f"{self._name} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


# ---- SGD -------------------------------------------------------------------------------------
class SGD(Optimizer):
    """Stochastic gradient descent with momentum, as `torch.optim.SGD`.

    g <- g + wd * p;  b <- momentum * b + (1 - dampening) * g  (b = g on the first step);
    g <- g + momentum * b if nesterov else b;  p <- p - lr * g.
    Lazy: a row's momentum buffer moves only on the steps the row is present.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 lazy: bool = False, decay: str | None = None):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, lazy=lazy,
                                      decay=decay))

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_number(self._name, "momentum", group["momentum"], low=0.0)
        _check_number(self._name, "dampening", group["dampening"], low=0.0, high=1.0, high_inclusive=True)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov=True needs momentum > 0 and dampening = 0, got "
                             f"momentum={group['momentum']}, dampening={group['dampening']}")

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: _StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = _zeros_written(p.data)
            buf = rows.take(state["momentum_buffer"])
            buf *= momentum
            buf += (1 - dampening) * grad
            if dampening:  # PyTorch starts the buffer at g itself, not at (1 - dampening) * g
                if group["lazy"]:  # per row: the first step that row is present
                    fresh = state["last_touched"][rows.rows] == 0
                    buf[fresh] = grad[fresh]
                elif state["step"] == 1:
                    buf[...] = grad
            rows.put(state["momentum_buffer"], buf)
            grad = grad + momentum * buf if group["nesterov"] else buf
        p_rows -= group["lr"] * grad


# ---- Adam and AdamW ----------------------------------------------------------------------------
class Adam(Optimizer):
    """Adam, as `torch.optim.Adam`: L2 weight decay folded into the gradient.

    g <- g + wd * p;  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps),  t = the parameter's step.
    Lazy: only present rows update m, v and p, and t counts the parameter's steps, as in
    `torch.optim.SparseAdam` (whose eps sits at sqrt(v) + eps before the bias correction).
    """

    decay_modes = ("dense", "touched")
    decays_in_update = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, *, lazy: bool = False,
                 decay: str | None = None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, lazy=lazy,
                                      decay=decay))

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        name, betas = self._name, group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            _check_number(name, f"betas[{i}]", beta, low=0.0, high=1.0)
        group["betas"] = (float(betas[0]), float(betas[1]))
        _check_number(name, "eps", group["eps"], low=0.0, low_inclusive=False)

    def _unsupported_decay_message(self, decay: str) -> str:
        return (f"{self._name}: decay={decay!r} needs decoupled weight decay (use AdamW): Adam adds "
                "weight_decay * p to the gradient, where the moments rescale it, so there is no "
                "(1 - lr*wd) factor to catch up")

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: _StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        if "exp_avg" not in state:
            state["exp_avg"], state["exp_avg_sq"] = _zeros_written(p.data), _zeros_written(p.data)
        (beta1, beta2), lr, eps, t = group["betas"], group["lr"], group["eps"], state["step"]
        m, v = rows.take(state["exp_avg"]), rows.take(state["exp_avg_sq"])

        def update(lo: int | None = None, hi: int | None = None) -> None:  # rows lo:hi, or all
            m_, v_, g, p_ = m[lo:hi], v[lo:hi], grad[lo:hi], p_rows[lo:hi]
            if rows.decay is not None:
                p_ *= rows.decay                           # AdamW's p <- p (1 - lr wd), in this pass
            scratch = g - m_                           # the one temporary
            scratch *= 1 - beta1
            m_ += scratch                              # m <- m + (1 - b1)(g - m), torch's lerp
            np.multiply(g, g, out=scratch)
            scratch *= 1 - beta2
            v_ *= beta2
            v_ += scratch                              # v <- b2 v + (1 - b2) g^2
            np.sqrt(v_, out=scratch)
            scratch /= math.sqrt(1 - beta2**t)
            scratch += eps                             # sqrt(v_hat) + eps
            np.divide(m_, scratch, out=scratch)
            scratch *= lr / (1 - beta1**t)             # lr * m_hat / (sqrt(v_hat) + eps)
            p_ -= scratch

        if p_rows.ndim == 0 or not fast.elementwise_in_row_blocks(p_rows, update):
            update()
        rows.put(state["exp_avg"], m)
        rows.put(state["exp_avg_sq"], v)

    def second_moment(self, param: Tensor, rows: Any = None, bias_corrected: bool = False) -> np.ndarray:
        """Adam's v for `rows` of `param` (every row if None): the running mean of g^2 that
        sets each row's step size. bias_corrected divides by 1 - beta2**t, as the step does.

        rows: an int or an int array in [0, V); returns v[rows] (a copy).
        """
        state = self._known_state(param)
        selection = slice(None) if rows is None else _check_rows(rows, param.shape, self._name)
        if not state or "exp_avg_sq" not in state:
            return np.zeros_like(param.data[selection])
        v = state["exp_avg_sq"][selection].copy()
        if bias_corrected:
            beta2 = self._group_of(param)["betas"][1]
            v /= 1 - beta2 ** state["step"]
        return v

    def _group_of(self, param: Tensor) -> dict[str, Any]:
        return next(g for g in self.param_groups if any(p is param for p in g["params"]))


class AdamW(Adam):
    """AdamW, as `torch.optim.AdamW`: p <- p * (1 - lr * wd), then the Adam step without L2.

    The decay is decoupled from the gradient, so the three `decay` semantics all apply: with
    catch_up a row absent for k steps is multiplied by (1 - lr*wd)**k when it is next present.
    """

    decoupled_decay = True
    decay_modes = DECAY_MODES

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, *, lazy: bool = False,
                 decay: str | None = None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, lazy=lazy,
                         decay=decay)


# ---- argument checking -------------------------------------------------------------------------
def _check_number(name: str, arg: str, value: Any, *, low: float, high: float | None = None,
                  low_inclusive: bool = True, high_inclusive: bool = False) -> None:
    """Raise unless low <= value < high (ends as given); NaN fails every comparison."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {arg} must be a number, got {type(value).__name__} {value!r}")
    above = value >= low if low_inclusive else value > low
    below = high is None or (value <= high if high_inclusive else value < high)
    if not (above and below):
        left = "[" if low_inclusive else "("
        if high is None:
            want = f">= {low:g}" if low_inclusive else f"> {low:g}"
        else:
            want = f"in {left}{low:g}, {high:g}{']' if high_inclusive else ')'}"
        raise ValueError(f"{name}: {arg} must be {want}, got {value}")


def _catch_up_keep(name: str, lr: float, wd: float) -> float:
    """1 - lr*wd, the factor of one step of decay; catch-up needs it positive to take its log."""
    keep = 1 - lr * wd
    if keep <= 0:
        raise ValueError(f"{name}: decay='catch_up' needs lr * weight_decay < 1, got lr={lr}, "
                         f"weight_decay={wd} (lr * weight_decay = {lr * wd:g})")
    return keep


def _as_groups(params: Any, name: str) -> list[dict[str, Any]]:
    """The `params` argument as a list of group dicts: an iterable of parameters is one group."""
    hint = "an iterable of Parameters, or of dicts (parameter groups)"
    if isinstance(params, (Tensor, np.ndarray, dict)):
        raise TypeError(f"{name}: params must be {hint}, got a single {type(params).__name__}; "
                        "wrap it in a list")
    if hasattr(params, "named_parameters"):
        raise TypeError(f"{name}: params must be {hint}, got a {type(params).__name__}; "
                        "pass model.parameters()")
    try:
        items = list(params)
    except TypeError:
        raise TypeError(f"{name}: params must be {hint}, got {type(params).__name__}") from None
    if not items:
        raise ValueError(f"{name}: got an empty parameter list (an exhausted generator? "
                         "model.parameters() can be iterated once)")
    kinds = {isinstance(item, dict) for item in items}
    if kinds == {True}:
        return items
    if kinds == {True, False}:
        raise TypeError(f"{name}: params mixes parameters and parameter-group dicts; use one or the other")
    return [{"params": items}]


def _param_list(params: Any, name: str, index: int) -> list[Tensor]:
    """A group's parameters, each checked to be a leaf Tensor that requires grad."""
    params = [params] if isinstance(params, Tensor) else list(params)
    if not params:
        raise ValueError(f"{name}: parameter group {index} has no parameters (an exhausted generator? "
                         "model.parameters() can be iterated once)")
    for position, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameter {position} of group {index} is a {type(p).__name__}, "
                            "not a Parameter (a leaf Tensor with requires_grad=True)")
        label = _label(p, index, position)
        if not p.requires_grad:
            raise ValueError(f"{name}: {label} does not require grad, so it never gets a gradient "
                             "to step with")
        if not p.is_leaf:
            raise ValueError(f"{name}: {label} is not a leaf: it was computed by {p.grad_fn.name}; "
                             "optimize the Parameters it was computed from")
    return params


def _label(p: Tensor, index: int, position: int) -> str:
    named = f" {p.name!r}" if getattr(p, "name", None) else ""
    return f"parameter {position}{named} of group {index} (shape {p.shape})"


def _read_grad(p: Tensor, name: str, index: int, position: int) -> np.ndarray | RowSparse | None:
    """p.grad in p's dtype, a RowSparse coalesced; None if absent or naming no row."""
    grad = p.grad
    if grad is None:
        return None
    if isinstance(grad, RowSparse):
        if grad.shape != p.shape:
            raise ValueError(f"{name}.step: {_label(p, index, position)} has a RowSparse gradient of "
                             f"shape {grad.shape}")
        grad = grad.coalesce()  # the update is not linear in g, so each row must appear once
        if grad.indices.size == 0:
            return None  # nothing reached this table: a no-op, like a missing gradient
        if grad.values.dtype != p.dtype:
            grad = RowSparse(grad.indices, grad.values.astype(p.dtype), grad.shape, coalesced=True)
        return grad
    grad = np.asarray(grad)
    if grad.shape != p.shape:
        raise ValueError(f"{name}.step: {_label(p, index, position)} has a gradient of shape {grad.shape}")
    return grad.astype(p.dtype, copy=False)


def _check_rows(rows: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        raise TypeError(f"{name}: rows must be integer row ids, got dtype {rows.dtype}")
    if not shape:
        raise ValueError(f"{name}: a 0-d parameter has no rows; pass rows=None")
    check_in_range(rows, shape[0], who=name, item="row", name="rows",
                   range_of=f"a parameter with {shape[0]} rows")
    return rows


def _restored(value: Any, p: Tensor, key: str, name: str) -> Any:
    """A copy of one saved state entry, checked against the parameter it belongs to."""
    if not isinstance(value, np.ndarray):
        return value
    # per-row bookkeeping has one entry a row; moments and buffers are shaped like the parameter
    shape, dtype = (p.shape[:1], ROW_STATE[key]) if key in ROW_STATE else (p.shape, p.dtype)
    if value.shape != shape:
        raise ValueError(f"{name}.load_state_dict: state {key!r} has shape {value.shape}, but the "
                         f"parameter has shape {p.shape}")
    return value.astype(dtype, copy=True)
