"""Check analytical gradients against central finite differences, in float64.

For an output y = fn(*inputs) we fix random weights w (seeded) and check the gradient of the
scalar L = sum(w * y). For a scalar loss that is just its gradient; for a tensor output a
wrong Jacobian entry shows up in L for every w but a set of measure zero.

    dL/dx[i]  ~  (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)        (full: every element)
    dL/dx . u ~  (L(x + eps u)   - L(x - eps u))   / (2 eps)        (directions=k: k random u)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from minigrad.engine import Tensor, no_grad, recording, to_dense


class GradcheckError(AssertionError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


@dataclass
class InputCheck:
    """How one input's analytical gradient compared with finite differences."""

    name: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    worst_index: tuple[int, ...] | None  # None along random directions, or when the input is empty
    numerical: float
    analytical: float
    ok: bool
    nonfinite: str | None = None  # which side held NaN or inf, and where: always a failure

    def describe(self) -> str:
        verdict = "ok  " if self.ok else "FAIL"
        where = "worst direction"
        if self.worst_index is not None:
            where = f"worst at {element(self.name, self.worst_index)}"
        line = (
            f"  {verdict} {self.name} {self.shape}: max abs error {self.max_abs_error:.3g}, "
            f"max rel error {self.max_rel_error:.3g}; {where}: numerical {self.numerical:.8g}, "
            f"analytical {self.analytical:.8g}"
        )
        return line + (f"\n       {self.nonfinite}" if self.nonfinite else "")


def element(name: str, index: tuple[int, ...]) -> str:
    """'x[1, 2]' (or 'x' for a 0-d input): how a report names one element."""
    return f"{name}[{', '.join(str(i) for i in index)}]" if index else name


def nonfinite_note(name: str, **sides: np.ndarray) -> str | None:
    """'analytical gradient is nan at x[1]; numerical gradient is ...' for each side (keyword =
    its name) holding NaN or inf, with the first such element and how many there are."""
    notes = []
    for side, values in sides.items():
        where = np.argwhere(~np.isfinite(values))
        if len(where):
            first = tuple(int(i) for i in where[0])
            count = f" ({len(where)} non-finite elements)" if len(where) > 1 else ""
            notes.append(f"{side} gradient is {values[first]} at {element(name, first)}{count}")
    return "; ".join(notes) or None


@dataclass
class GradcheckReport:
    ok: bool
    mode: str
    eps: float
    atol: float
    rtol: float
    inputs: list[InputCheck] = field(default_factory=list)
    # why some gradients could not be compared: a wrong shape or dtype, or a backward that raised
    problems: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = "gradcheck passed" if self.ok else "gradcheck FAILED"
        lines = [
            f"{head} ({self.mode}, central differences in float64, eps={self.eps:g}, "
            f"pass when |num - ana| <= {self.atol:g} + {self.rtol:g} * |num|)"
        ]
        lines += [f"  FAIL {problem}" for problem in self.problems]
        lines += [c.describe() for c in self.inputs]
        return "\n".join(lines)


def _float64_leaves(inputs: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """Float64 copies of the inputs; the indices of those to check (requires_grad)."""
    copies, checked = [], []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype != np.float64:
                warnings.warn(
                    f"gradcheck: input {i} is {x.dtype}; checking a float64 copy (finite "
                    "differences in float32 are dominated by rounding error)",
                    stacklevel=3,
                )
            copies.append(Tensor(x.data.astype(np.float64), requires_grad=True, name=x.name))
            checked.append(i)
        elif isinstance(x, Tensor) and x.dtype.kind == "f":
            copies.append(Tensor(x.data.astype(np.float64), name=x.name))
        else:
            copies.append(x)
    if not checked:
        raise ValueError("gradcheck: no input requires grad; pass tensors with requires_grad=True")
    return copies, checked


def gradcheck(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    fast: bool | None = None,
    directions: int | None = None,
    seed: int = 0,
    raise_exception: bool = True,
    differences: Callable[[Callable[[np.ndarray], float], np.ndarray, float], np.ndarray] | None = None,
) -> GradcheckReport:
    """Compare fn's backward with central differences for every input that requires grad.

    fn:         called as fn(*inputs), returns a Tensor (any shape).
    differences: the full check's central difference, `differences(f, x, eps)` -> dL/dx for f a
                function of x's values (default: minigrad's own `central_difference`; lesson 2
                passes the learner's).
    directions: None (the default) checks every element; an int k checks v^T J u along k random
                directions u instead (one backward, two forwards each), for large inputs; when
                that fails, the full check runs to name the worst element.
    fast:       deprecated: fast=True is directions=4 (or the `directions` given), fast=False the
                full check.
    Returns a GradcheckReport (truthy when ok); raises GradcheckError with its text when
    `raise_exception` and the check fails.
    """
    directions = _directions_asked(fast, directions)
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    leaves, checked = _float64_leaves(inputs)
    rng = np.random.default_rng(seed)

    out = fn(*leaves)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    weights = rng.standard_normal(out.shape) if out.size > 1 else np.ones(out.shape)

    def loss_at() -> float:
        with no_grad():
            return float(np.sum(weights * fn(*leaves).data))

    names = {i: leaves[i].name or f"input {i}" for i in checked}
    problems, analytical = _analytical_gradients(out, weights, leaves, checked, names)
    full = (loss_at, leaves, analytical, names, eps, atol, rtol, differences or central_difference)
    if directions is not None:
        report = _along_directions(loss_at, leaves, analytical, names, eps, atol, rtol, directions, rng)
        if not report.ok:
            problems += report.problems  # a NaN seen along a direction fails, whatever follows
            report = _full(*full)
            report.mode = "random directions failed; full check"
    else:
        report = _full(*full)
    report.problems = problems
    report.ok = report.ok and not problems
    if raise_exception and not report.ok:
        raise GradcheckError(str(report))
    return report


def _directions_asked(fast: bool | None, directions: int | None) -> int | None:
    """How many random directions to check along (None: every element), from `directions` and
    the deprecated `fast`."""
    if fast is not None:
        warnings.warn("gradcheck(fast=...) is deprecated and will be removed in the next release; use "
                      "gradcheck(directions=k) for k random directions, or leave directions=None to check "
                      "every element", DeprecationWarning, stacklevel=3)
        if not fast:
            return None
        directions = 4 if directions is None else directions
    if directions is None:
        return None
    if isinstance(directions, bool) or not isinstance(directions, int | np.integer) or directions < 1:
        raise ValueError(f"gradcheck: directions must be a whole number >= 1 (random directions to check "
                         f"along) or None (every element), got {directions!r}")
    return int(directions)


def _analytical_gradients(out: Tensor, weights: np.ndarray, leaves: list[Any], checked: list[int],
                          names: dict[int, str]) -> tuple[list[str], dict[int, np.ndarray]]:
    """Backward of L = sum(weights * out): (problems, {input index: dL/dinput as float64}).

    Every gradient a backward sends into a checked input is checked against that input's shape
    and dtype first; an input with a problem, or every input when the backward raised, is left
    out of the comparison (comparing a (1, 3) gradient with a (3,) one would broadcast).
    """
    edges = _EdgeCheck(leaves, checked, names)
    if out.requires_grad:  # else no checked input reaches the output: all gradients are 0
        try:
            with recording(edges):
                (out * Tensor(weights)).sum().backward()
        except Exception as exc:  # a bug in a backward is a failed check, not a crash
            edges.problems.append(f"backward raised {type(exc).__name__}: {exc}")
            return edges.problems, {}
    analytical = {}
    for i in checked:
        if i in edges.flagged:
            continue
        grad = leaves[i].grad
        problem = None if grad is None else _gradient_problem(grad, leaves[i])
        if problem:  # reached .grad without passing an edge we saw
            edges.problems.append(f"{names[i]}.grad is {problem}, but {names[i]} has shape {leaves[i].shape}")
            continue
        analytical[i] = np.zeros(leaves[i].shape) if grad is None else np.asarray(to_dense(grad), np.float64)
    return edges.problems, analytical


class _EdgeCheck:
    """Called by the engine for every gradient an edge carries during the backward: a gradient
    into a checked input that has the wrong shape or dtype is a problem naming the op, its input
    slot and both shapes, and that input is flagged (left out of the comparison)."""

    def __init__(self, leaves: list[Any], checked: list[int], names: dict[int, str]):
        self.leaves, self.names = leaves, names
        self.position = {id(leaves[i]): i for i in checked}
        self.problems: list[str] = []
        self.flagged: set[int] = set()

    def __call__(self, sender: Any, receiver: Any, grad: Any) -> None:
        i = self.position.get(id(getattr(receiver, "variable", None)))
        if i is None:  # not an input this check compares
            return
        problem = _gradient_problem(grad, self.leaves[i])
        if problem:
            slots = [j for j, node in enumerate(sender.next_nodes) if node is receiver]
            slot = " or ".join(str(j) for j in slots)
            leaf = self.leaves[i]
            self.problems.append(f"{sender.name} returned {problem} for its input {slot} "
                                 f"({self.names[i]}, shape {leaf.shape}, dtype {leaf.dtype})")
            self.flagged.add(i)


def _gradient_problem(grad: Any, x: Tensor) -> str | None:
    """What is wrong with `grad` as a gradient for x (its shape, a floating dtype), or None."""
    shape, dtype = getattr(grad, "shape", None), getattr(getattr(grad, "values", grad), "dtype", None)
    if shape is None or dtype is None:
        return f"a {type(grad).__name__}, not an array,"
    if tuple(shape) != x.shape:
        return f"a gradient of shape {tuple(shape)}"
    if np.dtype(dtype).kind != "f":
        return f"a gradient of dtype {dtype} (a gradient must be floating-point)"
    return None


def numerical_gradient(loss_at: Callable[[], float], x: Tensor, eps: float) -> np.ndarray:
    """Central difference of loss_at() in every element of x (perturbed in place, restored)."""
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):  # by index, so any memory layout of x.data works
        original = x.data[index]
        x.data[index] = original + eps
        plus = loss_at()
        x.data[index] = original - eps
        minus = loss_at()
        x.data[index] = original
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float) -> np.ndarray:
    """(f(x + eps e_i) - f(x - eps e_i)) / (2 eps) for every element i of x: the gradient of f
    at x, shaped like x, in float64. x is left as it was. (Lesson 2's exercise writes this.)"""
    x = np.asarray(x)
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        plus = f(x)
        x[index] = original - eps
        minus = f(x)
        x[index] = original
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def _numerical(loss_at: Callable[[], float], x: Tensor, eps: float, differences: Callable) -> np.ndarray:
    """dL/dx by `differences(f, x's array, eps)`, where f(values) evaluates L with x holding
    `values`. A central difference that nudges x's own array in place costs no copy."""
    original = x.data.copy()

    def f(values: np.ndarray) -> float:
        if values is x.data:
            return loss_at()
        x.data[...] = values
        try:
            return loss_at()
        finally:
            x.data[...] = original

    try:
        grad = np.asarray(differences(f, x.data, eps), dtype=np.float64)
    finally:
        x.data[...] = original  # as it was, whatever the differences did to it
    if grad.shape != x.shape:
        raise ValueError(f"gradcheck: differences returned a gradient of shape {grad.shape} for an input "
                         f"of shape {x.shape}")
    return grad


def _full(loss_at, leaves, analytical, names, eps, atol, rtol, differences) -> GradcheckReport:
    report = GradcheckReport(ok=True, mode="full", eps=eps, atol=atol, rtol=rtol)
    for i in analytical:
        numerical = _numerical(loss_at, leaves[i], eps, differences)
        check = compare_gradients(names[i], numerical, analytical[i], atol, rtol)
        report.inputs.append(check)
        report.ok &= check.ok
    return report


def compare_gradients(name: str, numerical: np.ndarray, analytical: np.ndarray, atol: float = 1e-5,
                      rtol: float = 1e-3) -> InputCheck:
    """How `analytical` compares with `numerical` (same shape), element by element: passes when
    every |num - ana| <= atol + rtol * |num| and both are finite."""
    ana = np.asarray(analytical, dtype=np.float64)
    numerical = np.asarray(numerical, dtype=np.float64)
    if ana.size == 0:
        return InputCheck(name, ana.shape, 0.0, 0.0, None, 0.0, 0.0, True)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN is what we want, and it fails
        error = np.abs(numerical - ana)
    finite = np.isfinite(numerical) & np.isfinite(ana)
    # written as "within", not "error > tol": a comparison with NaN is False either way, and
    # an inf numerical value would make the tolerance itself inf
    within = finite & (error <= atol + rtol * np.abs(numerical))
    rel = error / np.maximum(np.abs(numerical), 1e-12)
    # name the first non-finite element, else the worst failing one, else the largest error
    if not finite.all():
        worst = tuple(np.argwhere(~finite)[0])
    else:
        worst = np.unravel_index(np.argmax(np.where(within, -1, error) if not within.all() else error),
                                 error.shape)
    return InputCheck(
        name, ana.shape, float(error.max()), float(rel.max()),
        tuple(int(w) for w in worst), float(numerical[worst]), float(ana[worst]), bool(within.all()),
        nonfinite_note(name, analytical=ana, numerical=numerical),
    )


def _along_directions(loss_at, leaves, analytical, names, eps, atol, rtol, directions,
                      rng) -> GradcheckReport:
    """v^T J u along random directions u. A NaN or inf met along a direction goes into the
    report's problems, so that it still fails when a full check reruns and does not meet it."""
    mode = f"{directions} random directions"
    report = GradcheckReport(ok=True, mode=mode, eps=eps, atol=atol, rtol=rtol)
    for i in analytical:
        x = leaves[i]
        worst = (0.0, 0.0, 0.0, 0.0)  # error, rel, numerical, analytical
        ok = bool(np.isfinite(analytical[i]).all())
        for k in range(directions):
            u = rng.standard_normal(x.shape)
            original = x.data.copy()
            x.data[...] = original + eps * u
            plus = loss_at()
            x.data[...] = original - eps * u
            minus = loss_at()
            x.data[...] = original
            numerical = (plus - minus) / (2 * eps)
            with np.errstate(invalid="ignore"):  # inf * u summed may be NaN: it fails below
                ana = float(np.sum(analytical[i] * u))
            error = abs(numerical - ana)
            if not np.isfinite(numerical):
                report.problems.append(f"{names[i]}: numerical directional derivative is {numerical} "
                                       f"along random direction {k}")
            within = bool(np.isfinite(numerical) and np.isfinite(ana)
                          and error <= atol + rtol * abs(numerical))
            ok &= within
            if not within or error >= worst[0]:
                worst = (error, error / max(abs(numerical), 1e-12), numerical, ana)
        report.inputs.append(InputCheck(names[i], x.shape, worst[0], worst[1], None, worst[2], worst[3], ok,
                                        nonfinite_note(names[i], analytical=analytical[i])))
        report.ok &= ok
    return report
