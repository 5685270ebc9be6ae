"""Lesson 1's check names the typical mistakes in a softplus backward."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner

CHECK = runner.load_check(runner.get_lesson(1, Path(__file__).resolve().parents[2] / "lessons"))


def softplus_with_backward(local_slope):
    """A Softplus Function whose backward returns local_slope(x, grad)."""

    class Softplus(mg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return np.logaddexp(0.0, x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved
            return local_slope(x, grad)

    return SimpleNamespace(Softplus=Softplus)


def sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))  # never overflows


WRONG = {
    "forgot the chain rule factor": (lambda x, g: sigmoid(x), "ignores `grad`"),
    "softplus value instead of sigmoid": (lambda x, g: g * np.logaddexp(0.0, x), "softplus\\(x\\) itself"),
    "negated": (lambda x, g: -g * sigmoid(x), "the wrong sign"),
    "sign flipped in the exponent": (lambda x, g: g / (1 + np.exp(x)), "sign in the exponent is flipped"),
    "overflows for large x": (lambda x, g: g * np.exp(x) / (1 + np.exp(x)),
                              "at x = 800 .* nan: np.exp overflowed"),
    "half the slope": (lambda x, g: g * sigmoid(x) / 2, "is 2 times too small everywhere: a missing or extra "
                                                        "constant factor"),
    "twice the slope": (lambda x, g: 2 * g * sigmoid(x), "is 2 times too large everywhere"),
    "off by a constant": (lambda x, g: g * sigmoid(x) + 0.1, r"at x\[\d, \d\] = .* finite differences give"),
    "returned nothing": (lambda x, g: None, "Softplus.backward returned None"),
    "wrong shape": (lambda x, g: (g * sigmoid(x)).sum(axis=0), r"returned a gradient of shape \(3,\) for x"),
    "summed with keepdims": (lambda x, g: (g * sigmoid(x)).sum(axis=0, keepdims=True),
                             r"shape \(1, 3\) for x of shape \(2, 3\).*would broadcast.*no sum"),
    "summed to a number": (lambda x, g: (g * sigmoid(x)).sum(), r"shape \(\) for x .*would broadcast"),
    "transposed": (lambda x, g: (g * sigmoid(x)).T, r"shape \(3, 2\) for x of shape \(2, 3\).*transposed"),
    "flattened": (lambda x, g: (g * sigmoid(x)).reshape(-1), r"shape \(6,\) .*reshaped"),
    "a list": (lambda x, g: (g * sigmoid(x)).tolist(), "returned a list; return a numpy array shaped like x"),
    "a python number": (lambda x, g: 1.0, "returned a float; return a numpy array"),
    "integers": (lambda x, g: np.ones(x.shape, dtype=np.int64), "dtype int64; a gradient is floating-point"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_backward_fails_with_its_diagnosis(mistake):
    slope, diagnosis = WRONG[mistake]
    with pytest.raises(AssertionError, match=diagnosis):
        CHECK(softplus_with_backward(slope))


def test_right_backward_passes_and_stub_is_not_attempted():
    assert CHECK(softplus_with_backward(lambda x, g: g * sigmoid(x))) is None

    def stub(x, g):
        raise NotImplementedError("not yet")

    with pytest.raises(NotImplementedError):
        CHECK(softplus_with_backward(stub))


def test_a_changed_forward_is_reported():
    answers = softplus_with_backward(lambda x, g: g * sigmoid(x))
    answers.Softplus.forward = staticmethod(lambda ctx, x: (ctx.save_for_backward(x), np.maximum(x, 0))[1])
    with pytest.raises(AssertionError, match="Softplus.forward no longer computes log"):
        CHECK(answers)


def test_missing_class_is_reported():
    with pytest.raises(AssertionError, match="no class named Softplus"):
        CHECK(SimpleNamespace())
