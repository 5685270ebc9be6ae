"""Shared pieces for the lesson checks.

A check's job is to turn "your numbers differ from the reference" into a sentence the learner
can act on: which row is off, and whether by a sign, by a missing repeat or by a missing path.
The reference always comes from minigrad's own backward, confirmed by central differences; a
check never looks at lessons/solutions.

The checks are modules of this package, minigrad.learn.course.checks, imported by
`minigrad.learn.course.grading.load_check`; a check imports this file as `from . import _common
as common`, and the lab's answer page uses its diagnosis too. They import minigrad's layers
(`from minigrad.engine import ...`), never the `minigrad` root, which loads the course.

Other lesson helpers may add functions here (append only).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from minigrad.engine import Function, RowSparse, Tensor, no_grad, tensor, to_dense
from minigrad.learn.course.learner import probe, run
from minigrad.learn.course.wire import Opaque
from minigrad.tools.gradcheck import compare_gradients, numerical_gradient

# A learner's float32 answer is fine; a wrong formula is off by far more than this.
RTOL, ATOL = 1e-5, 1e-6


# ---- calling the learner's code --------------------------------------------------------------

def answer_function(answers: ModuleType, name: str) -> Callable[..., Any]:
    """The learner's function `name`, or a diagnosis saying it is missing."""
    function = getattr(answers, name, None)
    if not callable(function):
        raise AssertionError(
            f"the exercise file has no function named {name}(); keep the stub's name and signature"
        )
    return function


def call_answer(function: Callable[..., Any], *args: Any, hint: str = "") -> Any:
    """Call the learner's function on copies of `args`.

    NotImplementedError propagates (the runner reports "not attempted"); any other exception
    becomes an AssertionError that names it and adds `hint` (e.g. the shapes involved).
    """
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    try:
        return function(*copies)
    except NotImplementedError:
        raise
    except Exception as error:  # the learner's bug, reported rather than crashing the check
        message = f"{function.__name__}() raised {kind_of(error)}: {error}"
        raise AssertionError(message + (f"\n{hint}" if hint else "")) from error


def kind_of(error: BaseException) -> str:
    """The name of an error's type; for an error raised in the learner's process, the name its
    type had there (LearnerRaised carries it as `kind`)."""
    return getattr(error, "kind", type(error).__name__)


def type_name(value: Any) -> str:
    """The name of a value's type as the learner knows it: for an object that came back from
    their process as a name only (an Opaque), the name of its type there."""
    return getattr(value, "type_name", None) or type(value).__name__


def as_array(value: Any, what: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The learner's answer as a float64 array.

    Accepts a numpy array, a minigrad Tensor, a RowSparse, a nested list, or (when `shape`
    is given) a dict {row: gradient of that row} whose missing rows are zero.
    """
    if value is None:
        raise AssertionError(f"{what}: your function returned None; return a numpy array")
    if isinstance(value, Opaque):
        raise AssertionError(f"{what}: your function returned a {value.type_name} ({value.text}), not an "
                             "array of numbers; return a numpy array")
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, RowSparse):
        value = value.to_dense()
    if isinstance(value, dict):
        if shape is None:
            raise AssertionError(f"{what}: return a numpy array, not a dict")
        value = _rows_to_array(value, what, shape)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"{what}: could not read your answer ({type_name(value)}) as an array of numbers: {error}"
        ) from error
    if not np.all(np.isfinite(array)):
        raise AssertionError(f"{what}: your answer contains NaN or infinity")
    return array


def _rows_to_array(rows: dict, what: str, shape: tuple[int, ...]) -> np.ndarray:
    dense = np.zeros(shape)
    for row, gradient in rows.items():
        if not isinstance(row, (int, np.integer)) or not 0 <= row < shape[0]:
            raise AssertionError(
                f"{what}: the dict key {row!r} is not a row of the table (rows are ints in [0, {shape[0]}))"
            )
        gradient = np.asarray(gradient, dtype=np.float64)
        if gradient.shape != shape[1:]:
            raise AssertionError(
                f"{what}: the gradient for row {row} has shape {gradient.shape}, expected {shape[1:]}"
            )
        dense[row] = gradient
    return dense


def expect_shape(got: np.ndarray, shape: tuple[int, ...], what: str,
                 known: dict[tuple[int, ...], str] | None = None) -> None:
    """Fail with a diagnosis when `got` does not have `shape`; `known` maps typical wrong shapes
    to what they usually mean (e.g. a transposed answer)."""
    shape = tuple(shape)
    if got.shape == shape:
        return
    explanation = (known or {}).get(got.shape, "")
    raise AssertionError(
        f"{what} has shape {got.shape}, expected {shape}" + (f": {explanation}" if explanation else "")
    )


# ---- the reference: minigrad's backward, confirmed by finite differences ------------------

def reference_gradient(fn: Callable[..., Tensor], inputs: Sequence[Any], wrt: int = 0,
                       upstream: np.ndarray | None = None, eps: float = 1e-6) -> np.ndarray:
    """d sum(upstream * fn(*inputs)) / d inputs[wrt], from minigrad's backward in float64.

    Float arrays become float64 tensors (only inputs[wrt] requires grad); other inputs (ids)
    pass through. The result is also compared with central differences, so a check never
    trusts an unverified reference.
    """
    tensors = [
        tensor(np.asarray(x, dtype=np.float64), requires_grad=(i == wrt))
        if np.asarray(x).dtype.kind == "f" else x
        for i, x in enumerate(inputs)
    ]
    leaf = tensors[wrt]
    out = fn(*tensors)
    weights = np.ones(out.shape) if upstream is None else np.asarray(upstream, dtype=np.float64)
    out.backward(weights)
    analytical = np.asarray(to_dense(leaf.grad), dtype=np.float64)

    def loss_at() -> float:
        with no_grad():
            return float(np.sum(weights * fn(*tensors).data))

    numerical = numerical_gradient(loss_at, leaf, eps)
    if not np.allclose(analytical, numerical, rtol=1e-4, atol=1e-6):
        raise RuntimeError(
            "reference_gradient: minigrad's backward disagrees with finite differences "
            f"(max difference {np.abs(analytical - numerical).max():.3g}); this is a bug in "
            "minigrad or in the check, not in your answer"
        )
    return analytical


# ---- turning a difference into words ---------------------------------------------------------

def close(got: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    return bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def times(count: int) -> str:
    """1 -> 'once', 2 -> 'twice', k -> 'k times'."""
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def scale_between(got: np.ndarray, expected: np.ndarray, rtol: float = RTOL,
                  atol: float = ATOL) -> float | None:
    """The scalar c with got == c * expected, or None when the two are not proportional."""
    norm = float(np.sum(expected * expected))
    if norm == 0.0:
        return None
    c = float(np.sum(got * expected)) / norm
    return c if close(got, c * expected, rtol, atol) else None


def explain_factor(c: float) -> str:
    """'2 times too large', '3 times too small', or 'scaled by 0.7'."""
    for k in range(2, 1001):
        if np.isclose(c, k, rtol=1e-4):
            return f"{k} times too large"
        if np.isclose(c, 1 / k, rtol=1e-4):
            return f"{k} times too small"
    return f"scaled by {c:.4g}"


def short(vector: np.ndarray, digits: int = 4) -> str:
    return np.array2string(np.asarray(vector), precision=digits, separator=", ", threshold=8)


def _row_problem(got: np.ndarray, expected: np.ndarray, label: str,
                 parts: Sequence[tuple[str, np.ndarray]], kind: str) -> tuple[int, str] | None:
    """What is wrong with one row, as (rank, sentence); None when it is right.

    The rank orders a report: the most specific stories (a nonzero untouched row, a missing
    repeat or path) come before the vaguer ones (a scale, "off").
    """
    if close(got, expected):
        return None
    if not np.any(expected):
        return 0, (f"{label} should be exactly zero (nothing reads it, so no gradient reaches it), "
                   f"but yours is {short(got)}")
    missing = missing_parts(got, parts)
    if missing is not None:
        return 1, _left_out(label, parts, missing, kind)
    if not np.any(got):
        return 2, _all_zero(label, expected, parts, kind)
    if close(got, -expected):
        return 2, f"{label} has the wrong sign: expected {short(expected)}, got {short(got)}"
    c = scale_between(got, expected)
    if c is not None:
        return 3, f"{label} is {explain_factor(c)}: expected {short(expected)}, got {short(got)}"
    return 4, f"{label} is off: expected {short(expected)}, got {short(got)}"


def _left_out(label: str, parts: Sequence[tuple[str, np.ndarray]], missing: list[int], kind: str) -> str:
    """A row that is the sum of some of its contributions: which occurrences or paths it lacks."""
    if kind == "occurrence":
        kept = len(parts) - len(missing)
        got_what = "the gradient of one occurrence" if kept == 1 else f"the gradients of {kept} occurrences"
        left_out = " and ".join(parts[i][0] for i in missing)
        return (f"{label} got {got_what}; it appears {times(len(parts))} in the batch "
                "(a repeated id must receive the sum of the gradients of all its occurrences); "
                f"missing: {left_out}")
    names = " and ".join(parts[i][0] for i in missing)
    return f"{label} is missing the gradient from {names}"


def _all_zero(label: str, expected: np.ndarray, parts: Sequence[tuple[str, np.ndarray]], kind: str) -> str:
    """A row left at zero that should have received gradient: from where."""
    if not parts:
        return (f"{label} is all zero, but it should be {short(expected)}: a missing path "
                "(the gradient that reaches this row was never added in)")
    names = " and ".join(name for name, _ in parts)
    where = (f"it is read at {names}: no gradient from there was added (a skipped position?)"
             if kind == "occurrence" else f"it gets gradient from {names}: none of them was added")
    return f"{label} is all zero, but {where}"


def missing_parts(got: np.ndarray, parts: Sequence[tuple[str, np.ndarray]]) -> list[int] | None:
    """Indices of the contributions left out when `got` is the sum of a strict, non-empty subset."""
    n = len(parts)
    if n < 2 or n > 8:  # 2^8 subsets at most: enough for a lesson's small batches
        return None
    for size in range(n - 1, 0, -1):
        for subset in itertools.combinations(range(n), size):
            if close(got, sum(parts[i][1] for i in subset)):
                return [i for i in range(n) if i not in subset]
    return None


def diagnose_rows(got: np.ndarray, expected: np.ndarray, what: str,
                  parts: dict[int, Sequence[tuple[str, np.ndarray]]] | None = None,
                  kind: str = "occurrence", labels: Sequence[str] | None = None) -> list[str]:
    """Compare a (rows, ...) gradient with the reference row by row; one sentence per wrong row,
    the most specific first.

    parts: for a row, the contributions that should add up to it, as (name, array) pairs:
           one per occurrence of its id (kind="occurrence") or one per path (kind="path").
    """
    parts = parts or {}
    problems = []
    for r in range(expected.shape[0]):
        label = f"{what} row {r}" + (f" ({labels[r]})" if labels else "")
        problem = _row_problem(got[r], expected[r], label, parts.get(r, ()), kind)
        if problem:
            problems.append(problem)
    return [sentence for _, sentence in sorted(problems, key=lambda p: p[0])]  # stable: rows stay in order


def assert_matches(got: np.ndarray, expected: np.ndarray, what: str,
                   mistakes: Sequence[tuple[np.ndarray, str]] = (), by_rows: bool = True,
                   parts: dict[int, Sequence[tuple[str, np.ndarray]]] | None = None,
                   kind: str = "occurrence", labels: Sequence[str] | None = None,
                   max_reported: int = 3) -> None:
    """Pass when `got` matches `expected`; otherwise raise AssertionError with the best diagnosis.

    Tried in order: the named typical `mistakes` (array the mistake would produce, diagnosis);
    the whole answer flipped or scaled; then (by_rows) a row-by-row report.
    """
    expect_shape(got, expected.shape, what)
    if close(got, expected):
        return
    _fail_on_a_whole_answer_story(got, expected, what, mistakes)
    rows_report = diagnose_rows(got, expected, what, parts, kind, labels) if by_rows and got.ndim else []
    if rows_report:
        extra = len(rows_report) - max_reported
        tail = [f"... and {extra} more rows differ"] if extra > 0 else []
        raise AssertionError("\n".join(rows_report[:max_reported] + tail))
    worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
    raise AssertionError(
        f"{what} is off: at {[int(i) for i in worst]} expected {expected[worst]:.6g}, got {got[worst]:.6g}"
    )


def _fail_on_a_whole_answer_story(got: np.ndarray, expected: np.ndarray, what: str,
                                  mistakes: Sequence[tuple[np.ndarray, str]]) -> None:
    """Raise the diagnosis when the whole answer tells one story: a named typical mistake, all
    zero, flipped, or scaled by a constant. Return when it does not (then look row by row)."""
    for wrong, diagnosis in mistakes:
        if np.shape(wrong) == got.shape and close(got, wrong):
            raise AssertionError(f"{what}: {diagnosis}")
    if not np.any(got):
        raise AssertionError(f"{what} is all zero: no gradient reached it (a missing path)")
    c = scale_between(got, expected)
    if c is not None and np.isclose(c, -1):
        raise AssertionError(f"{what}: the sign is flipped everywhere (you returned minus the gradient)")
    if c is not None:
        raise AssertionError(f"{what} is {explain_factor(c)} everywhere (a missing or extra constant factor)")


# ---- answers that are a single number (appended for lesson 7) --------------------------------

def assert_number(got: Any, expected: float, what: str, mistakes: Sequence[tuple[float, str]] = (),
                  rtol: float = RTOL) -> None:
    """Pass when the learner's number matches `expected`; otherwise name the typical mistake it
    equals (a (value, diagnosis) pair), or say how far off it is.

    got: the learner's answer, already read with as_array and of shape ().
    """
    value, want = float(got), float(expected)
    if np.isclose(value, want, rtol=rtol, atol=0.0):
        return
    numbers = f"(expected {want:.6g}, got {value:.6g})"
    for wrong, diagnosis in mistakes:  # a mistake's value may be 0 (up to rounding): an atol too
        if np.isclose(value, wrong, rtol=rtol, atol=1e-12):
            raise AssertionError(f"{what}: {diagnosis} {numbers}")
    if np.isclose(value, -want, rtol=rtol, atol=0.0):
        raise AssertionError(f"{what} has the wrong sign {numbers}")
    if not want:
        raise AssertionError(f"{what} should be 0, got {value:.6g}")
    factor = value / want
    if abs(factor) < 1e-3 or abs(factor) > 1e3:  # no factor to speak of: say how far off it is
        raise AssertionError(f"{what} is off by {value - want:+.6g} {numbers}")
    raise AssertionError(f"{what} is off by a factor {factor:.6g} {numbers}")


# ---- answers that are one number (added for lessons 8 and 11) ---------------------------------

def as_number(value: Any, what: str, integer: bool = False) -> float:
    """The learner's answer as one finite float (or, with `integer`, a whole number).

    Accepts a Python or numpy number, a 0-d or one-element array, or a one-element Tensor.
    """
    if value is None:
        raise AssertionError(f"{what}: your function returned None; return a number")
    if isinstance(value, Opaque):
        raise AssertionError(f"{what}: your function returned a {value.type_name} ({value.text}), not a "
                             "number")
    if isinstance(value, Tensor):
        value = value.data
    array = np.asarray(value)
    if array.dtype.kind not in "biuf" or array.size != 1:
        raise AssertionError(
            f"{what}: expected one number, got {type_name(value)}"
            + (f" of shape {array.shape}" if array.dtype.kind in "biuf" else "")
        )
    number = float(array.reshape(()))
    if np.isnan(number):
        raise AssertionError(f"{what}: your answer is NaN (a 0 * log 0, 0 / 0 or inf - inf somewhere?)")
    if not np.isfinite(number):
        raise AssertionError(f"{what}: your answer is infinite (a log of 0, or a division by 0?)")
    if integer and number != round(number):
        raise AssertionError(f"{what}: expected a whole number, got {number}")
    return number


# ---- a learner's Function whose second input is integer ids (appended for lessons 4 and 5) ----

def float_input_gradient(grads: Any, op: str, grad_name: str, ids_name: str, ids_are: str) -> Any:
    """The gradient of the first input from `op.backward`'s result, which must be the pair
    (dL/d<first input>, None): the second input (ids_name, e.g. "ids") is integers.

    ids_are: what those integers are, for the message ("positions in the table").
    """
    if not isinstance(grads, (tuple, list)) or len(grads) != 2:
        length = f" of length {len(grads)}" if isinstance(grads, (tuple, list)) else ""
        raise AssertionError(
            f"{op}.backward must return two gradients, one per input of forward: ({grad_name}, None), "
            f"where None stands for {ids_name} (integers get no gradient); yours returned "
            f"{type(grads).__name__}{length}")
    if grads[1] is not None:
        raise AssertionError(f"{op}.backward returned a gradient for {ids_name}; they are {ids_are}, not "
                             "numbers to nudge: return None in their place")
    if grads[0] is None:
        raise AssertionError(f"{op}.backward returned None for {grad_name}: return that gradient")
    return grads[0]


def answer_function_class(answers: ModuleType, name: str) -> Any:
    """The learner's class `name`, which must subclass minigrad.Function, or a diagnosis. (From
    the learner's process it comes back as its name; probes reach its methods there.)"""
    found = getattr(answers, name, None)
    if found is None:
        raise AssertionError(f"the exercise file has no class named {name}; keep the stub's name")
    if not (getattr(found, "is_function", False) or isinstance(found, type) and issubclass(found, Function)):
        raise AssertionError(f"{name} must be a class that subclasses minigrad.Function "
                             f"(class {name}(mg.Function)), as in the stub")
    return found


# ---- a learner's op run by the engine, against the reference (for the learner's process) -----

def finite_difference_report(name: str, analytical: Any, expected: np.ndarray) -> str:
    """'' when the gradient the learner's op gave through the engine matches `expected` (minigrad's
    gradient, which reference_gradient confirms by central differences); else a report line in
    gradcheck's words."""
    if analytical is None:
        return f"  FAIL no gradient reached {name} (its .grad is None after backward)"
    got = np.asarray(to_dense(analytical) if isinstance(analytical, RowSparse) else analytical,
                     dtype=np.float64)
    if got.shape != expected.shape:
        return f"  FAIL {name}.grad has shape {got.shape}, but {name} has shape {expected.shape}"
    result = compare_gradients(name, expected, got)
    return "" if result.ok else result.describe()


def assert_backward_leaves_its_inputs(op: str, wrote_into_grad: bool, first: np.ndarray, second: np.ndarray,
                                      on: str = "") -> None:
    """A backward writes into neither the gradient it is given (the engine may hand the same
    array to another op: an addition gives one array to both its inputs) nor what its forward
    saved (a backward may run twice on one forward, with backward(retain_graph=True)).

    wrote_into_grad: whether the backward changed the grad array it was given; first, second:
    what two runs of the backward on one forward returned (as arrays); on: the case, for the message.
    """
    if wrote_into_grad:
        raise AssertionError(
            f"{op}.backward wrote into grad, the gradient it was given{on}: the engine may hand that same "
            "array to another op too (an addition gives one array to both of its inputs), so writing into "
            "it changes their gradient as well. Build what you return in new arrays (grad.reshape(...) is "
            "a view of grad: writing into it writes into grad)")
    if not np.array_equal(first, second, equal_nan=True):
        raise AssertionError(
            f"run a second time on the same forward{on}, {op}.backward returned a different gradient: it "
            "wrote into what forward saved in ctx. The engine may run a backward twice on one forward "
            "(backward(retain_graph=True)): work on a copy (ctx.saved.copy()), leave ctx as forward left it")


# ---- a learner's function the lesson calls on its own arrays (appended for lessons 9 to 13) ------

def call_keeping_inputs(function: Callable[..., Any], *args: Any, hint: str = "") -> Any:
    """Call the learner's function as `call_answer` does, then fail when it changed an array it
    was given in place: a lesson hands it the lesson's own tables, and reads them again after.
    The arrays are compared where the learner's code runs (`call_noting_changes`)."""
    answers = getattr(function, "answers", None)
    if answers is None:  # a function of this process, not one reached through Answers
        answers = SimpleNamespace(**{function.__name__: function})
    try:
        report = run(answers, call_noting_changes, getattr(function, "name", function.__name__), *args)
    except NotImplementedError:
        raise
    except Exception as error:  # the learner's bug, reported rather than crashing the check
        message = f"{function.__name__}() raised {kind_of(error)}: {error}"
        raise AssertionError(message + (f"\n{hint}" if hint else "")) from error
    if report["changed"]:
        raise AssertionError(
            f"{function.__name__}() changed its argument {report['changed'][0]} in place; the lesson passes "
            "its own table and reads it again afterwards: work on a copy (x = x - m, not x -= m)")
    return report["result"]


@probe
def call_noting_changes(answers: Any, name: str, *args: Any) -> dict:
    """In the learner's process: their function `name` on copies of `args`; what it returned, and
    the names of the arrays among `args` it changed in place."""
    function = getattr(answers, name)
    given = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    result = function(*given)
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = []
    changed = [names[position] if position < len(names) else f"argument {position + 1}"
               for position, (before, after) in enumerate(zip(args, given))
               if isinstance(before, np.ndarray) and not np.array_equal(before, after, equal_nan=True)]
    return {"result": result, "changed": changed}
