"""Learning-rate schedules, named and behaving as in `torch.optim.lr_scheduler`.

A scheduler sets `group["lr"]` of every parameter group of an optimizer. As in PyTorch,
constructing one applies epoch 0 at once, and each `scheduler.step()` (after `optimizer.step()`)
moves one epoch on. Warmup then cosine decay is one line:

    SequentialLR(opt, [LinearLR(opt, 0.01, total_iters=w), CosineAnnealingLR(opt, T_max=n - w)],
                 milestones=[w])

Each schedule here is a closed form of the epoch and the group's initial lr. PyTorch computes
LinearLR and CosineAnnealingLR step by step from the current lr instead; the two agree (to
rounding) unless something else changes the lr between steps, which these schedules overwrite.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import Any

from minigrad.engine import positive_int


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
        self._last_lr = [self.lr_at(base, self.last_epoch, i) for i, base in enumerate(self.base_lrs)]
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def get_last_lr(self) -> list[float]:
        """The lr of every group as this scheduler last set it."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"
                and not callable(value)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch); one function, or one per parameter group."""

    def __init__(self, optimizer: Any, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
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
