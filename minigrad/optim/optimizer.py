"""The optimizer base class: what every optimizer shares with `torch.optim.Optimizer`.

Parameter groups with per-group options, one state dict per parameter, `zero_grad`, `step`
with a closure, and `state_dict` / `load_state_dict` in PyTorch's layout. Nothing here knows
about rows: a subclass defines `_step_param(p, grad, group)`, one step of its rule on one
parameter. The row machinery of lesson 7 (lazy rows, the three decay modes) is one such
subclass, in rows.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor, enable_grad, no_grad, zeroed

# Options a group may hold beyond the optimizer's defaults: a scheduler records each group's
# starting lr as "initial_lr" (as in PyTorch), and it travels with the optimizer's state.
SCHEDULER_OPTIONS = ("initial_lr",)


class Optimizer:
    """Parameter groups and per-parameter state, as `torch.optim.Optimizer` keeps them.

    defaults: every option and its default; a group leaves out what it takes from here.
    A subclass overrides `step()` as in PyTorch, or defines `_step_param(p, grad, group)` for
    the loop here to call; it may extend `_check_group(group)`.
    """

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
        self._check_known(group, f"in parameter group {index}")
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

    def _check_known(self, group: dict[str, Any], where: str) -> None:
        unknown = sorted(set(group) - set(self.defaults) - {"params", *SCHEDULER_OPTIONS})
        if unknown:
            raise ValueError(f"{self._name}: unknown option {unknown[0]!r} {where}; "
                             f"the options are {sorted(self.defaults)}")

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise a clear error for an option value this optimizer cannot use."""
        check_number(self._name, "lr", group["lr"], low=0.0)
        if "initial_lr" in group:
            check_number(self._name, "initial_lr", group["initial_lr"], low=0.0)

    # ---- stepping ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: `.grad = None` (the default, as in PyTorch), or
        with set_to_none=False zeros of the same layout (a dense array zeroed in place; a
        RowSparse becomes one with no rows, so a lookup table's gradient stays sparse)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None if set_to_none else zeroed(p.grad)

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
        """One step of this optimizer's rule on `p`, in place; grad has p's shape and dtype."""
        raise NotImplementedError(f"{self._name} has no update rule: define step() (as a PyTorch "
                                  "optimizer does) or _step_param(p, grad, group)")

    # ---- state -----------------------------------------------------------------------------
    def _state_of(self, p: Tensor) -> dict[str, Any]:
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = self._new_state(p)
        return state

    def _new_state(self, p: Tensor) -> dict[str, Any]:
        return {"step": 0}

    def _state_layout(self, p: Tensor, key: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype a saved state array `key` of `p` must have: p's own, here."""
        return p.shape, p.dtype

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
        """Restore what `state_dict()` returned, for an optimizer over parameters of the same shapes.

        The saved options replace the groups' own, `initial_lr` included when a scheduler ran.
        """
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
            self._check_known(group, "in the state")
            self._check_group(group)
            new_groups.append(group)
        new_state = {}
        for key, saved in state_dict["state"].items():
            if key not in by_index:
                raise KeyError(f"{name}.load_state_dict: the state has an entry for parameter {key}, "
                               f"which no group lists")
            p = by_index[key]
            new_state[p] = {k: self._restored(v, p, k) for k, v in saved.items()}
        self.param_groups[:] = new_groups
        self.state = new_state

    def _restored(self, value: Any, p: Tensor, key: str) -> Any:
        """A copy of one saved state entry, checked against the parameter it belongs to."""
        if not isinstance(value, np.ndarray):
            return value
        shape, dtype = self._state_layout(p, key)
        if value.shape != shape:
            raise ValueError(f"{self._name}.load_state_dict: state {key!r} has shape {value.shape}, "
                             f"but the parameter has shape {p.shape}")
        return value.astype(dtype, copy=True)

    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    # ---- introspection ---------------------------------------------------------------------
    def _known_state(self, param: Tensor) -> dict[str, Any] | None:
        if not any(p is param for p in self._all_params()):
            raise ValueError(f"{self._name}: this optimizer does not hold the parameter of shape "
                             f"{getattr(param, 'shape', None)} (is it from another model?)")
        return self.state.get(param)

    def _group_of(self, param: Tensor) -> dict[str, Any]:
        return next(g for g in self.param_groups if any(p is param for p in g["params"]))

    def step_count(self, param: Tensor) -> int:
        """How many steps have updated `param` (steps without a gradient for it do not count)."""
        state = self._known_state(param)
        return state["step"] if state else 0

    def __repr__(self) -> str:
        lines = [f"{self._name} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


# ---- argument checking -------------------------------------------------------------------------
def check_number(name: str, arg: str, value: Any, *, low: float, high: float | None = None,
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
        if p.grad_fn is not None:  # not a leaf
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

