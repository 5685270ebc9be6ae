"""Saving and resuming an optimizer with its schedule: the state is plain data, it loads into
freshly built objects, and the resumed run is the uninterrupted one (checked against torch)."""

import pickle

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad import optim
from minigrad.optim import lr_scheduler as S

BEFORE, AFTER = 9, 11  # steps before the save and after the resume
SCHEDULES = ["lambda", "step", "linear", "cosine", "warmup_cosine"]
OPTIMIZERS = ["SGD", "Adam", "AdamW"]
START = [np.linspace(-1.0, 1.0, 15).reshape(5, 3), np.array([0.5, -0.25, 2.0])]


def gradient(values: np.ndarray) -> np.ndarray:
    """A gradient that depends on where the parameter is, so a wrong lr changes the path."""
    return values**3 - 0.3 * values + 0.1


def make_optimizer(module, kind, params, lr_scale=1.0):
    groups = [{"params": [params[0]], "lr": 0.05 * lr_scale}, {"params": [params[1]], "lr": 0.02 * lr_scale}]
    if kind == "SGD":
        return module.SGD(groups, momentum=0.9, weight_decay=0.01)
    if kind == "Adam":
        return module.Adam(groups, betas=(0.8, 0.99), weight_decay=0.01)
    return module.AdamW(groups, weight_decay=0.1)


class Halving:
    """A callable object with state: PyTorch saves its attributes, and so do we."""

    def __init__(self, rate=0.5):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** (epoch / 4)


def make_scheduler(module, kind, opt, rate=0.9):
    if kind == "lambda":
        return module.LambdaLR(opt, lambda epoch: rate**epoch)
    if kind == "step":
        return module.StepLR(opt, step_size=4, gamma=0.5)
    if kind == "linear":
        return module.LinearLR(opt, start_factor=0.2, total_iters=6)
    if kind == "cosine":
        return module.CosineAnnealingLR(opt, T_max=15, eta_min=0.001)
    warmup, total = 4, BEFORE + AFTER
    return module.SequentialLR(opt, [module.LinearLR(opt, 0.1, total_iters=warmup),
                                     module.CosineAnnealingLR(opt, T_max=total - warmup)],
                               milestones=[warmup])


def run(opt, sched, params, steps, read, write):
    """`steps` steps of opt and sched; the lrs of every group before each step."""
    lrs = []
    for _ in range(steps):
        lrs.append([g["lr"] for g in opt.param_groups])
        for p in params:
            write(p, gradient(read(p)))
        opt.step()
        sched.step()
    return lrs


def mg_params():
    return [mg.nn.Parameter(v.copy()) for v in START]


def mg_write(p, g):
    p.grad = g


def torch_uninterrupted(opt_kind, sched_kind, start, steps):
    """`steps` steps in torch from parameters `start`: the lrs of every step, the parameters after."""
    params = [torch.nn.Parameter(torch.tensor(v.copy())) for v in start]
    opt = make_optimizer(torch.optim, opt_kind, params)
    sched = make_scheduler(torch.optim.lr_scheduler, sched_kind, opt)

    def write(p, g):
        p.grad = torch.from_numpy(g)

    lrs = run(opt, sched, params, steps, lambda p: p.detach().numpy(), write)
    return lrs, [p.detach().numpy() for p in params]


def is_plain_data(value) -> bool:
    """Numbers, strings, None, and lists, tuples and dicts of them: nothing bound to an object."""
    if value is None or isinstance(value, (bool, int, float, str, np.number)):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_plain_data(v) for v in value)
    if isinstance(value, dict):
        return all(is_plain_data(k) and is_plain_data(v) for k, v in value.items())
    return False


@pytest.mark.parametrize("sched_kind", SCHEDULES)
@pytest.mark.parametrize("opt_kind", OPTIMIZERS)
def test_resumed_run_equals_an_uninterrupted_torch_run(opt_kind, sched_kind, oracle):
    torch_lrs, torch_params = oracle(torch_uninterrupted, opt_kind, sched_kind, START, BEFORE + AFTER)
    read = lambda p: p.data  # noqa: E731
    params = mg_params()
    opt = make_optimizer(optim, opt_kind, params)
    sched = make_scheduler(S, sched_kind, opt)
    lrs = run(opt, sched, params, BEFORE, read, mg_write)
    assert is_plain_data(sched.state_dict())
    saved = pickle.dumps({"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                          "params": [p.data.copy() for p in params]})
    del opt, sched  # nothing of the first run survives but the bytes

    checkpoint = pickle.loads(saved)
    params = [mg.nn.Parameter(v) for v in checkpoint["params"]]
    opt = make_optimizer(optim, opt_kind, params, lr_scale=7.0)  # the state's lrs must win
    sched = make_scheduler(S, sched_kind, opt)
    opt.load_state_dict(checkpoint["optimizer"])
    sched.load_state_dict(checkpoint["scheduler"])
    lrs += run(opt, sched, params, AFTER, read, mg_write)

    np.testing.assert_allclose(lrs, torch_lrs, rtol=1e-12, atol=1e-15)
    for ours, theirs in zip(params, torch_params):
        np.testing.assert_allclose(ours.data, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sched_kind", SCHEDULES)
def test_resuming_does_not_depend_on_building_the_scheduler_before_loading_the_optimizer(sched_kind):
    def resumed(scheduler_first):
        params = mg_params()
        opt = make_optimizer(optim, "AdamW", params)
        sched = make_scheduler(S, sched_kind, opt)
        run(opt, sched, params, BEFORE, lambda p: p.data, mg_write)
        saved = pickle.loads(pickle.dumps((opt.state_dict(), sched.state_dict())))
        params = [mg.nn.Parameter(p.data.copy()) for p in params]
        opt = make_optimizer(optim, "AdamW", params)
        if scheduler_first:
            sched = make_scheduler(S, sched_kind, opt)
            opt.load_state_dict(saved[0])
        else:  # building the scheduler now applies its epoch 0 over the loaded lrs
            opt.load_state_dict(saved[0])
            sched = make_scheduler(S, sched_kind, opt)
        sched.load_state_dict(saved[1])
        lrs = run(opt, sched, params, AFTER, lambda p: p.data, mg_write)
        return lrs, [p.data for p in params]

    (lrs_a, params_a), (lrs_b, params_b) = resumed(True), resumed(False)
    assert lrs_a == lrs_b
    for a, b in zip(params_a, params_b):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("opt_kind", OPTIMIZERS)
def test_a_scheduled_optimizers_state_loads_into_a_fresh_one(opt_kind):
    opt = make_optimizer(optim, opt_kind, mg_params())
    S.LinearLR(opt, start_factor=0.5, total_iters=3)
    state = opt.state_dict()
    assert [g["initial_lr"] for g in state["param_groups"]] == [0.05, 0.02]
    fresh = make_optimizer(optim, opt_kind, mg_params())
    fresh.load_state_dict(state)  # was: "unknown option 'initial_lr'"
    assert [g["initial_lr"] for g in fresh.param_groups] == [0.05, 0.02]
    assert [g["lr"] for g in fresh.param_groups] == [0.025, 0.01]
    assert is_plain_data({k: v for k, v in state.items() if k != "state"})


def test_a_bad_initial_lr_in_the_state_is_refused():
    opt = make_optimizer(optim, "AdamW", mg_params())
    state = opt.state_dict()
    state["param_groups"][1]["initial_lr"] = -1.0
    with pytest.raises(ValueError, match="AdamW: initial_lr must be >= 0, got -1.0"):
        make_optimizer(optim, "AdamW", mg_params()).load_state_dict(state)


def test_sequential_lr_resumed_drives_the_new_optimizer_not_the_old_one():
    old = make_optimizer(optim, "SGD", mg_params())
    sched = make_scheduler(S, "warmup_cosine", old)
    for _ in range(3):
        sched.step()
    old_lrs = [g["lr"] for g in old.param_groups]
    new = make_optimizer(optim, "SGD", mg_params())
    resumed = make_scheduler(S, "warmup_cosine", new)
    new.load_state_dict(old.state_dict())
    resumed.load_state_dict(sched.state_dict())
    for _ in range(4):
        resumed.step()
    assert [g["lr"] for g in old.param_groups] == old_lrs, "the old optimizer was driven"
    sched_alone = make_scheduler(S, "warmup_cosine", make_optimizer(optim, "SGD", mg_params()))
    for _ in range(7):
        sched_alone.step()
    assert [g["lr"] for g in new.param_groups] == sched_alone.get_last_lr()
    assert resumed.get_last_lr() == sched_alone.get_last_lr()


def test_sequential_lr_saves_each_scheduler_as_its_own_state():
    opt = make_optimizer(optim, "SGD", mg_params())
    state = make_scheduler(S, "warmup_cosine", opt).state_dict()
    assert [sorted(s) for s in state["_schedulers"]] == [
        ["_last_lr", "base_lrs", "end_factor", "last_epoch", "start_factor", "total_iters"],
        ["T_max", "_last_lr", "base_lrs", "eta_min", "last_epoch"]]
    assert "optimizer" not in state and is_plain_data(state)


def test_lambda_lr_state_pickles_and_loading_keeps_the_new_lambda():
    opt = make_optimizer(optim, "SGD", mg_params())
    sched = S.LambdaLR(opt, lambda epoch: 0.9**epoch)
    for _ in range(5):
        sched.step()
    state = pickle.loads(pickle.dumps(sched.state_dict()))  # was: a lambda cannot be pickled
    assert state["lr_lambdas"] == [None, None] and state["last_epoch"] == 5
    fresh = make_optimizer(optim, "SGD", mg_params())
    new = S.LambdaLR(fresh, lambda epoch: 0.5**epoch)
    new.load_state_dict(state)
    new.step()
    assert new.get_last_lr() == pytest.approx([0.05 * 0.5**6, 0.02 * 0.5**6], rel=1e-15)


def callable_object_restored(optimizers, schedulers, params):
    """A LambdaLR over a callable object whose state changed, saved and loaded into a fresh one:
    the fresh object's state, and the lrs after one step."""
    factor = Halving(rate=0.5)
    sched = schedulers.LambdaLR(make_optimizer(optimizers, "SGD", params), factor)
    factor.rate = 0.25  # state kept in the object
    state = sched.state_dict()
    fresh_factor = Halving(rate=0.9)
    fresh = schedulers.LambdaLR(make_optimizer(optimizers, "SGD", params), fresh_factor)
    fresh.load_state_dict(state)
    fresh.step()
    return fresh_factor.rate, fresh.get_last_lr()


def torch_callable_object_restored(start):
    params = [torch.nn.Parameter(torch.tensor(v.copy())) for v in start]
    return callable_object_restored(torch.optim, torch.optim.lr_scheduler, params)


def test_lambda_lr_restores_the_attributes_of_a_callable_object_as_torch_does(oracle):
    rate, lrs = callable_object_restored(optim, S, mg_params())
    their_rate, their_lrs = oracle(torch_callable_object_restored, START)
    assert rate == their_rate == 0.25
    np.testing.assert_allclose(lrs, their_lrs, rtol=1e-14)


@pytest.mark.parametrize("kind", SCHEDULES)
def test_scheduler_state_is_plain_data_and_a_copy(kind):
    opt = make_optimizer(optim, "AdamW", mg_params())
    sched = make_scheduler(S, kind, opt)
    state = sched.state_dict()
    assert is_plain_data(state), state
    before = pickle.dumps(state)
    for _ in range(6):
        sched.step()
    assert pickle.dumps(state) == before, "the saved state changed as the schedule went on"


def test_scheduler_load_errors_name_the_problem():
    opt = make_optimizer(optim, "SGD", mg_params())
    linear, cosine = make_scheduler(S, "linear", opt), make_scheduler(S, "cosine", opt)
    with pytest.raises(ValueError, match=r"CosineAnnealingLR.load_state_dict: the state does not fit "
                                         r"this scheduler \(missing \['T_max', 'eta_min'\], unexpected "
                                         r"\['end_factor', 'start_factor', 'total_iters'\]\)"):
        cosine.load_state_dict(linear.state_dict())
    with pytest.raises(TypeError, match="LinearLR.load_state_dict: expected the dict that state_dict"):
        linear.load_state_dict([1, 2])
    lam = S.LambdaLR(opt, lambda e: 1.0)
    state = lam.state_dict()
    state["lr_lambdas"] = [None]
    with pytest.raises(ValueError, match=r"LambdaLR.load_state_dict: the state's lr_lambdas is \[None\]; "
                                         r"expected a list with one entry per parameter group \(2\)"):
        lam.load_state_dict(state)
    seq = make_scheduler(S, "warmup_cosine", opt)
    state = seq.state_dict()
    state["_schedulers"] = state["_schedulers"][:1]
    with pytest.raises(ValueError, match="SequentialLR.load_state_dict: the state holds 1 schedulers, "
                                         "this sequence has 2"):
        seq.load_state_dict(state)
    epoch = seq.last_epoch
    state = seq.state_dict()
    state["last_epoch"] = 99
    del state["_schedulers"][1]["T_max"]
    with pytest.raises(ValueError, match=r"missing \['T_max'\]"):
        seq.load_state_dict(state)
    assert seq.last_epoch == epoch, "a refused state changed nothing"
    one_group = make_scheduler(S, "step", optim.SGD([mg.nn.Parameter(np.zeros(1))], lr=0.1))
    with pytest.raises(ValueError, match="StepLR.load_state_dict: the state is for 1 parameter groups, "
                                         "this optimizer has 2"):
        make_scheduler(S, "step", opt).load_state_dict(one_group.state_dict())


@pytest.mark.parametrize("sched_kind", SCHEDULES)
def test_optimizer_and_scheduler_state_round_trip_through_one_checkpoint_file(sched_kind, tmp_path):
    params = mg_params()
    opt = make_optimizer(optim, "AdamW", params)
    sched = make_scheduler(S, sched_kind, opt)
    run(opt, sched, params, BEFORE, lambda p: p.data, mg_write)
    mg.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "run.safetensors")
    back = mg.load(tmp_path / "run.safetensors")
    assert back["scheduler"] == sched.state_dict()
    fresh = make_optimizer(optim, "AdamW", [mg.nn.Parameter(p.data.copy()) for p in params])
    fresh_sched = make_scheduler(S, sched_kind, fresh)
    fresh.load_state_dict(back["optimizer"])
    fresh_sched.load_state_dict(back["scheduler"])
    for _ in range(3):
        sched.step()
        fresh_sched.step()
    assert fresh_sched.get_last_lr() == sched.get_last_lr()
    assert [g["lr"] for g in fresh.param_groups] == [g["lr"] for g in opt.param_groups]
