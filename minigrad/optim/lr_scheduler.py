"""Learning-rate schedules, named and behaving as in `torch.optim.lr_scheduler`.

A scheduler sets `group["lr"]` of every parameter group of an optimizer. As in PyTorch,
constructing one applies epoch 0 at once, and each `scheduler.step()` (after `optimizer.step()`)
moves one epoch on. Warmup then cosine decay is one line:

    SequentialLR(opt, [LinearLR(opt, 0.01, total_iters=w), CosineAnnealingLR(opt, T_max=n - w)],
                 milestones=[w])

and the lessons' own warm-up and cosine (`warmup_cosine`, below) is one function of the step,
for `LambdaLR` or for setting `group["lr"]` by hand.

A scheduler's `state_dict()` is plain data, as in PyTorch: numbers, lists and dicts, never the
optimizer or a function. `load_state_dict` restores the epoch into a scheduler built on the new
optimizer, with its own lr_lambda; SequentialLR saves and restores each of its schedulers.

Each schedule here is a closed form of the epoch and the group's initial lr. PyTorch computes
LinearLR and CosineAnnealingLR step by step from the current lr instead; the two agree (to
rounding) unless something else changes the lr between steps, which these schedules overwrite.
"""

from __future__ import annotations

import bisect
import copy
import functools
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minigrad.engine import positive_int

LrLambda = Callable[[int], float]  # LambdaLR's factor for an epoch


def warmup_cosine(step: int, total: int, peak: float = 1.0, *, floor: float = 0.1,
                  warmup: int | None = None) -> float:
    """The learning rate at `step` (0-based) of `total`: a linear warm-up to `peak` over the first
    `warmup` steps (default 5% of the steps, at least one), then a cosine decay to floor * peak at
    the end: how language models are usually trained. With peak=1.0 it is a factor for `LambdaLR`.

    The one warm-up + cosine of minigrad: the lesson kit re-exports it and `cosine_with_warmup`
    (CS336's spelling) is it with CS336's arguments. The same numbers (to rounding) as SequentialLR
    of LinearLR(start_factor=1/w, total_iters=max(1, w-1)) and CosineAnnealingLR(T_max=total-w,
    eta_min=floor*peak) at milestone w (tests/optim/test_lr_scheduler.py checks it against torch).
    """
    warm = max(1, total // 20) if warmup is None else warmup
    if step < warm:
        return peak * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return float(peak * (floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * progress))))


def cosine_with_warmup(it: int, max_learning_rate: float, min_learning_rate: float,
                       warmup_iters: int, cosine_cycle_iters: int) -> float:
    """The learning rate at iteration `it` as Stanford CS336's assignment 1 defines it: a linear
    warm-up from 0 to max_learning_rate over warmup_iters iterations, a cosine from
    max_learning_rate down to min_learning_rate by iteration cosine_cycle_iters, then
    min_learning_rate from there on. The cosine is `warmup_cosine`'s; only the warm-up differs
    (CS336's starts at 0, the lessons' one step above it)."""
    if warmup_iters < 0 or cosine_cycle_iters < warmup_iters:
        raise ValueError(f"cosine_with_warmup: need 0 <= warmup_iters <= cosine_cycle_iters, got "
                         f"warmup_iters={warmup_iters}, cosine_cycle_iters={cosine_cycle_iters}")
    if not 0 <= min_learning_rate <= max_learning_rate:
        raise ValueError(f"cosine_with_warmup: need 0 <= min_learning_rate <= max_learning_rate, got "
                         f"min_learning_rate={min_learning_rate}, max_learning_rate={max_learning_rate}")
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters or cosine_cycle_iters == warmup_iters or max_learning_rate == 0:
        return min_learning_rate
    floor = min_learning_rate / max_learning_rate
    return warmup_cosine(it, cosine_cycle_iters, max_learning_rate, floor=floor, warmup=warmup_iters)


class LRScheduler:
    """Base: `lr_at(base_lr, epoch, group)` is the schedule; this class keeps the epoch and the groups."""

    def __init__(self, optimizer: Any, last_epoch: int = -1):
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{type(self).__name__}: optimizer must be an Optimizer (with param_groups), "
                            f"got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])  # the first scheduler on a group records it
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int, group: int) -> float:
        """The lr of parameter group `group` (initial lr `base_lr`) at `epoch`."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or to `epoch`) and set every group's lr."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._last_lr = [float(self.lr_at(base, self.last_epoch, i)) for i, base in enumerate(self.base_lrs)]
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def get_last_lr(self) -> list[float]:
        """The lr of every group as this scheduler last set it."""
        return list(self._last_lr)

    # what state_dict() leaves out: the optimizer (the state loads into a scheduler built on
    # another one) and, in a subclass, what it saves in its own way
    _not_saved: tuple[str, ...] = ("optimizer",)

    def state_dict(self) -> dict[str, Any]:
        """Where the schedule is, as plain data (copies): the epoch, the initial and the last
        lrs, and the schedule's settings."""
        return {key: copy.deepcopy(value) for key, value in self.__dict__.items()
                if key not in self._not_saved}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from what `state_dict()` returned; this scheduler keeps its optimizer, whose
        groups get the lrs the schedule was at (so it does not matter whether the optimizer's
        state was loaded before this scheduler was built, which applied epoch 0, or after)."""
        self._check_keys(state_dict)
        self._restore(state_dict)

    def _check_keys(self, state_dict: Any) -> None:
        """Raise unless `state_dict` is a dict with exactly the keys this scheduler saves."""
        name = type(self).__name__
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict: expected the dict that state_dict() returns, "
                            f"got {type(state_dict).__name__}")
        expected = set(self.state_dict())
        missing, unexpected = sorted(expected - set(state_dict)), sorted(set(state_dict) - expected)
        if missing or unexpected:
            raise ValueError(f"{name}.load_state_dict: the state does not fit this scheduler "
                             f"(missing {missing}, unexpected {unexpected}); was it saved from "
                             "another kind of scheduler?")
        groups = len(self.optimizer.param_groups)
        if len(state_dict["base_lrs"]) != groups:
            raise ValueError(f"{name}.load_state_dict: the state is for {len(state_dict['base_lrs'])} "
                             f"parameter groups, this optimizer has {groups}")

    def _restore(self, state_dict: dict[str, Any]) -> None:
        for key in [k for k in self.__dict__ if k not in self._not_saved]:
            setattr(self, key, copy.deepcopy(state_dict[key]))
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch); one function, or one per parameter group."""

    def __init__(self, optimizer: Any, lr_lambda: LrLambda | list[LrLambda] | tuple[LrLambda, ...],
                 last_epoch: int = -1):
        groups = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(f"LambdaLR: got {len(lambdas)} lr_lambdas for {groups} parameter groups")
        if not all(callable(f) for f in lambdas):
            raise TypeError("LambdaLR: lr_lambda must be a function of the epoch (or a list of them)")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group: int) -> float:
        return base_lr * self.lr_lambdas[group](epoch)

    _not_saved = ("optimizer", "lr_lambdas")

    def state_dict(self) -> dict[str, Any]:
        """As in PyTorch: a function is not saved (None); a callable object saves its attributes."""
        state = super().state_dict()
        state["lr_lambdas"] = [copy.deepcopy(vars(f)) if _has_own_state(f) else None
                               for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the epoch and keep this scheduler's own lr_lambdas (a callable object gets
        its saved attributes back, as in PyTorch)."""
        self._check_keys(state_dict)
        saved = state_dict["lr_lambdas"]
        if not isinstance(saved, list) or len(saved) != len(self.lr_lambdas):
            raise ValueError(f"LambdaLR.load_state_dict: the state's lr_lambdas is {saved!r}; expected "
                             f"a list with one entry per parameter group ({len(self.lr_lambdas)})")
        self._restore(state_dict)
        for f, attributes in zip(self.lr_lambdas, saved):
            if attributes is not None and _has_own_state(f):
                vars(f).update(copy.deepcopy(attributes))


def _has_own_state(f: Callable[[int], float]) -> bool:
    """True for a callable object with attributes of its own (saved, as PyTorch does); False
    for functions, lambdas, methods and partials, whose code is not data."""
    plain = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)
    return not isinstance(f, plain) and hasattr(f, "__dict__")


class LinearLR(LRScheduler):
    """lr = initial_lr * factor, the factor going linearly from start_factor to end_factor over
    total_iters epochs, then staying at end_factor."""

    def __init__(self, optimizer: Any, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor!r}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor!r}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = positive_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group: int) -> float:
        done = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2: from the initial
    lr down to eta_min at epoch T_max (and, as in PyTorch, back up after it)."""

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group: int) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size): multiplied by gamma every step_size epochs."""

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = positive_int("StepLR", "step_size", step_size)
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not gamma >= 0:
            raise ValueError(f"StepLR: gamma must be a number >= 0, got {gamma!r}")
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, group: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class SequentialLR(LRScheduler):
    """One schedule after another: schedulers[i] runs from milestones[i - 1] (restarted at its
    epoch 0 there) until milestones[i]."""

    def __init__(self, optimizer: Any, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR: expected at least one scheduler")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} "
                             f"milestones, got {len(milestones)}")
        if list(milestones) != sorted(milestones):
            raise ValueError(f"SequentialLR: milestones must increase, got {list(milestones)}")
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] drives a different optimizer")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch + 1
        self._schedulers[0].step(0)  # undo the later schedulers' epoch 0: the first one starts
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self, epoch: int | None = None) -> None:
        if epoch is not None:
            raise TypeError("SequentialLR.step(): takes no epoch (as in PyTorch)")
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    _not_saved = ("optimizer", "_schedulers")

    def state_dict(self) -> dict[str, Any]:
        """As in PyTorch: the schedulers in the sequence save their own states, in a list."""
        return {**super().state_dict(), "_schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the epoch and each scheduler of the sequence; all keep driving this optimizer."""
        self._check_keys(state_dict)
        saved = state_dict["_schedulers"]
        if not isinstance(saved, list) or len(saved) != len(self._schedulers):
            raise ValueError(f"SequentialLR.load_state_dict: the state holds {len(saved)} schedulers, "
                             f"this sequence has {len(self._schedulers)}")
        for scheduler, state in zip(self._schedulers, saved):
            scheduler._check_keys(state)  # all checked before anything changes
        for scheduler, state in zip(self._schedulers, saved):
            scheduler.load_state_dict(state)
        self._restore(state_dict)  # last: the lr of the scheduler that ran last
