"""float16 as PyTorch computes it: a Python number (or a 0-d tensor) meets a half tensor at
float32 precision and only the result is rounded; the reductions (layer norm, RMS norm,
softmax, log_softmax, cross-entropy, var, std) compute in float32 and return float16, and
rms_norm's default eps is float32's. Compared with torch (live or recorded), forward and
backward."""

from types import SimpleNamespace

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

HALF = np.float16
SMALL_AND_LARGE = np.array([0.001, 1000.0], HALF)

# name: the op, written once for either library (x: a half tensor). `x ** 0.1` is there because
# PyTorch differs: it rounds a pow's exponent to float16 first, and so does minigrad.
NUMBER_OPS = {
    "times_1e5": lambda x: x * 1e5,
    "divided_by_1e5": lambda x: x / 1e5,
    "times_1e-8": lambda x: x * 1e-8,
    "plus_1e-4": lambda x: x + 1e-4,
    "minus_1e5": lambda x: x - 1e5,
    "1e5_times": lambda x: 1e5 * x,
    "1e5_minus": lambda x: 1e5 - x,
    "times_int_100000": lambda x: x * 100000,
    "power_0.1": lambda x: x ** 0.1,
    "times_numpy_float64": lambda x: x * np.float64(1e5),
}


def torch_number_op(name, x, backward):
    t = torch.tensor(x, requires_grad=backward)
    out = NUMBER_OPS[name](t)
    if backward:
        out.sum().backward()
        return out, t.grad
    return out


@pytest.mark.parametrize("name", list(NUMBER_OPS))
def test_a_number_meets_a_half_tensor_at_float32_precision(name, oracle):
    ours = NUMBER_OPS[name](mg.tensor(SMALL_AND_LARGE)).data
    theirs = oracle(torch_number_op, name, SMALL_AND_LARGE, False)
    assert ours.dtype == theirs.dtype == HALF
    np.testing.assert_array_equal(ours, theirs)


def test_the_issues_figures():
    x = mg.tensor(SMALL_AND_LARGE)
    np.testing.assert_array_equal((x * 1e5).data, np.array([100.0625, np.inf], HALF))
    np.testing.assert_array_equal((x / 1e5).data, np.array([0.0, 0.01], HALF))
    assert (x * 1e-8).data[1] != 0  # 1e-5, where rounding 1e-8 to float16 first gave 0


def torch_divided_into(number, x):
    return number / torch.tensor(x)


def test_a_number_divided_by_a_half_tensor_is_rounded_once(oracle):
    """PyTorch computes 1e5 / x as x.reciprocal() * 1e5, rounding x's reciprocal to float16 on
    the way (100.06 for x = 1000); minigrad divides at float32 precision and rounds once (100)."""
    ours = (1e5 / mg.tensor(SMALL_AND_LARGE)).data
    exact = (np.float32(1e5) / SMALL_AND_LARGE.astype(np.float32)).astype(HALF)
    np.testing.assert_array_equal(ours, exact)
    theirs = oracle(torch_divided_into, 1e5, SMALL_AND_LARGE)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)  # one float16 step apart


@pytest.mark.parametrize("name", ["times_1e5", "times_1e-8", "divided_by_1e5", "plus_1e-4", "minus_1e5",
                                  "1e5_times", "1e5_minus", "power_0.1"])
def test_the_gradient_through_a_number_is_rounded_once_as_in_torch(name, oracle):
    ours = mg.tensor(SMALL_AND_LARGE, requires_grad=True)
    NUMBER_OPS[name](ours).sum().backward()
    _, theirs = oracle(torch_number_op, name, SMALL_AND_LARGE, True)
    assert ours.grad.dtype == HALF
    np.testing.assert_array_equal(ours.grad, theirs)


def torch_times_zero_d(x, other):
    return torch.tensor(x) * torch.tensor(other)


@pytest.mark.parametrize("other", ["float32", "float64"])
def test_a_zero_d_tensor_meets_a_half_tensor_at_float32_precision(other, oracle):
    number = np.array(1e5, other)
    ours = (mg.tensor(SMALL_AND_LARGE) * mg.tensor(number)).data
    assert ours.dtype == HALF
    np.testing.assert_array_equal(ours, oracle(torch_times_zero_d, SMALL_AND_LARGE, number))


UPDATES = {"*=": 1e5, "/=": 1e5, "+=": 1e-4, "-=": 1e-4,
           "mul_": 1e-8, "div_": 1e5, "add_": 1e-4, "sub_": 1e-4}


def _update(x, update, recorded):
    y = x * 1.0 if recorded else x  # with a history, the update is recorded as an op
    number = UPDATES[update]
    if update.endswith("="):
        return {"*=": y.__imul__, "/=": y.__itruediv__, "+=": y.__iadd__, "-=": y.__isub__}[update](number)
    return getattr(y, update)(number)


def torch_update(x, update, recorded):
    t = torch.tensor(x, requires_grad=recorded)
    y = _update(t, update, recorded)
    if recorded:
        y.sum().backward()
        return y, t.grad
    return y, None


@pytest.mark.parametrize("update", list(UPDATES))
@pytest.mark.parametrize("recorded", [False, True])
def test_in_place_updates_with_a_number_compute_at_float32_precision(update, recorded, oracle):
    leaf = mg.tensor(SMALL_AND_LARGE, requires_grad=recorded)
    ours = _update(leaf, update, recorded)
    theirs, their_grad = oracle(torch_update, SMALL_AND_LARGE, update, recorded)
    assert ours.dtype == HALF
    np.testing.assert_array_equal(ours.data, theirs)
    if recorded:
        ours.sum().backward()
        np.testing.assert_array_equal(leaf.grad, their_grad)


# ---- reductions compute in float32 ----------------------------------------------------------------

def torch_rms_norm(x, eps):
    return TF.rms_norm(torch.tensor(x), (x.shape[-1],), eps=eps)


def test_rms_norm_of_half_entries_above_256_is_not_zero(oracle):
    x = np.array([[300, 200, -100, 50]], HALF)
    ours = F.rms_norm(mg.tensor(x), 4, eps=1e-6).data
    assert ours.dtype == HALF
    np.testing.assert_allclose(ours, [[1.59, 1.06, -0.53, 0.265]], rtol=3e-3)
    np.testing.assert_array_equal(ours, oracle(torch_rms_norm, x, 1e-6))


def test_rms_norm_of_half_uses_float32_epsilon_by_default(oracle):
    x = np.array([[1e-3, 2e-3, -1e-3, 5e-4]], HALF)
    ours = F.rms_norm(mg.tensor(x), 4).data
    assert ours[0, 0] == pytest.approx(0.771, abs=2e-3)
    np.testing.assert_array_equal(ours, oracle(torch_rms_norm, x, None))


# name: (the op for either library (ns: .lib minigrad or torch, .F its functional), input's scale)
REDUCTIONS = {
    "layer_norm": (lambda ns, x, w, y: ns.F.layer_norm(x, (24,), w, w), 300),
    "rms_norm": (lambda ns, x, w, y: ns.F.rms_norm(x, (24,), w), 300),
    "rms_norm_default_eps": (lambda ns, x, w, y: ns.F.rms_norm(x, (24,)) * w, 0.3),
    "softmax": (lambda ns, x, w, y: x.softmax(-1) * w, 10),
    "log_softmax": (lambda ns, x, w, y: x.log_softmax(-1) * w, 10),
    "var": (lambda ns, x, w, y: x.var(1), 10),
    "std": (lambda ns, x, w, y: x.std(0) * w, 300),
    "cross_entropy": (lambda ns, x, w, y: ns.F.cross_entropy(x, ns.lib.tensor(y)), 4),
    "cross_entropy_smoothing": (lambda ns, x, w, y: ns.F.cross_entropy(x, ns.lib.tensor(y),
                                                                       label_smoothing=0.1), 4),
}
MG = SimpleNamespace(lib=mg, F=F)
TORCH = SimpleNamespace(lib=torch, F=TF)


def _reduction_inputs(name):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 24)) * REDUCTIONS[name][1]).astype(HALF)  # 300: squares past 65504
    return x, np.linspace(0.5, 1.5, 24).astype(HALF), np.array([0, 23, 3, 3])


def torch_reduction(name, x, weight, targets):
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    out = REDUCTIONS[name][0](TORCH, tx, tw, targets)
    out.sum().backward()
    return out, tx.grad, tw.grad


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_half_reductions_compute_in_float32_and_return_half(name, oracle):
    x, weight, targets = _reduction_inputs(name)
    ours_x, ours_w = mg.tensor(x, requires_grad=True), mg.tensor(weight, requires_grad=True)
    ours = REDUCTIONS[name][0](MG, ours_x, ours_w, targets)
    theirs, grad_x, grad_w = oracle(torch_reduction, name, x, weight, targets)
    assert ours.dtype == HALF and np.isfinite(ours.data).all()
    np.testing.assert_allclose(ours.data.astype(np.float64), theirs.astype(np.float64), rtol=2e-3, atol=2e-3)
    ours.sum().backward()
    for mine, their in ((ours_x, grad_x), (ours_w, grad_w)):
        if their is None:
            assert mine.grad is None
            continue
        assert mine.grad.dtype == HALF and np.isfinite(mine.grad).all()
        scale = np.abs(their.astype(np.float64)).max()
        np.testing.assert_allclose(mine.grad.astype(np.float64), their.astype(np.float64), rtol=4e-3,
                                   atol=4e-3 * scale)


def test_a_half_tensor_of_either_byte_order_meets_a_number_at_float32_precision():
    """Float16 is told by its type code, which a byte-swapped half array ('>f2') shares."""
    swapped = mg.tensor(SMALL_AND_LARGE.astype(">f2"))
    np.testing.assert_array_equal((swapped * 1e5).data, np.array([100.0625, np.inf], HALF))
