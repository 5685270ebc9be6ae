"""Learning-rate schedules against torch.optim.lr_scheduler (live where it is installed, recorded
where not): the same lr at every step."""

import math

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad.optim import SGD, AdamW
from minigrad.optim import lr_scheduler as S

STEPS = 25


def optimizer(lib, lrs=(0.1, 0.03)):
    """A minigrad (lib=mg) or torch SGD with one parameter group per lr."""
    return lib.optim.SGD([{"params": [lib.nn.Parameter(lib.zeros(2))], "lr": lr} for lr in lrs])


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
    if kind == "step":
        return module.StepLR(optimizer, step_size=3, gamma=0.5)
    warmup = module.LinearLR(optimizer, start_factor=0.01, total_iters=5)
    cosine = module.CosineAnnealingLR(optimizer, T_max=STEPS - 5)
    return module.SequentialLR(optimizer, [warmup, cosine], milestones=[5])


def torch_lrs(kind):
    """torch's lrs at every step of STEPS, and its last lr after."""
    opt = optimizer(torch)
    sched = build(torch.optim.lr_scheduler, opt, kind)
    return lrs(opt, sched), sched.get_last_lr()


@pytest.mark.parametrize("kind", ["lambda", "linear", "cosine", "step", "warmup_cosine"])
def test_lr_sequence_matches_torch(kind, oracle):
    theirs, their_last = oracle(torch_lrs, kind)
    ours = optimizer(mg)
    mine = build(S, ours, kind)
    np.testing.assert_allclose(lrs(ours, mine), theirs, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mine.get_last_lr(), their_last, rtol=1e-12)


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
    with pytest.raises(ValueError, match="StepLR: step_size must be a positive int, got 2.5"):
        S.StepLR(opt, step_size=2.5)
    with pytest.raises(ValueError, match="StepLR: gamma must be a number >= 0, got nan"):
        S.StepLR(opt, step_size=2, gamma=float("nan"))


def test_step_lr_multiplies_by_gamma_every_step_size_epochs():
    opt = SGD([mg.nn.Parameter(np.zeros(1))], lr=1.0)
    sched = S.StepLR(opt, step_size=3, gamma=0.1)
    seen = [lr for (lr,) in lrs(opt, sched, 8)]
    np.testing.assert_allclose(seen, [1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01], rtol=1e-15)


# ---- the one warm-up and cosine schedule -------------------------------------------------------
def warmup_then_cosine(lib, schedulers, peak, total):
    """LinearLR for the warm-up, then CosineAnnealingLR, in a SequentialLR: the lr of every step."""
    warm, opt = max(1, total // 20), optimizer(lib, lrs=(peak,))
    warmup = schedulers.LinearLR(opt, start_factor=1 / warm, total_iters=max(1, warm - 1))
    cosine = schedulers.CosineAnnealingLR(opt, T_max=total - warm, eta_min=peak / 10)
    sched = schedulers.SequentialLR(opt, [warmup, cosine], milestones=[warm])
    return [lr for (lr,) in lrs(opt, sched, total)]


def torch_warmup_then_cosine(peak, total):
    return warmup_then_cosine(torch, torch.optim.lr_scheduler, peak, total)


@pytest.mark.parametrize("total", [7, 40, 100, 1200])
def test_warmup_cosine_is_sequential_linear_then_cosine_as_torch_composes_it(total, oracle):
    peak = 3e-3
    expected = [S.warmup_cosine(step, total, peak) for step in range(total)]
    np.testing.assert_allclose(warmup_then_cosine(mg, S, peak, total), expected, rtol=1e-12)
    np.testing.assert_allclose(oracle(torch_warmup_then_cosine, peak, total), expected, rtol=1e-12)


def test_warmup_cosine_rises_over_five_percent_then_falls_to_the_floor():
    lrs_ = [S.warmup_cosine(step, 100, peak=2.0) for step in range(101)]
    np.testing.assert_allclose(lrs_[:5], [0.4, 0.8, 1.2, 1.6, 2.0], rtol=1e-15)
    assert lrs_[5] == 2.0 and all(a > b for a, b in zip(lrs_[5:100], lrs_[6:100]))  # then it falls
    assert lrs_[100] == pytest.approx(0.2, rel=1e-15)
    assert S.warmup_cosine(100, 100, peak=2.0, floor=0.0) == pytest.approx(0.0, abs=1e-15)
    assert S.warmup_cosine(0, 1) == 1.0 and isinstance(S.warmup_cosine(50, 100), float)


def test_there_is_one_warmup_cosine_the_kit_and_cs336s_spelling_use(monkeypatch):
    from minigrad.learn import kit
    from minigrad.learn.kit import training

    assert kit.warmup_cosine is S.warmup_cosine and training.warmup_cosine is S.warmup_cosine
    calls = []
    monkeypatch.setattr(S, "warmup_cosine", lambda *args, **kwargs: calls.append((args, kwargs)) or 0.5)
    assert S.cosine_with_warmup(10, 2.0, 0.2, 5, 20) == 0.5, "a second copy of the cosine"
    assert calls == [((10, 20, 2.0), {"floor": 0.1, "warmup": 5})]


@pytest.mark.parametrize("total", [7, 40, 333])
def test_warmup_cosine_with_a_given_warmup_is_cs336s_cosine_after_it(total):
    warm, peak, floor = total // 4, 3e-3, 3e-4
    for step in range(warm, total + 1):
        expected = floor + 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm))) * (peak - floor)
        assert S.warmup_cosine(step, total, peak, floor=floor / peak, warmup=warm) == pytest.approx(expected)
    assert S.warmup_cosine(0, total, peak, warmup=warm) == peak / warm


def test_cosine_with_warmup_follows_cs336s_definition():
    from minigrad.optim.lr_scheduler import cosine_with_warmup

    peak, floor, warm, cycle = 1.0, 0.1, 7, 21
    got = [cosine_with_warmup(it, peak, floor, warm, cycle) for it in range(25)]
    assert got[0] == 0.0 and got[3] == 3 / 7 and got[7] == peak  # linear from 0, the peak at warm
    assert abs(got[14] - (floor + (peak - floor) / 2)) < 1e-12  # half way down the cosine
    assert abs(got[21] - floor) < 1e-12 and got[22] == got[24] == floor  # then flat at the floor
    assert all(a >= b for a, b in zip(got[7:], got[8:]))  # never rises after the warm-up
    with pytest.raises(ValueError, match="cosine_cycle_iters"):
        cosine_with_warmup(0, peak, floor, 10, 5)
    with pytest.raises(ValueError, match="min_learning_rate <= max_learning_rate, got min_learning_rate=2"):
        cosine_with_warmup(0, 1.0, 2.0, 5, 10)
