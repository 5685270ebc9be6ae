"""float16 as PyTorch computes it: a Python number (or a 0-d tensor) meets a half tensor at
float32 precision and only the result is rounded; the reductions (layer norm, RMS norm,
softmax, log_softmax, cross-entropy, var, std) compute in float32 and return float16, and
rms_norm's default eps is float32's. Compared with torch, forward and backward."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F

HALF = np.float16
SMALL_AND_LARGE = np.array([0.001, 1000.0], HALF)


def _torch():
    return pytest.importorskip("torch")


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


@pytest.mark.parametrize("name", list(NUMBER_OPS))
def test_a_number_meets_a_half_tensor_at_float32_precision(name):
    torch = _torch()
    op = NUMBER_OPS[name]
    ours = op(mg.tensor(SMALL_AND_LARGE)).data
    theirs = op(torch.tensor(SMALL_AND_LARGE)).numpy()
    assert ours.dtype == theirs.dtype == HALF
    np.testing.assert_array_equal(ours, theirs)


def test_a_number_divided_by_a_half_tensor_is_rounded_once():
    """PyTorch computes 1e5 / x as x.reciprocal() * 1e5, rounding x's reciprocal to float16 on
    the way (100.06 for x = 1000); minigrad divides at float32 precision and rounds once (100)."""
    torch = _torch()
    ours = (1e5 / mg.tensor(SMALL_AND_LARGE)).data
    exact = (np.float32(1e5) / SMALL_AND_LARGE.astype(np.float32)).astype(HALF)
    np.testing.assert_array_equal(ours, exact)
    theirs = (1e5 / torch.tensor(SMALL_AND_LARGE)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)  # one float16 step apart


def test_the_issues_figures():
    x = mg.tensor(SMALL_AND_LARGE)
    np.testing.assert_array_equal((x * 1e5).data, np.array([100.0625, np.inf], HALF))
    np.testing.assert_array_equal((x / 1e5).data, np.array([0.0, 0.01], HALF))
    assert (x * 1e-8).data[1] != 0  # 1e-5, where rounding 1e-8 to float16 first gave 0


@pytest.mark.parametrize("name", ["times_1e5", "times_1e-8", "divided_by_1e5", "plus_1e-4", "minus_1e5",
                                  "1e5_times", "1e5_minus", "power_0.1"])
def test_the_gradient_through_a_number_is_rounded_once_as_in_torch(name):
    torch = _torch()
    op = NUMBER_OPS[name]
    ours = mg.tensor(SMALL_AND_LARGE, requires_grad=True)
    op(ours).sum().backward()
    theirs = torch.tensor(SMALL_AND_LARGE, requires_grad=True)
    op(theirs).sum().backward()
    assert ours.grad.dtype == HALF
    np.testing.assert_array_equal(ours.grad, theirs.grad.numpy())


@pytest.mark.parametrize("other", ["float32", "float64"])
def test_a_zero_d_tensor_meets_a_half_tensor_at_float32_precision(other):
    torch = _torch()
    ours = (mg.tensor(SMALL_AND_LARGE) * mg.tensor(np.array(1e5, other))).data
    theirs = (torch.tensor(SMALL_AND_LARGE) * torch.tensor(np.array(1e5, other))).numpy()
    assert ours.dtype == HALF
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("update", ["*=", "/=", "+=", "-=", "mul_", "div_", "add_", "sub_"])
@pytest.mark.parametrize("recorded", [False, True])
def test_in_place_updates_with_a_number_compute_at_float32_precision(update, recorded):
    torch = _torch()
    number = {"*": 1e5, "/": 1e5, "+": 1e-4, "-": 1e-4, "m": 1e-8, "d": 1e5, "a": 1e-4, "s": 1e-4}[update[0]]

    def run(lib, x):
        y = x * 1.0 if recorded else x  # with a history, the update is recorded as an op
        if update.endswith("="):
            y = {"*=": y.__imul__, "/=": y.__itruediv__, "+=": y.__iadd__, "-=": y.__isub__}[update](number)
        else:
            getattr(y, update)(number)
        return y

    leaf = mg.tensor(SMALL_AND_LARGE, requires_grad=recorded)
    ours = run(mg, leaf)
    their_leaf = torch.tensor(SMALL_AND_LARGE, requires_grad=recorded)
    theirs = run(torch, their_leaf)
    assert ours.dtype == HALF
    np.testing.assert_array_equal(ours.data, theirs.detach().numpy())
    if recorded:
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_array_equal(leaf.grad, their_leaf.grad.numpy())


# ---- reductions compute in float32 ----------------------------------------------------------------

def test_rms_norm_of_half_entries_above_256_is_not_zero():
    torch = _torch()
    x = np.array([[300, 200, -100, 50]], HALF)
    ours = F.rms_norm(mg.tensor(x), 4, eps=1e-6).data
    assert ours.dtype == HALF
    np.testing.assert_allclose(ours, [[1.59, 1.06, -0.53, 0.265]], rtol=3e-3)
    theirs = torch.nn.functional.rms_norm(torch.tensor(x), (4,), eps=1e-6).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_rms_norm_of_half_uses_float32_epsilon_by_default():
    torch = _torch()
    x = np.array([[1e-3, 2e-3, -1e-3, 5e-4]], HALF)
    ours = F.rms_norm(mg.tensor(x), 4).data
    theirs = torch.nn.functional.rms_norm(torch.tensor(x), (4,)).numpy()
    assert ours[0, 0] == pytest.approx(0.771, abs=2e-3)
    np.testing.assert_array_equal(ours, theirs)


RNG = np.random.default_rng(0)
WIDE = (RNG.normal(size=(4, 24)) * 300).astype(HALF)  # squares far past float16's 65504
LOGITS = (RNG.normal(size=(5, 7)) * 4).astype(HALF)
TARGETS = np.array([0, 6, 3, 3, 1])

# name: (the op for either library (ns: minigrad or torch, with .F its functional), the input)
REDUCTIONS = {
    "layer_norm": (lambda ns, x, w: ns.F.layer_norm(x, (24,), w, w), WIDE),
    "rms_norm": (lambda ns, x, w: ns.F.rms_norm(x, (24,), w), WIDE),
    "rms_norm_default_eps": (lambda ns, x, w: ns.F.rms_norm(x, (24,)) * w, WIDE / HALF(1000)),
    "softmax": (lambda ns, x, w: x.softmax(-1) * w, WIDE / HALF(30)),
    "log_softmax": (lambda ns, x, w: x.log_softmax(-1) * w, WIDE / HALF(30)),
    "var": (lambda ns, x, w: x.var(1), WIDE / HALF(30)),
    "std": (lambda ns, x, w: x.std(0) * w, WIDE),
    "cross_entropy": (lambda ns, x, w: ns.F.cross_entropy(x, ns.lib.tensor(TARGETS)), LOGITS),
    "cross_entropy_smoothing": (lambda ns, x, w: ns.F.cross_entropy(x, ns.lib.tensor(TARGETS),
                                                                    label_smoothing=0.1), LOGITS),
}


class _Namespace:
    def __init__(self, lib, functional):
        self.lib, self.F = lib, functional


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_half_reductions_compute_in_float32_and_return_half(name):
    torch = _torch()
    op, x = REDUCTIONS[name]
    weight = (np.linspace(0.5, 1.5, x.shape[-1])).astype(HALF)
    ours_x, ours_w = mg.tensor(x, requires_grad=True), mg.tensor(weight, requires_grad=True)
    theirs_x, theirs_w = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    ours = op(_Namespace(mg, F), ours_x, ours_w)
    theirs = op(_Namespace(torch, torch.nn.functional), theirs_x, theirs_w)
    assert ours.dtype == HALF and np.isfinite(ours.data).all()
    np.testing.assert_allclose(ours.data.astype(np.float64), theirs.detach().double().numpy(), rtol=2e-3,
                               atol=2e-3)
    ours.sum().backward()
    theirs.sum().backward()
    for mine, their in ((ours_x, theirs_x), (ours_w, theirs_w)):
        if their.grad is None:
            assert mine.grad is None
            continue
        assert mine.grad.dtype == HALF and np.isfinite(mine.grad).all()
        scale = np.abs(their.grad.double().numpy()).max()
        np.testing.assert_allclose(mine.grad.astype(np.float64), their.grad.double().numpy(), rtol=4e-3,
                                   atol=4e-3 * scale)
