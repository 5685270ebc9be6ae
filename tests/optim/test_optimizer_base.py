"""optim.Optimizer is PyTorch's plumbing alone: a learner's own optimizer written as in PyTorch
(override `step`) gets groups, zero_grad, schedules and checkpoints, and no row machinery."""

import pickle

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.engine import to_dense
from minigrad.optim import lr_scheduler as S


class SignSGD(optim.Optimizer):
    """p <- p - lr * sign(g), with a step count: written as a PyTorch optimizer is."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        with mg.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state.setdefault(p, {"step": 0})
                    state["step"] += 1
                    p.data -= group["lr"] * np.sign(to_dense(p.grad))


def test_the_base_holds_no_row_machinery():
    for name in ("flush", "last_touched", "_decay_rows", "_settle_catch_up", "decay_modes"):
        assert not hasattr(optim.Optimizer, name), name
    assert issubclass(optim.AdamW, optim.RowOptimizer) and issubclass(optim.RowOptimizer, optim.Optimizer)


def test_a_pytorch_style_optimizer_steps_schedules_and_resumes():
    p = nn.Parameter(np.array([1.0, -1.0, 0.5]))
    opt = SignSGD([p], lr=0.1)
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        p.grad = p.data.copy()
        opt.step()
        sched.step()
        opt.zero_grad()
    assert p.grad is None
    np.testing.assert_allclose(p.data, [1 - 0.1 - 0.1 - 0.05, -1 + 0.25, 0.5 - 0.25])
    saved = pickle.loads(pickle.dumps((opt.state_dict(), sched.state_dict())))
    assert saved[0]["state"][0]["step"] == 3 and saved[0]["param_groups"][0]["initial_lr"] == 0.1

    fresh = SignSGD([nn.Parameter(p.data.copy())], lr=1.0)
    fresh_sched = S.StepLR(fresh, step_size=2, gamma=0.5)
    fresh.load_state_dict(saved[0])
    fresh_sched.load_state_dict(saved[1])
    assert fresh.param_groups[0]["lr"] == 0.05 and fresh.state_dict()["state"][0]["step"] == 3
    fresh_sched.step()
    assert fresh.param_groups[0]["lr"] == 0.025


def test_the_base_still_checks_options_and_parameters():
    p = nn.Parameter(np.zeros(2))
    with pytest.raises(ValueError, match="SignSGD: lr must be >= 0, got -1"):
        SignSGD([p], lr=-1)
    with pytest.raises(ValueError, match="SignSGD: unknown option 'momentum' in parameter group 0"):
        SignSGD([{"params": [p], "momentum": 0.9}])
    p.grad = np.ones(2)
    with pytest.raises(NotImplementedError, match=r"Optimizer has no update rule: define step\(\)"):
        optim.Optimizer([p], dict(lr=0.1)).step()
