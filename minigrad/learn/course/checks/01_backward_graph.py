"""Check for lesson 1: the learner's Softplus.backward against finite differences.

check(answers) returns None when the backward is right, lets NotImplementedError from the stub
through (not attempted), and raises AssertionError saying what went wrong otherwise.
"""

import numpy as np

from minigrad.engine import Context, no_grad, tensor
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
    leaf = tensor(x, requires_grad=True, name="x")
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


def _returned(softplus: type, x: np.ndarray, upstream: np.ndarray) -> object:
    """What the learner's backward returns, called directly: the engine may refuse a gradient of
    the wrong shape before this check could say what is wrong with it."""
    ctx = Context()
    softplus.forward(ctx, x.copy())
    grads = softplus.backward(ctx, upstream.copy())
    return grads[0] if isinstance(grads, tuple) and len(grads) == 1 else grads


def _shape_problem(grad: object, x: np.ndarray) -> str | None:
    """Why `grad` cannot be the gradient for x (None, not an array, shape, dtype), or None."""
    if grad is None:
        return "Softplus.backward returned None: return the gradient for x (an array shaped like x)"
    if isinstance(grad, np.generic):  # a numpy number, e.g. from .sum(): a 0-d array
        grad = np.asarray(grad)
    if not isinstance(grad, np.ndarray):
        return (f"Softplus.backward returned a {type(grad).__name__}; return a numpy array shaped "
                f"like x {x.shape} (numpy operations on `grad` and `x` give one)")
    if grad.shape != x.shape:
        head = (f"Softplus.backward returned a gradient of shape {grad.shape} for x of shape {x.shape}; "
                "it must have the shape of x")
        if grad.shape == x.T.shape and grad.ndim > 1:
            return f"{head}: it is transposed"
        if grad.size == x.size:
            return f"{head}: the values are there but reshaped"
        if _broadcasts(grad.shape, x.shape):
            return (f"{head}. It would broadcast to x's shape, so something summed or averaged over an "
                    "axis: every element of x needs its own dL/dx, elementwise (no sum)")
        return head
    if grad.dtype.kind != "f":
        return f"Softplus.backward returned a gradient of dtype {grad.dtype}; a gradient is floating-point"
    return None


def _broadcasts(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _finite_differences(softplus: type, x: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    probe = tensor(x.copy())

    def loss() -> float:
        with no_grad():
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

    problem = _shape_problem(_returned(softplus, X, UPSTREAM), X)
    assert problem is None, problem
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
