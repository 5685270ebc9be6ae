"""Marking the learner's exercise: `minigrad check N`, `minigrad.check(N, globals())`, and
`minigrad exercise N`, which copies a stub to work on.

Each lesson's check, `lessons/checks/NN_slug.py`, has `check(answers)`: it returns None on
success, lets the stub's NotImplementedError through ("not attempted") and raises
AssertionError with a diagnosis. `minigrad check N` and `minigrad lessons` mark the learner's
copy (see minigrad.learn.catalog) when it exists, else the stub itself; in a notebook,
`minigrad.check(N, globals())` marks the notebook's own definitions the same way.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from minigrad.learn.catalog import Lesson, display_path, get_lesson

PASS, NOT_ATTEMPTED, FAIL = "pass", "not attempted", "fail"


@dataclass
class CheckResult:
    """The verdict on one exercise; `str()` is what `minigrad check N` prints."""

    lesson: Lesson
    status: str  # PASS, NOT_ATTEMPTED or FAIL
    message: str
    file: Path | None  # the file that was marked; None for answers given as an object (a notebook)

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
        return head + "FAIL\n" + _indent(self.message)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython shows str(), not a repr string
        printer.text(str(self))


def load_module(path: Path | str, name: str | None = None) -> ModuleType:
    """Execute a file as a fresh module (names may start with digits: no import statement needed).

    The lesson runner and the lesson checks (lessons/checks/_common.py) both load with this.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load_module: no file at {path}")
    name = name or f"minigrad_answers_{path.stem}_{time.perf_counter_ns()}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lessons_package(root: Path) -> str:
    """Import the lessons folder as a package, so a check can import shared helpers
    (`from lessons.checks._common import ...` or `from ._common import ...`) wherever the
    folder lives. The package is called `lessons` unless that name belongs to another folder."""
    root = root.resolve()
    private = "_minigrad_lessons_" + hashlib.sha1(str(root).encode()).hexdigest()[:12]
    for name in ("lessons", private):
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(
                name, root / "__init__.py", submodule_search_locations=[str(root)]
            )
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import the lessons folder {root}: it needs an __init__.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return name
        if any(Path(p).resolve() == root for p in getattr(module, "__path__", [])):
            return name
    raise ImportError(f"cannot import {root} as a package: {private!r} is already another module")


def load_check(lesson: Lesson) -> Callable[[ModuleType], None]:
    package = _lessons_package(lesson.root)
    module = importlib.import_module(f"{package}.checks.{lesson.stem}")
    return module.check


def _where_in(exc: BaseException, path: Path) -> str:
    """' (your file, line N)' for the deepest frame of the learner's file in the traceback."""
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == path.resolve():
            line = lineno
    return f" (in {path.name}, line {line})" if line else ""


def check_answers(lesson: Lesson, file: Path | str | None = None, answers: Any = None) -> CheckResult:
    """Run the lesson's check on the learner's answers: `answers` (a module, a namespace or a
    dict such as a notebook's globals()) when given, else the file `file`, else the learner's
    copy from `minigrad exercise N` when it exists, else the stub itself."""
    path = None
    if answers is None:
        path = Path(file) if file is not None else lesson.answers_path
        if not path.is_file():
            raise FileNotFoundError(f"{'--file ' if file is not None else ''}{path} does not exist")
    elif isinstance(answers, dict):
        answers = SimpleNamespace(**answers)
    check = load_check(lesson)
    try:
        check(load_module(path) if path is not None else answers)
    except NotImplementedError as exc:
        message = str(exc) or "a function still raises NotImplementedError"
        return CheckResult(lesson, NOT_ATTEMPTED, message, path)
    except AssertionError as exc:
        return CheckResult(lesson, FAIL, str(exc) or "a check failed (no diagnosis given)", path)
    except Exception as exc:  # the learner's code crashed: say what and where
        where = _where_in(exc, path) if path is not None else ""
        return CheckResult(lesson, FAIL, f"your code raised {type(exc).__name__}: {exc}{where}", path)
    return CheckResult(lesson, PASS, "every check passed", path)


def check(number: int, answers: Any) -> CheckResult:
    """`minigrad.check(N, globals())` in a notebook: lesson N's check on `answers` (a module, a
    namespace or a dict of your definitions). Same verdict and diagnosis as `minigrad check N`;
    `result.passed` is a bool, and the result displays as the command line prints it."""
    if answers is None or isinstance(answers, (str, Path)):
        raise TypeError(
            f"check({number}, answers): answers must be a module, a namespace or a dict such as "
            f"globals(), got {answers!r} (to mark a file, run `minigrad check {number} --file PATH`)"
        )
    return check_answers(get_lesson(number), answers=answers)


def copy_exercise(lesson: Lesson, force: bool = False,
                  confirm: Callable[[str], bool] | None = None) -> tuple[Path, str]:
    """Copy lesson's stub to the learner's working copy; returns (path, what happened).

    An existing copy that differs from the stub is the learner's work: it is replaced only with
    `force`, or when `confirm(question)` says yes (a terminal asks); otherwise FileExistsError.
    """
    if not lesson.exercise_path.is_file():
        missing = lesson.exercise_path
        raise FileNotFoundError(f"lesson {lesson.number} has no exercise stub ({missing} is missing)")
    target = lesson.working_copy
    stub = lesson.exercise_path.read_text(encoding="utf-8")
    if target.is_file():
        if target.read_text(encoding="utf-8") == stub:
            return target, "already there, unchanged from the stub"
        question = f"{display_path(target)} exists and holds your changes. Replace it with the stub?"
        if not force and not (confirm is not None and confirm(question)):
            raise FileExistsError(
                f"{display_path(target)} already exists and differs from the stub: it is kept. "
                f"Rename it, or run `minigrad exercise {lesson.number} --force` to replace it with the stub"
            )
        target.write_text(stub, encoding="utf-8")
        return target, "replaced with the stub"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(stub, encoding="utf-8")
    return target, "copied"



def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
