"""Every bad optimizer argument raises an error that names the argument, the value and the fix."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.engine import RowSparse


def param(shape=(3, 2), name=None):
    return nn.Parameter(np.zeros(shape), name=name)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW])
def test_negative_lr(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: lr must be >= 0, got -0.1"):
        cls([param()], lr=-0.1)


def test_lr_must_be_a_number():
    with pytest.raises(TypeError, match=r"SGD: lr must be a number, got str '0.1'"):
        optim.SGD([param()], lr="0.1")


def test_nan_lr_is_refused():
    with pytest.raises(ValueError, match=r"Adam: lr must be >= 0, got nan"):
        optim.Adam([param()], lr=float("nan"))


@pytest.mark.parametrize("betas, which, value", [
    ((1.0, 0.999), 0, "1.0"), ((-0.1, 0.999), 0, "-0.1"), ((0.9, 1.0), 1, "1.0"), ((0.9, 1.5), 1, "1.5"),
])
def test_betas_outside_zero_one(betas, which, value):
    with pytest.raises(ValueError, match=rf"AdamW: betas\[{which}\] must be in \[0, 1\), got {value}"):
        optim.AdamW([param()], betas=betas)


def test_betas_must_be_a_pair():
    with pytest.raises(ValueError, match=r"Adam: betas must be a pair \(beta1, beta2\), got \(0.9,\)"):
        optim.Adam([param()], betas=(0.9,))


@pytest.mark.parametrize("eps", [0.0, -1e-8])
def test_eps_must_be_positive(eps):
    with pytest.raises(ValueError, match=rf"Adam: eps must be > 0, got {eps}"):
        optim.Adam([param()], eps=eps)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW])
def test_negative_weight_decay(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: weight_decay must be >= 0, got -0.01"):
        cls([param()], weight_decay=-0.01)


def test_negative_momentum():
    with pytest.raises(ValueError, match=r"SGD: momentum must be >= 0, got -0.9"):
        optim.SGD([param()], momentum=-0.9)


def test_dampening_outside_zero_one():
    with pytest.raises(ValueError, match=r"SGD: dampening must be in \[0, 1\], got 1.5"):
        optim.SGD([param()], momentum=0.9, dampening=1.5)


def test_nesterov_needs_momentum_and_no_dampening():
    with pytest.raises(ValueError, match=r"SGD: nesterov=True needs momentum > 0 and dampening = 0, got "
                                         r"momentum=0.0, dampening=0.0"):
        optim.SGD([param()], nesterov=True)


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW])
def test_unknown_decay_mode(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: decay must be one of 'dense', 'touched', "
                                         r"'catch_up' or None, got 'sometimes'"):
        cls([param()], decay="sometimes")


def test_adam_cannot_catch_up_l2_decay():
    with pytest.raises(ValueError, match=r"Adam: decay='catch_up' needs decoupled weight decay "
                                         r"\(use AdamW\)"):
        optim.Adam([param()], weight_decay=0.1, decay="catch_up")


@pytest.mark.parametrize("cls, modes", [(optim.SGD, "'catch_up'\\) or use decay='touched' or 'catch_up'"),
                                        (optim.Adam, "'touched'\\) or use decay='touched'")])
def test_lazy_with_dense_l2_decay_is_incompatible(cls, modes):
    with pytest.raises(ValueError, match=rf"{cls.__name__}\(lazy=True\) cannot use decay='dense' with "
                                         rf"weight_decay=0.1: .* leave decay unset \(for {modes}, "
                                         r"or lazy=False"):
        cls([param()], weight_decay=0.1, lazy=True, decay="dense")


def test_lazy_adamw_with_an_explicit_dense_decay_warns_at_the_callers_line():
    with pytest.warns(optim.PerformanceWarning,
                      match=r"AdamW\(lazy=True, decay='dense', weight_decay=0.1\) multiplies every row "
                            r"of the table by \(1 - lr\*wd\) each step, so a lazy step costs O\(V\), "
                            r"not O\(rows present\); leave decay unset \(None\) or pass "
                            r"decay='catch_up'") as caught:
        optim.AdamW([param()], weight_decay=0.1, lazy=True, decay="dense")
    assert caught[0].filename == __file__


def test_lazy_must_be_a_bool():
    with pytest.raises(TypeError, match=r"AdamW: lazy must be True or False, got 'yes'"):
        optim.AdamW([param()], lazy="yes")


def test_catch_up_needs_lr_times_weight_decay_below_one():
    with pytest.raises(ValueError, match=r"AdamW: decay='catch_up' needs lr \* weight_decay < 1, got lr=10, "
                                         r"weight_decay=0.2 \(lr \* weight_decay = 2\)"):
        optim.AdamW([param()], lr=10, weight_decay=0.2, decay="catch_up")


def test_catch_up_checks_an_lr_changed_after_construction():
    p = param()
    opt = optim.AdamW([p], weight_decay=0.5, decay="catch_up", lazy=True)
    opt.param_groups[0]["lr"] = 4.0
    p.grad = RowSparse([0], np.ones((1, 2)), (3, 2))
    with pytest.raises(ValueError, match=r"needs lr \* weight_decay < 1, got lr=4.0"):
        opt.step()


# ---- what params may contain -----------------------------------------------------------------
def test_a_parameter_listed_twice():
    p = param(name="emb.weight")
    with pytest.raises(ValueError, match=r"SGD: parameter 1 'emb.weight' of group 0 \(shape \(3, 2\)\) is "
                                         r"listed twice in parameter group 0"):
        optim.SGD([p, p])


def test_a_parameter_in_two_groups():
    p, q = param(), param()
    with pytest.raises(ValueError, match=r"AdamW: parameter 0 of group 1 \(shape \(3, 2\)\) is already in "
                                         r"parameter group 0; a parameter can belong to one group only"):
        optim.AdamW([{"params": [p, q]}, {"params": [p]}])


def test_a_tied_parameter_in_two_groups():
    emb, head = nn.Embedding(4, 2), nn.Linear(2, 4, bias=False)
    head.weight = emb.weight
    with pytest.raises(ValueError, match=r"is already in parameter group 0"):
        optim.AdamW([{"params": emb.parameters()}, {"params": head.parameters()}])


def test_something_that_is_not_a_parameter():
    with pytest.raises(TypeError, match=r"SGD: parameter 1 of group 0 is a ndarray, not a Parameter "
                                        r"\(a leaf Tensor with requires_grad=True\)"):
        optim.SGD([param(), np.zeros(3)])


def test_a_single_parameter_instead_of_a_list():
    with pytest.raises(TypeError, match=r"Adam: params must be an iterable of Parameters, or of dicts "
                                        r"\(parameter groups\), got a single Parameter; wrap it in a list"):
        optim.Adam(param())


def test_a_module_instead_of_its_parameters():
    with pytest.raises(TypeError, match=r"got a Linear; pass model.parameters\(\)"):
        optim.Adam(nn.Linear(2, 3))


def test_an_empty_parameter_list():
    with pytest.raises(ValueError, match=r"SGD: got an empty parameter list \(an exhausted generator\?"):
        optim.SGD([])


def test_an_exhausted_generator_as_a_group():
    model = nn.Linear(2, 3)
    params = model.parameters()
    optim.SGD(params)
    with pytest.raises(ValueError, match=r"SGD: got an empty parameter list"):
        optim.SGD(params)
    with pytest.raises(ValueError, match=r"SGD: parameter group 1 has no parameters"):
        optim.SGD([{"params": [param()]}, {"params": params}])


def test_mixing_parameters_and_groups():
    with pytest.raises(TypeError, match=r"SGD: params mixes parameters and parameter-group dicts"):
        optim.SGD([param(), {"params": [param()]}])


def test_an_unknown_group_option():
    with pytest.raises(ValueError, match=r"AdamW: unknown option 'weight_dacay' in parameter group 0; "
                                         r"the options are \['betas', 'decay'"):
        optim.AdamW([{"params": [param()], "weight_dacay": 0.1}])


def test_a_group_without_params():
    with pytest.raises(ValueError, match=r"SGD: parameter group 0 has no 'params' key"):
        optim.SGD([{"lr": 0.1}])


def test_a_tensor_that_does_not_require_grad():
    with pytest.raises(ValueError, match=r"SGD: parameter 0 of group 0 \(shape \(2,\)\) does not "
                                         r"require grad"):
        optim.SGD([mg.tensor(np.zeros(2))])


def test_a_tensor_that_is_not_a_leaf():
    w = param()
    with pytest.raises(ValueError, match=r"is not a leaf: it was computed by \w+Backward; optimize the "
                                         r"Parameters it was computed from"):
        optim.SGD([w * 2.0])


# ---- at step time and after ----------------------------------------------------------------
def test_a_gradient_of_the_wrong_shape():
    p = param()
    opt = optim.SGD([p])
    p.grad = np.zeros(3)
    with pytest.raises(ValueError, match=r"SGD.step: parameter 0 of group 0 \(shape \(3, 2\)\) has a "
                                         r"gradient of shape \(3,\)"):
        opt.step()


def test_a_row_sparse_gradient_of_the_wrong_shape():
    p = param()
    opt = optim.Adam([p])
    p.grad = RowSparse([0], np.zeros((1, 2)), (4, 2))
    with pytest.raises(ValueError, match=r"has a RowSparse gradient of shape \(4, 2\)"):
        opt.step()


def test_introspecting_a_parameter_the_optimizer_does_not_hold():
    opt = optim.Adam([param()])
    with pytest.raises(ValueError, match=r"Adam: this optimizer does not hold the parameter of shape \(5,\)"):
        opt.last_touched(param((5,)))


def test_second_moment_of_a_row_out_of_range():
    p = param()
    opt = optim.Adam([p])
    with pytest.raises(IndexError, match=r"Adam: row 3 at rows\[1\] is out of range for a parameter with "
                                         r"3 rows \(rows must be in \[0, 3\)\)"):
        opt.second_moment(p, [0, 3])


def test_load_state_dict_with_another_number_of_groups():
    saved = optim.SGD([param()]).state_dict()
    with pytest.raises(ValueError, match=r"SGD.load_state_dict: the state has 1 parameter groups, this "
                                         r"optimizer has 2"):
        optim.SGD([{"params": [param()]}, {"params": [param()]}]).load_state_dict(saved)


def test_load_state_dict_with_another_number_of_parameters():
    saved = optim.SGD([param(), param()]).state_dict()
    with pytest.raises(ValueError, match=r"parameter group 0 has 2 parameters in the state but 1 in this"):
        optim.SGD([param()]).load_state_dict(saved)


def test_load_state_dict_with_another_shape():
    p = param()
    opt = optim.Adam([p])
    p.grad = np.ones((3, 2))
    opt.step()
    with pytest.raises(ValueError, match=r"Adam.load_state_dict: state 'last_touched' has shape \(3,\), "
                                         r"but the parameter has shape \(4, 2\)"):
        optim.Adam([param((4, 2))]).load_state_dict(opt.state_dict())


def test_load_state_dict_checks_the_saved_options():
    saved = optim.AdamW([param()]).state_dict()
    saved["param_groups"][0]["lr"] = -1.0
    with pytest.raises(ValueError, match=r"AdamW: lr must be >= 0, got -1.0"):
        optim.AdamW([param()]).load_state_dict(saved)
