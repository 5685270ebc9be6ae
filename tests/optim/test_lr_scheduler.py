"""Learning-rate schedules against torch.optim.lr_scheduler: the same lr at every step."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.optim import SGD, AdamW
from minigrad.optim import lr_scheduler as S

STEPS = 25


def optimizers(lrs=(0.1, 0.03)):
    """A minigrad and a torch optimizer with one parameter group per lr."""
    torch = pytest.importorskip("torch")
    ours = SGD([{"params": [mg.nn.Parameter(np.zeros(2))], "lr": lr} for lr in lrs])
    theirs = torch.optim.SGD([{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in lrs])
    return ours, theirs


def lrs(optimizer, scheduler, steps=STEPS):
    seen = []
    for _ in range(steps):
        seen.append([g["lr"] for g in optimizer.param_groups])
        optimizer.step()
        scheduler.step()
    return seen


def build(module, optimizer, kind):
    if kind == "lambda":
        return module.LambdaLR(optimizer, lambda e: 0.95 ** e)
    if kind == "linear":
        return module.LinearLR(optimizer, start_factor=0.1, end_factor=0.9, total_iters=7)
    if kind == "cosine":
        return module.CosineAnnealingLR(optimizer, T_max=10, eta_min=0.001)  # past T_max it rises again
    warmup = module.LinearLR(optimizer, start_factor=0.01, total_iters=5)
    cosine = module.CosineAnnealingLR(optimizer, T_max=STEPS - 5)
    return module.SequentialLR(optimizer, [warmup, cosine], milestones=[5])


@pytest.mark.parametrize("kind", ["lambda", "linear", "cosine", "warmup_cosine"])
def test_lr_sequence_matches_torch(kind):
    torch = pytest.importorskip("torch")
    ours, theirs = optimizers()
    mine, torchs = build(S, ours, kind), build(torch.optim.lr_scheduler, theirs, kind)
    np.testing.assert_allclose(lrs(ours, mine), lrs(theirs, torchs), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mine.get_last_lr(), torchs.get_last_lr(), rtol=1e-12)


def test_warmup_then_cosine_shape():
    p = mg.nn.Parameter(np.zeros(1))
    opt = AdamW([p], lr=1.0)
    sched = S.SequentialLR(opt, [S.LinearLR(opt, 0.1, total_iters=4), S.CosineAnnealingLR(opt, T_max=6)],
                           milestones=[4])
    seen = [lr for (lr,) in lrs(opt, sched, 11)]
    np.testing.assert_allclose(seen[:5], [0.1, 0.325, 0.55, 0.775, 1.0])
    assert all(a > b for a, b in zip(seen[4:10], seen[5:10]))  # decays after the warmup
    assert seen[10] == pytest.approx(0.0, abs=1e-12)
    assert seen[7] == pytest.approx((1 + math.cos(math.pi * 3 / 6)) / 2)


def test_scheduler_errors():
    opt = SGD([mg.nn.Parameter(np.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="CosineAnnealingLR: T_max must be a positive int, got 0"):
        S.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(ValueError, match="LinearLR: start_factor must be in"):
        S.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="LambdaLR: got 2 lr_lambdas for 1 parameter groups"):
        S.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    with pytest.raises(ValueError, match="SequentialLR: 2 schedulers need 1 milestones, got 0"):
        S.SequentialLR(opt, [S.LinearLR(opt), S.LinearLR(opt)], milestones=[])
    with pytest.raises(TypeError, match="must be an Optimizer"):
        S.LinearLR([1, 2])
