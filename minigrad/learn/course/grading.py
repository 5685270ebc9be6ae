"""Marking the learner's exercise: `minigrad check N`, `minigrad.check(N, globals())`, and
`minigrad exercise N`, which copies a stub to work on.

Each lesson's check, `minigrad/learn/course/checks/NN_slug.py` (a module of this package), has
`check(answers)`: it returns None on success, lets the stub's NotImplementedError through ("not
attempted") and raises AssertionError with a diagnosis. `minigrad check N` and `minigrad lessons`
mark the learner's copy (see minigrad.learn.course.catalog) when it exists, else the stub itself;
in a notebook, `minigrad.check(N, globals())` marks the notebook's own definitions the same way.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from minigrad.learn.course.catalog import Lesson, display_path, get_lesson

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


def load_module(path: Path | str, name: str | None = None) -> ModuleType:
    """Execute a file as a fresh module (names may start with digits: no import statement needed).

    Learners' answers and the checks of a lessons folder of one's own are loaded with this.
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


def load_check(lesson: Lesson) -> Callable[[ModuleType], None]:
    """The lesson's `check(answers)`: a module of minigrad.learn.course.checks, or for a lessons
    folder of one's own, its `checks/NN_slug.py` run as a file (never imported as a package)."""
    path = lesson.check_path
    if not path.is_file():
        raise FileNotFoundError(f"lesson {lesson.number} has no check (looked for {path})")
    if lesson.check_is_packaged:
        module = importlib.import_module(f"minigrad.learn.course.checks.{lesson.stem}")
    else:
        module = load_module(path, f"minigrad_check_{lesson.stem}_{time.perf_counter_ns()}")
    return module.check


def exercise_functions(lesson: Lesson) -> list[str]:
    """The names of the functions the lesson's stub asks for (its top-level `def`s)."""
    if not lesson.exercise_path.is_file():
        return []
    tree = ast.parse(lesson.exercise_path.read_bytes(), filename=str(lesson.exercise_path))
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """exc, then what it was raised from or during (a check wraps the learner's error: the
    learner's frames are in the wrapped one)."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _where_in(exc: BaseException, learners: Callable[[str], bool], path: Path | None) -> str:
    """' (in mine.py, line N)': the deepest frame of the learner's code in exc or what it wraps."""
    for link in _exception_chain(exc):
        found = [(frame, line) for frame, line in traceback.walk_tb(link.__traceback__)
                 if learners(frame.f_code.co_filename)]
        if found:
            frame, line = found[-1]
            if path is not None:
                return f" (in {path.name}, line {line})"
            return f" (in {frame.f_code.co_name}, line {line} of its cell)"  # a notebook's cell
    return ""


def _learners_files(path: Path | None, answers: Any) -> Callable[[str], bool]:
    """Whether a code object's file is the learner's: the marked file, or for answers given as
    an object, a file where one of its functions was defined (a notebook cell)."""
    if path is not None:
        resolved = path.resolve()
        return lambda filename: Path(filename).resolve() == resolved
    defined = {value.__code__.co_filename for value in getattr(answers, "__dict__", {}).values()
               if callable(value) and hasattr(value, "__code__")}
    package = str(Path(__file__).resolve().parents[2])  # minigrad/
    return lambda filename: filename in defined and not filename.startswith(package)


def _with_where(message: str, where: str) -> str:
    first, newline, rest = message.partition("\n")
    return first + where + newline + rest


def _mark(lesson: Lesson, load_answers: Callable[[], Any], path: Path | None,
          stop_on_interrupt: bool = True) -> CheckResult:
    """Run lesson's check on what `load_answers()` gives (it runs the learner's file, if any),
    in this process. Whatever the learner's code raises, SystemExit included, becomes a verdict;
    KeyboardInterrupt too unless `stop_on_interrupt` (a notebook's Stop button must stop)."""
    check, names = load_check(lesson), exercise_functions(lesson)
    learners_errors = (Exception, SystemExit) if stop_on_interrupt else (BaseException,)
    answers = None
    try:
        answers = load_answers()
        if names and not any(callable(getattr(answers, name, None)) for name in names):
            listed = ", ".join(f"{name}()" for name in names)
            return CheckResult(lesson, NOT_ATTEMPTED, f"none of the exercise's functions is defined yet "
                                                      f"({listed})", path)
        check(answers)
    except NotImplementedError as exc:
        message = str(exc) or "a function still raises NotImplementedError"
        return CheckResult(lesson, NOT_ATTEMPTED, message, path)
    except learners_errors as exc:  # a diagnosis, or the learner's code crashed or quit
        return _failed(lesson, exc, path, answers)
    return CheckResult(lesson, PASS, "every check passed", path)


def _failed(lesson: Lesson, exc: BaseException, path: Path | None, answers: Any) -> CheckResult:
    """The FAIL verdict for what marking raised: the check's diagnosis, or the learner's error,
    each with where in the learner's code it happened."""
    learners = _learners_files(path, answers if answers is not None else SimpleNamespace())
    where = _where_in(exc, learners, path)
    if isinstance(exc, AssertionError):
        message = _with_where(str(exc) or "a check failed (no diagnosis given)", where)
    elif isinstance(exc, SystemExit):
        called = f"sys.exit({', '.join(repr(a) for a in exc.args)})"
        message = (f"your code stopped the check: it raised SystemExit, as {called} does{where}. "
                   "The check decides the verdict: remove the call and let your functions "
                   "return their answers")
    else:
        detail = f": {exc}" if str(exc) else ""
        message = f"your code raised {type(exc).__name__}{detail}{where}"
    # A diagnosis alone is the check's own word; an error of the learner's code has a traceback.
    learners_error = where or not isinstance(exc, AssertionError)
    full = "".join(traceback.format_exception(exc)) if learners_error else ""
    return CheckResult(lesson, FAIL, message, path, traceback=full)


def check_answers(lesson: Lesson, file: Path | str | None = None, answers: Any = None,
                  timeout: float = TIME_LIMIT) -> CheckResult:
    """Run the lesson's check on the learner's answers: `answers` (a module, a namespace or a
    dict such as a notebook's globals()) when given, else the file `file`, else the learner's
    copy from `minigrad exercise N` when it exists, else the stub itself.

    A file is run in a child process with a time limit of `timeout` seconds, so that nothing
    in it (sys.exit, os._exit, an endless loop) can end the check without a verdict. Answers
    given as an object already live in this process: they are marked here.
    """
    if answers is not None:
        if isinstance(answers, dict):
            answers = SimpleNamespace(**answers)
        return _mark(lesson, lambda: answers, None)
    path = Path(file) if file is not None else lesson.answers_path
    if not path.is_file():
        raise FileNotFoundError(f"{'--file ' if file is not None else ''}{path} does not exist")
    return _mark_in_child(lesson, path, timeout)


# The child process: the minigrad package that runs here first on its path (not the learner's
# folder, where a file named numpy.py would shadow numpy), then mark and report.
_CHILD_CODE = ("import sys; sys.path[0] = sys.argv[1]; from minigrad.learn.course.grading import "
               "_report_from_child; _report_from_child(*sys.argv[2:])")
_OUTPUT_KEPT = 20_000  # characters of the learner's printed output shown with the verdict


def _mark_in_child(lesson: Lesson, path: Path, timeout: float) -> CheckResult:
    package_parent = str(Path(__file__).resolve().parents[3])  # the folder holding minigrad/
    with tempfile.TemporaryDirectory(prefix="minigrad-check-") as scratch:
        report = Path(scratch) / "verdict.json"
        command = [sys.executable, "-c", _CHILD_CODE, package_parent,
                   str(lesson.root), str(lesson.number), str(path.resolve()), str(report)]
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        output = _OutputReader(child.stdout)
        try:
            child.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _end_process_group(child)  # the child, and anything it started, ends with the check
        printed = output.text()
        verdict = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else None
    if verdict is not None:
        return CheckResult(lesson, verdict["status"], verdict["message"], path,
                           traceback=verdict["traceback"], output=printed)
    if timed_out:
        message = (f"your code did not finish within {timeout:g} s, so the check was stopped "
                   "(an endless loop? a loop waiting for something that never comes?)")
    else:
        status = child.returncode
        how = (f"signal {signal.Signals(-status).name}" if status < 0 else f"exit status {status}")
        message = (f"your code ended Python before the check could finish ({how}): os._exit, or "
                   "a crash of the interpreter. The check decides the verdict: remove the call")
    return CheckResult(lesson, FAIL, message, path, output=printed)


def _end_process_group(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(child.pid, signal.SIGKILL)  # the child's own session: it and what it started
        else:
            child.kill()
    child.wait()


class _OutputReader:
    """Reads a child's output on a thread, keeping the first _OUTPUT_KEPT characters, so that a
    learner's endless print loop neither fills memory nor blocks the child on a full pipe."""

    def __init__(self, stream: Any):
        self.stream, self.kept, self.dropped = stream, bytearray(), 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            room = max(0, _OUTPUT_KEPT - len(self.kept))
            self.kept += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))

    def text(self) -> str:
        self.thread.join(timeout=5)  # the process group is gone: the pipe has closed
        self.stream.close()
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n... ({self.dropped} more bytes of output not shown)\n"
        return text


def _report_from_child(root: str, number: str, file: str, report: str) -> None:
    """In the child process: mark `file` and write the verdict as JSON to `report`, then end at
    once, so no exit handler or thread of the learner's code runs after the verdict."""
    lesson = get_lesson(int(number), Path(root))
    path = Path(file)
    sys.argv[:] = [file]  # as `python file` would see it; the report's path is not the learner's business
    try:
        result = _mark(lesson, lambda: load_module(path), path, stop_on_interrupt=False)
        verdict = {"status": result.status, "message": result.message, "traceback": result.traceback}
    except Exception as exc:  # the lesson's check or stub could not be read: not the learner's doing
        verdict = {"status": FAIL, "traceback": "".join(traceback.format_exception(exc)),
                   "message": f"the check of lesson {number} could not run: {type(exc).__name__}: {exc}"}
    Path(report).write_text(json.dumps(verdict), encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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
            with open(target, "xb") as file:
                file.write(content)
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
