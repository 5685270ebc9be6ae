"""Marking the learner's exercise: `minigrad check N`, `minigrad.check(N, globals())`, and
`minigrad exercise N`, which copies a stub to work on.

Each lesson's check, `minigrad/learn/course/checks/NN_slug.py` (a module of this package), has
`check(answers)`: it returns None on success, lets the stub's NotImplementedError through ("not
attempted") and raises AssertionError with a diagnosis. `minigrad check N` and `minigrad lessons`
mark the learner's copy (see minigrad.learn.course.catalog) when it exists, else the stub itself;
in a notebook, `minigrad.check(N, globals())` marks the notebook's own definitions the same way.

The learner's code runs in a process of its own and the check runs here, in minigrad's: `answers`
is a `minigrad.learn.course.learner.Answers`, through which only data crosses (see that module).
So the verdict is computed where the learner's code cannot reach it.
"""

from __future__ import annotations

import ast
import contextlib
import os
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minigrad.learn.course import cache, learner
from minigrad.learn.course.catalog import Lesson, display_path, get_lesson
from minigrad.learn.course.learner import load_check_module, load_module  # noqa: F401 (this module's API too)

PASS, NOT_ATTEMPTED, FAIL = "pass", "not attempted", "fail"
TIME_LIMIT = 30.0  # seconds a check of a file may take; the solutions take well under one


@dataclass
class CheckResult:
    """The verdict on one exercise; `str()` is what `minigrad check N` prints."""

    lesson: Lesson
    status: str  # PASS, NOT_ATTEMPTED or FAIL
    message: str
    file: Path | None  # the file that was marked; None for answers given as an object (a notebook)
    traceback: str = ""  # the learner's error in full, when their code raised one
    output: str = ""  # what the learner's file printed while it was marked

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def source(self) -> str:
        return display_path(self.file) if self.file is not None else "your notebook's definitions"

    def __str__(self) -> str:
        head = f"lesson {self.lesson.number} exercise ({self.source}): "
        if self.status == PASS:
            return head + "PASS, every check passed"
        if self.status == NOT_ATTEMPTED:
            n = self.lesson.number
            if self.file is None:
                todo = "Fill in the functions in your notebook, then run the check again."
            elif self.file.resolve() == self.lesson.exercise_path.resolve():
                copy = display_path(self.lesson.working_copy)
                todo = (f"Run `minigrad exercise {n}` to copy it to {copy}, fill in the functions "
                        f"there, then `minigrad check {n}` again.")
            else:
                todo = f"Fill in the functions in {self.source}, then `minigrad check {n}` again."
            return head + f"NOT ATTEMPTED\n  {self.message}\n  {todo}"
        return head + "FAIL\n" + textwrap.indent(self.message, "  ")

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython shows str(), not a repr string
        printer.text(str(self))


def load_check(lesson: Lesson) -> Callable[[Any], None]:
    """The lesson's `check(answers)` on answers in this process (a module, a namespace or a
    dict), through the same data format as the learner's process: what the checks' own tests
    use. `minigrad check N` never runs a learner's code here (see check_answers)."""
    module = load_check_module(lesson)

    def check_here(answers: Any) -> None:
        if not isinstance(answers, learner.Answers):
            answers = learner.Answers(learner.Here(answers), module.__name__)
        module.check(answers)

    return check_here


def exercise_functions(lesson: Lesson, classes: bool = False) -> list[str]:
    """The names of the functions the lesson's stub asks for (its top-level `def`s; with
    `classes`, its top-level classes too)."""
    if not lesson.exercise_path.is_file():
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) + ((ast.ClassDef,) if classes else ())
    tree = ast.parse(lesson.exercise_path.read_bytes(), filename=str(lesson.exercise_path))
    return [node.name for node in tree.body if isinstance(node, kinds)]


def _minigrads_own(lesson: Lesson, answers: learner.Answers) -> str | None:
    """Why the answers are not the learner's when a piece the exercise asks for is minigrad's own
    (imported from minigrad, not written), else None."""
    for name in exercise_functions(lesson, classes=True):
        module, own_name = answers.origin(name)
        if module == "minigrad" or module.startswith("minigrad."):
            return (f"{name} is minigrad's own ({module}.{own_name}), imported rather than written: the "
                    "exercise is to write yours")
    return None


def _learners_error(exc: BaseException) -> learner.LearnerRaised | None:
    """The learner's error that `exc` is or wraps (a check wraps it in its diagnosis), if any."""
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen:
        if isinstance(link, learner.LearnerRaised):
            return link
        seen.append(link)
        link = link.__cause__ or link.__context__
    return None


def _with_where(message: str, where: str) -> str:
    first, newline, rest = message.partition("\n")
    return first + where + newline + rest


def _verdict_on_error(lesson: Lesson, exc: BaseException, path: Path | None) -> CheckResult:
    """The verdict when marking stopped at `exc`: a diagnosis (AssertionError), or an error of
    the learner's code (LearnerRaised, SystemExit among them), or the check's own."""
    raised = _learners_error(exc)
    where = raised.where if raised is not None else ""
    full = raised.traceback_text if raised is not None else ""
    if isinstance(exc, AssertionError):
        message = _with_where(str(exc) or "a check failed (no diagnosis given)", where)
    elif raised is not None and raised.kind == "SystemExit":
        called = f"sys.exit({', '.join(raised.exit_args)})"
        message = (f"your code stopped the check: it raised SystemExit, as {called} does{where}. "
                   "The check decides the verdict: remove the call and let your functions "
                   "return their answers")
    elif raised is not None:
        detail = f": {raised.message}" if raised.message else ""
        message = f"your code raised {raised.kind}{detail}{where}"
    else:  # not the learner's code: the check itself stopped
        full = "".join(traceback.format_exception(exc))
        message = (f"the check of lesson {lesson.number} stopped at an error of its own "
                   f"({type(exc).__name__}: {exc}); what your code returned may be of a kind it does "
                   "not expect")
    return CheckResult(lesson, FAIL, message, path, traceback=full)


def _mark(lesson: Lesson, check: Callable[[Any], None], process: learner.LearnerProcess,
          path: Path | None) -> CheckResult:
    """Run the lesson's check, here, on the learner's program running in `process`."""
    process.start()
    if process.load_error is not None:
        if isinstance(process.load_error, NotImplementedError):
            return CheckResult(lesson, NOT_ATTEMPTED, str(process.load_error), path)
        return _verdict_on_error(lesson, process.load_error, path)
    answers = learner.Answers(process, getattr(check, "module_name", ""))
    names = exercise_functions(lesson)
    if names and not any(callable(getattr(answers, name, None)) for name in names):
        listed = ", ".join(f"{name}()" for name in names)
        return CheckResult(lesson, NOT_ATTEMPTED,
                           f"none of the exercise's functions is defined yet ({listed})", path)
    borrowed = _minigrads_own(lesson, answers)
    if borrowed:
        return CheckResult(lesson, FAIL, borrowed, path)
    try:
        check(answers)
    except NotImplementedError as exc:
        return CheckResult(lesson, NOT_ATTEMPTED, str(exc) or "a function still raises NotImplementedError",
                           path)
    except Exception as exc:  # a diagnosis, or an error of the learner's code (or the check's)
        return _verdict_on_error(lesson, exc, path)
    return CheckResult(lesson, PASS, "every check passed", path)


def check_answers(lesson: Lesson, file: Path | str | None = None, answers: Any = None,
                  timeout: float = TIME_LIMIT) -> CheckResult:
    """Run the lesson's check on the learner's answers: `answers` (a module, a namespace or a
    dict such as a notebook's globals()) when given, else the file `file`, else the learner's
    copy from `minigrad exercise N` when it exists, else the stub itself.

    The learner's code always runs in a process of its own (minigrad.learn.course.learner), a
    notebook's definitions sent there as source; the check runs here, and only data crosses.
    Every wait for that process counts against `timeout` seconds; a process that ends, hangs or
    sends what is not data is a FAIL that says so.
    """
    if answers is not None:
        wanted = exercise_functions(lesson, classes=True) or None  # the stub's names, and what they read
        program, path = learner.notebook_program(answers, wanted), None
    else:
        path = Path(file) if file is not None else lesson.answers_path
        if not path.is_file():
            raise FileNotFoundError(f"{'--file ' if file is not None else ''}{path} does not exist")
        program = learner.Program(file=path)
    try:
        module = load_check_module(lesson)
    except FileNotFoundError:
        raise
    except Exception as exc:  # the lesson's check could not be read: not the learner's doing
        return CheckResult(lesson, FAIL, f"the check of lesson {lesson.number} could not run: "
                                         f"{type(exc).__name__}: {exc}", path,
                           traceback="".join(traceback.format_exception(exc)))

    def check_there(remote: learner.Answers) -> None:
        module.check(remote)

    check_there.module_name = module.__name__  # type: ignore[attr-defined]  # _mark reads it with getattr
    process = learner.LearnerProcess(lesson, program, timeout)
    try:
        result = _mark(lesson, check_there, process, path)
    except learner.LearnerStopped as exc:
        result = CheckResult(lesson, FAIL, exc.reason, path)
    finally:
        printed = process.close()
    result.output = printed
    if path is not None:
        cache.remember(lesson, path, result.status, result.message)  # for the map of `minigrad lessons`
    if program.skipped and not result.passed:
        result.message += "\n(not sent to the check: " + "; ".join(program.skipped) + ")"
    return result


def check(number: int, answers: Any) -> CheckResult:
    """`minigrad.check(N, globals())` in a notebook: lesson N's check on `answers` (a module, a
    namespace or a dict of your definitions). Same verdict and diagnosis as `minigrad check N`;
    `result.passed` is a bool. A notebook or an interactive prompt shows the result it returns;
    a plain script gets the verdict printed."""
    if answers is None or isinstance(answers, (str, Path)):
        raise TypeError(
            f"check({number}, answers): answers must be a module, a namespace or a dict such as "
            f"globals(), got {answers!r} (to mark a file, run `minigrad check {number} --file PATH`)"
        )
    result = check_answers(get_lesson(number), answers=answers)
    if not _shows_results():
        print(result)
    return result


def _shows_results() -> bool:
    """Whether an interactive shell displays the value a line returns (IPython, Jupyter, the
    Python prompt); a script shows nothing unless it prints."""
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        return True
    return hasattr(sys, "ps1")


class ExerciseCopyError(OSError):
    """`minigrad exercise N` could not put the copy in the working folder; nothing was written."""


def copy_exercise(lesson: Lesson, force: bool = False,
                  confirm: Callable[[str], bool] | None = None) -> tuple[Path, str]:
    """Copy lesson's stub to the learner's working copy; returns (path, what happened).

    An existing copy that differs from the stub is the learner's work: it is replaced only with
    `force`, or when `confirm(question)` says yes (a terminal asks); otherwise FileExistsError.
    Nothing is written outside the working folder: a copy's path that is a symbolic link (it
    could point anywhere), a folder or another non-file, or a folder that cannot be written,
    is an ExerciseCopyError that says what to do.
    """
    if not lesson.exercise_path.is_file():
        missing = lesson.exercise_path
        raise FileNotFoundError(f"lesson {lesson.number} has no exercise stub ({missing} is missing)")
    target = lesson.working_copy
    shown = display_path(target)
    stub = lesson.exercise_path.read_bytes()
    if target.is_symlink():
        raise ExerciseCopyError(
            f"{shown} is a symbolic link (to {os.readlink(target)}): the copy is not written through "
            "it, so that nothing lands outside the exercise folder. Remove the link, then run again")
    if target.exists() and not target.is_file():
        kind = "a folder" if target.is_dir() else "not a regular file"
        raise ExerciseCopyError(f"{shown} is {kind}: the copy needs that name. Move it away, then run again")
    if target.is_file():
        if target.read_bytes() == stub:  # bytes: an edited copy need not be UTF-8
            return target, "already there, unchanged from the stub"
        question = f"{shown} exists and holds your changes. Replace it with the stub?"
        if not force and not (confirm is not None and confirm(question)):
            raise FileExistsError(
                f"{shown} already exists and differs from the stub: it is kept. "
                f"Rename it, or run `minigrad exercise {lesson.number} --force` to replace it with the stub"
            )
        _write_in_folder(target, stub, replace=True)
        return target, "replaced with the stub"
    _write_in_folder(target, stub, replace=False)
    return target, "copied"


def _write_in_folder(target: Path, content: bytes, replace: bool) -> None:
    """Write `content` as the file `target` itself, never through a link: a new file is created
    exclusively (a link that appears at its name makes it fail), a replacement is written beside
    it and renamed over it (a rename replaces a link, it does not follow it)."""
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not replace:
            with open(target, "xb") as created:
                created.write(content)
            return
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{target.name}.", delete=False) as file:
            file.write(content)
        try:
            os.replace(file.name, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(file.name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ExerciseCopyError(
            f"cannot write {display_path(target)}: {reason} (in the folder {display_path(folder)}). "
            "Make the folder writable, or set MINIGRAD_EXERCISES to a folder you can write to") from exc
