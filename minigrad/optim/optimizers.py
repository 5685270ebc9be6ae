"""SGD, Adam and AdamW: each optimizer's update rule, and nothing else.

Formulas and defaults are PyTorch's (`torch.optim.SGD`, `Adam`, `AdamW`), so a run here can be
compared number for number with a run there. What rows a step works on, and how weight decay
treats the rows a gradient did not name, is `RowOptimizer`'s job (rows.py); the groups, state
and checkpoints are `Optimizer`'s (optimizer.py).

Every update runs in place under `no_grad()` and bumps the parameter's version: tied
parameters and views keep sharing memory, and a pending backward that saved a parameter
notices that it changed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from minigrad.engine import Tensor, kernels
from minigrad.optim.optimizer import check_number
from minigrad.optim.rows import DECAY_MODES, RowOptimizer, StepRows, check_rows, zeros_written


# ---- SGD -------------------------------------------------------------------------------------
class SGD(RowOptimizer):
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
        check_number(self._name, "momentum", group["momentum"], low=0.0)
        check_number(self._name, "dampening", group["dampening"], low=0.0, high=1.0, high_inclusive=True)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov=True needs momentum > 0 and dampening = 0, got "
                             f"momentum={group['momentum']}, dampening={group['dampening']}")

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_written(p.data)
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
class Adam(RowOptimizer):
    """Adam, as `torch.optim.Adam`: L2 weight decay folded into the gradient.

    g <- g + wd * p;  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps),  t = the parameter's step.
    Lazy: only present rows update m, v and p, and t counts the parameter's steps, as in
    `torch.optim.SparseAdam` (whose eps sits at sqrt(v) + eps before the bias correction).
    """

    decay_modes: tuple[str, ...] = ("dense", "touched")
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
            check_number(name, f"betas[{i}]", beta, low=0.0, high=1.0)
        group["betas"] = (float(betas[0]), float(betas[1]))
        check_number(name, "eps", group["eps"], low=0.0, low_inclusive=False)

    def _unsupported_decay_message(self, decay: str) -> str:
        return (f"{self._name}: decay={decay!r} needs decoupled weight decay (use AdamW): Adam adds "
                "weight_decay * p to the gradient, where the moments rescale it, so there is no "
                "(1 - lr*wd) factor to catch up")

    def _update(self, p: Tensor, p_rows: np.ndarray, grad: np.ndarray, rows: StepRows,
                group: dict[str, Any], state: dict[str, Any]) -> None:
        if "exp_avg" not in state:
            state["exp_avg"], state["exp_avg_sq"] = zeros_written(p.data), zeros_written(p.data)
        m, v = rows.take(state["exp_avg"]), rows.take(state["exp_avg_sq"])
        (beta1, beta2), t = group["betas"], state["step"]
        rule = dict(lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"], t=t, decay=rows.decay)
        arrays: tuple[np.ndarray, ...] = (p_rows, m, v, grad)  # each row reads and writes its own rows
        if p_rows.ndim == 0:  # a 0-d parameter: its number as one row of one (views: written in place)
            arrays = tuple(np.reshape(a, 1) for a in arrays)
        kernels.rowwise(arrays[0], lambda lo, hi: adam_step(*(a[lo:hi] for a in arrays), **rule))
        rows.put(state["exp_avg"], m)
        rows.put(state["exp_avg_sq"], v)

    def second_moment(self, param: Tensor, rows: Any = None, bias_corrected: bool = False) -> np.ndarray:
        """Adam's v for `rows` of `param` (every row if None): the running mean of g^2 that
        sets each row's step size. bias_corrected divides by 1 - beta2**t, as the step does.

        rows: an int or an int array in [0, V); returns v[rows] (a copy).
        """
        state = self._known_state(param)
        selection = slice(None) if rows is None else check_rows(rows, param.shape, self._name)
        if not state or "exp_avg_sq" not in state:
            return np.zeros_like(param.data[selection])
        v = state["exp_avg_sq"][selection].copy()
        if bias_corrected:
            beta2 = self._group_of(param)["betas"][1]
            v /= 1 - beta2 ** state["step"]
        return v


def adam_step(p: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, *, lr: float, beta1: float,
              beta2: float, eps: float, t: int, decay: float | None = None) -> None:
    """One Adam step, in place on arrays of one shape (every row, or a block of rows).

    decay: AdamW's factor (1 - lr*wd) for p, applied first in this same pass, or None.
    Written with one temporary array, `scratch`: a (V, d) table and its two moments are the
    biggest arrays of a training step, and each extra temporary would cost one more pass.
    """
    if decay is not None:
        p *= decay                                 # AdamW's p <- p (1 - lr wd)
    scratch = g - m
    scratch *= 1 - beta1
    m += scratch                                   # m <- m + (1 - b1)(g - m), torch's lerp
    np.multiply(g, g, out=scratch)
    scratch *= 1 - beta2
    v *= beta2
    v += scratch                                   # v <- b2 v + (1 - b2) g^2
    np.sqrt(v, out=scratch)
    scratch /= math.sqrt(1 - beta2**t)
    scratch += eps                                 # sqrt(v_hat) + eps
    np.divide(m, scratch, out=scratch)
    scratch *= lr / (1 - beta1**t)                 # lr * m_hat / (sqrt(v_hat) + eps)
    p -= scratch


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
