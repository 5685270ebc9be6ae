"""Check for lesson 1: the learner's Softplus.backward against finite differences.

check(answers) returns None when the backward is right, lets NotImplementedError from the stub
through (not attempted), and raises AssertionError saying what went wrong otherwise.
"""

import numpy as np

import minigrad as mg
from minigrad.tools.gradcheck import numerical_gradient

from . import _common as common

# Points on both sides of 0, and upstream gradients that are not all 1, so that forgetting to
# multiply by `grad` changes the answer.
X = np.array([[-3.0, -0.5, 0.0], [0.7, 2.0, 4.5]])
UPSTREAM = np.array([[0.5, -1.5, 2.0], [3.0, -0.25, 1.25]])
# Far out in both tails, where e^x or e^-x overflows.
X_FAR = np.array([-800.0, -40.0, 40.0, 800.0])


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-8))


def _run_backward(softplus: type, x: np.ndarray, upstream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward values, dL/dx) for L = sum(upstream * softplus(x)), through the learner's class."""
    leaf = mg.tensor(x, requires_grad=True, name="x")
    out = softplus.apply(leaf)
    try:
        out.backward(upstream)
    except NotImplementedError:  # the stub: not attempted yet
        raise
    except RuntimeError as error:  # the engine checks every gradient's shape and dtype
        raise AssertionError(f"{error}: Softplus.backward must return an array shaped like x") from None
    assert leaf.grad is not None, (
        "Softplus.backward returned None: return the gradient for x (an array shaped like x)"
    )
    return out.data, np.asarray(leaf.grad)


def _finite_differences(softplus: type, x: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    probe = mg.tensor(x.copy())

    def loss() -> float:
        with mg.no_grad():
            return float(np.sum(upstream * softplus.apply(probe).data))

    return numerical_gradient(loss, probe, eps=1e-6)


def _diagnose(x: np.ndarray, values: np.ndarray, got: np.ndarray, expected: np.ndarray) -> str:
    """Name the mistake whose fingerprint the wrong gradient carries, else the worst element."""
    g = UPSTREAM
    if _close(got, expected / g):
        return ("your backward returns d softplus/dx but ignores `grad`, the gradient arriving from "
                "the output. Chain rule: dL/dx = grad * d softplus/dx. Multiply by grad.")
    if _close(got, -expected):
        return ("every element has the right size but the wrong sign: the derivative of "
                "log(1 + e^x) is positive everywhere (softplus only ever increases).")
    if _close(got, g - expected):
        return ("you computed grad * 1 / (1 + e^x), which is sigmoid(-x): the sign in the exponent is "
                "flipped. The slope should approach 1 for large x and 0 for very negative x.")
    if _close(got, g * values):
        return ("you multiplied grad by softplus(x) itself, the forward's value. The backward needs "
                "the derivative of softplus, which is a different function of x.")
    scale = common.scale_between(got, expected)
    if scale is not None:
        return (f"your gradient has the right shape of curve but is {common.explain_factor(scale)} "
                "everywhere: a missing or extra constant factor (the derivative of log(1 + e^x) is "
                "e^x / (1 + e^x), with no factor in front)")
    worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
    index = list(int(i) for i in worst)
    return (f"at x{index} = {x[worst]:g} with incoming grad {g[worst]:g}, your backward gave "
            f"{got[worst]:.6g} but finite differences give {expected[worst]:.6g}")


def check(answers) -> None:
    assert hasattr(answers, "Softplus"), "your file has no class named Softplus"
    softplus = answers.Softplus

    values, got = _run_backward(softplus, X, UPSTREAM)
    assert _close(values, np.logaddexp(0.0, X)), (
        "Softplus.forward no longer computes log(1 + e^x); restore it (the exercise is the backward)"
    )
    expected = _finite_differences(softplus, X, UPSTREAM)
    assert _close(got, expected), _diagnose(X, values, got, expected)

    ones = np.ones_like(X_FAR)
    with np.errstate(all="ignore"):
        _, far = _run_backward(softplus, X_FAR, ones)
    bad = ~np.isfinite(far)
    assert not bad.any(), (
        f"at x = {X_FAR[bad][0]:g} your backward gave {far[bad][0]}: np.exp overflowed to inf "
        "(and inf / inf is nan). Write the derivative with e^-|x|, which never overflows, "
        "choosing the form per element with np.where."
    )
    far_expected = _finite_differences(softplus, X_FAR, ones)
    assert _close(far, far_expected), (
        f"for very large |x| (x = {X_FAR.tolist()}) your backward gave {far.tolist()} but the slope "
        f"there is {np.round(far_expected, 6).tolist()}: check the tails of your formula"
    )
