"""Check for lesson 2: the learner's central_difference(f, x, eps).

Three probes, each chosen so a typical mistake leaves a recognisable fingerprint:
1. a weighted quadratic with a large eps: central differences are exact for a quadratic, while
   a forward difference is off by exactly +w*eps and a divisor of eps doubles the answer;
2. a weighted cubic with eps = 0.1: the central difference is exactly 3 w x^2 + w eps^2, so an
   estimate that comes out as 3 w x^2 did not use the eps it was given;
3. a smooth minigrad function at eps = 1e-6, against the engine's own backward.
check(answers) returns None on success, lets NotImplementedError through (not attempted) and
raises AssertionError with a diagnosis otherwise.
"""

from collections.abc import Callable

import numpy as np

from minigrad.engine import Tensor, tensor
from minigrad.learn.course.learner import LearnerRaised, probe, run

from . import _common as common

X = np.array([[1.5, -2.0, 0.25], [3.0, -0.75, 0.5]])
WEIGHTS = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 1.5]])
BIG_EPS = 0.25  # a power of two: x +- eps is exact in binary, so the quadratic probe is exact


def _close(a: np.ndarray, b: np.ndarray | float, rtol: float = 1e-9, atol: float = 1e-9) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _name(index: tuple) -> str:
    return "x[" + ", ".join(str(int(i)) for i in index) + "]"


def _smooth(z: Tensor) -> Tensor:
    return (z.tanh() * (z * 0.5).exp()).sum()


# The functions the learner's central_difference is given, by name (a probe gets data only).
FUNCTIONS: dict[str, Callable[[np.ndarray], float]] = {
    "quadratic": lambda z: float(np.sum(WEIGHTS * z**2)),
    "cubic": lambda z: float(np.sum(WEIGHTS[0] * z**3)),
    "smooth": lambda z: _smooth(tensor(z)).item(),
    "cube of a number": lambda z: float(z**3),
}


@probe
def central_difference_of(answers, function: str, x: np.ndarray, eps: float,
                          column_major: bool = False) -> tuple:
    """(what the learner's central_difference returns for FUNCTIONS[function] at x, x afterwards,
    how many times it called the function). `column_major`: x laid out column by column, as a
    transposed array is (data is sent in row order: the layout is made here)."""
    if column_major:
        x = np.asfortranarray(x)
    calls = [0]

    def counted(z: np.ndarray) -> float:
        calls[0] += 1
        return FUNCTIONS[function](z)

    got = answers.central_difference(counted, x, eps)
    return got, x, calls[0]


def _call(answers, function: str, x: np.ndarray, eps: float, column_major: bool = False) -> np.ndarray:
    """Call the learner's function on a copy of x; check x comes back untouched and the shape."""
    before = x.copy()
    try:
        got, x, calls = run(answers, central_difference_of, function, x.copy(), eps, column_major)
    except NotImplementedError:
        raise
    except LearnerRaised as error:
        shape = "a 0-d x, one number," if x.shape == () else f"an x of shape {x.shape}"
        raise AssertionError(f"given {shape} and eps = {eps:g}, central_difference raised {error.kind}: "
                             f"{error}\nit must work for an x of any shape") from error
    x = np.asarray(x)
    moved = np.argwhere(x != before)
    if len(moved):
        index = tuple(moved[0])
        steps = (x[index] - before[index]) / eps
        offset = f"{steps:+g} eps" if abs(steps - round(steps)) < 1e-9 else f"{x[index] - before[index]:+g}"
        raise AssertionError(
            f"after your function returned, {_name(index)} was {float(x[index])!r} instead of "
            f"{float(before[index])!r} "
            f"(it moved by {offset}), and {len(moved)} element(s) of x changed in all. Put each element "
            "back to its original value after evaluating f around it (or nudge a copy of x): "
            "otherwise every later estimate is taken at the wrong point, and so is the caller's."
        )
    assert got is not None, "central_difference returned None: return the gradient array"
    kept = isinstance(got, (np.ndarray, np.generic, Tensor))  # a list or a float: read as float64
    dtype = np.dtype(got.dtype) if kept else x.dtype
    got = common.as_array(got, "central_difference's estimate")
    assert got.shape != () or x.shape == (), (
        f"your function returned one number ({float(got):g}) for an x of shape {x.shape}: that is the "
        "slope along (1, 1, ..., 1), from nudging all of x at once. Nudge one element at a time and "
        "return an array shaped like x."
    )
    assert got.shape == x.shape, (
        f"your gradient has shape {got.shape} but x has shape {x.shape}: return one estimate per "
        "element of x, arranged like x"
    )
    assert dtype == x.dtype, (
        f"your estimates came back as {dtype} for a {x.dtype} x: {dtype} cannot hold them to the digits a "
        "gradient check compares. Collect them in a float64 array (np.zeros(x.shape) is one)"
    )
    _CALLS.append((calls, x.size))
    return got


_CALLS: list[tuple[int, int]] = []  # (calls of f, elements of x) of each probe, checked last


def _check_cost() -> None:
    """Every estimate right: now the cost, two evaluations of f per element."""
    for calls, elements in _CALLS:
        assert calls == 2 * elements, (
            f"your function called f {calls} times for an x of {elements} element(s); a central "
            "difference needs exactly two evaluations per element, f(x + eps e_i) and f(x - eps e_i) "
            "(the cost gradcheck counts on, and lesson 2 measures)")


def _apart(got: float, expected: float, rtol: float) -> tuple[str, str, str]:
    """`got` and `expected` printed with the digits that tell them apart, and, when that takes
    more than six, how far apart they are and what the check allows."""
    for digits in range(6, 18):
        mine, right = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if mine != right:
            break
    if digits == 6:
        return mine, right, ""
    return mine, right, f" (apart by {abs(got - expected):.3g}; the check allows {rtol:g} of the value)"


def _diagnose_quadratic(got: np.ndarray, exact: np.ndarray, eps: float) -> str:
    """Match `got` against the fingerprints of the usual mistakes on f = sum(w x^2)."""
    w = WEIGHTS
    rows = np.broadcast_to(exact.sum(axis=1, keepdims=True), exact.shape)
    fingerprints = [
        (exact + w * eps, "this is the forward difference (f(x + eps) - f(x)) / eps: for "
                          "f = sum(w x^2) it is off by exactly w * eps. Evaluate f at x + eps AND x - eps."),
        (exact - w * eps, "this is the backward difference (f(x) - f(x - eps)) / eps: off by exactly "
                          "-w * eps here. Evaluate f at x + eps AND x - eps."),
        (2 * exact, "every estimate is twice the true slope: f(x + eps) and f(x - eps) are 2 * eps "
                    "apart, so divide their difference by 2 * eps, not by eps."),
        (exact * eps * eps, "every estimate is eps^2 times the true slope: `/ 2 * eps` means "
                            "`(... / 2) * eps` in Python. Write `/ (2 * eps)`."),
        (-exact, "every estimate has the wrong sign: subtract f(x - eps) from f(x + eps), not the "
                 "other way round."),
        (np.full_like(exact, exact.sum()), "every element got the same value, the slope along "
                                          "(1, 1, ..., 1): you nudged all of x at once. Nudge one "
                                          "element at a time."),
        (rows, "each row got one value repeated, the slope of the whole row: you nudged a row "
               "x[i] at once (x[i] += eps on a 2-d array). Nudge one element x[i, j] at a time; "
               "np.ndindex(x.shape) gives every index."),
    ]
    for candidate, diagnosis in fingerprints:
        if _close(got, candidate):
            return diagnosis
    worst = np.unravel_index(np.argmax(np.abs(got - exact)), got.shape)
    mine, right, apart = _apart(got[worst], exact[worst], 1e-9)
    return (f"for f(x) = sum(w * x**2) with eps = {eps:g}, {_name(worst)} = {X[worst]:g}: your estimate "
            f"is {mine}, the exact central difference is {right}{apart}")


def check(answers) -> None:
    assert hasattr(answers, "central_difference"), "your file has no function named central_difference"
    _CALLS.clear()

    # 1. quadratic, large eps: the central difference equals the derivative 2 w x exactly
    got = _call(answers, "quadratic", X, BIG_EPS)
    exact = 2 * WEIGHTS * X
    assert _close(got, exact), _diagnose_quadratic(got, exact, BIG_EPS)

    # 2. cubic: ((x+e)^3 - (x-e)^3) / (2e) = 3 x^2 + e^2, so eps must show up in the answer
    eps = 0.1
    x = X[0]
    w = WEIGHTS[0]
    got = _call(answers, "cubic", x, eps)
    expected = 3 * w * x**2 + w * eps**2
    if not _close(got, expected, rtol=1e-8):
        assert not _close(got, 3 * w * x**2, rtol=1e-5), (
            f"with eps = {eps}, the central difference of sum(w x^3) is exactly 3 w x^2 + w eps^2, but "
            "yours came out as 3 w x^2: your function does not use the eps it is given"
        )
        worst = np.argmax(np.abs(got - expected))
        mine, right, apart = _apart(got[worst], expected[worst], 1e-8)
        raise AssertionError(
            f"for f(x) = sum(w * x**3) on a 1-d x with eps = {eps}, x[{worst}] = {x[worst]:g}: your "
            f"estimate is {mine}, the central difference is {right}{apart}"
        )

    # 3. a smooth function of a 3-d array, against the engine's backward
    x = np.random.default_rng(2).uniform(-1.5, 1.5, size=(2, 3, 2))
    leaf = tensor(x, requires_grad=True)
    _smooth(leaf).backward()
    got = _call(answers, "smooth", x, 1e-6)
    farthest = np.unravel_index(np.argmax(np.abs(got - leaf.grad)), x.shape)
    mine, right, apart = _apart(got[farthest], leaf.grad[farthest], 1e-6)
    assert _close(got, leaf.grad, rtol=1e-6, atol=1e-8), (
        f"for f(x) = sum(tanh(x) * exp(x / 2)) on a 3-d x with eps = 1e-6, {_name(farthest)}: your estimate "
        f"is {mine}, the derivative is {right}{apart}"
    )

    # 4. the same, x laid out column by column (a transposed array): x.reshape(-1) is then a copy
    got = _call(answers, "smooth", x, 1e-6, column_major=True)
    assert not (np.all(got == 0) and np.any(leaf.grad)), (
        "for an x laid out column by column (such as a transposed array) every estimate is 0: your nudges "
        "did not reach x. x.reshape(-1) or x.ravel() of such an array is a copy, so f saw x unchanged; "
        "nudge x[index] itself, with index from np.ndindex(x.shape)"
    )
    assert _close(got, leaf.grad, rtol=1e-6, atol=1e-8), (
        "for an x laid out column by column (such as a transposed array) your estimates differ from the "
        "derivative; nudge x[index] itself, with index from np.ndindex(x.shape)"
    )

    # 5. a 0-d x, a number: its gradient is a number too, shaped ()
    got = _call(answers, "cube of a number", np.array(2.0), 0.1)
    mine, right, apart = _apart(float(got), 3 * 2.0**2 + 0.1**2, 1e-9)
    assert _close(got, 3 * 2.0**2 + 0.1**2, rtol=1e-9), (
        f"for f(x) = x**3 at a 0-d x = 2.0 with eps = 0.1 your estimate is {mine}, the central "
        f"difference is {right}{apart}"
    )
    _check_cost()
