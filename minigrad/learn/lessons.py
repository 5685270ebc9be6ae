"""The lesson runner behind `minigrad lessons`, `minigrad lesson N` and `minigrad check N`.

A lesson is a jupytext "percent" script, `lessons/NN_slug.py`: cells begin with `# %%` (code)
or `# %% [markdown]` (text written as `# ` comment lines). The same file runs as a plain
script, opens as a notebook, and is shown here step by step: markdown as readable text, code
echoed and then run, all cells in one namespace, as a notebook kernel would.

Each lesson has an exercise: `lessons/exercises/NN_slug.py` (stubs that raise
NotImplementedError), `lessons/solutions/NN_slug.py` (reference answers, for the tests) and
`lessons/checks/NN_slug.py`, whose `check(answers)` returns None on success, lets the stub's
NotImplementedError through ("not attempted") and raises AssertionError with a diagnosis.

The learner works on a copy: `minigrad exercise N` copies the stub into the working folder,
`./minigrad-exercises/NN_slug.py` (`$MINIGRAD_EXERCISES` names another folder). `minigrad check N`
and `minigrad lessons` mark that copy when it exists, else the stub itself; in a notebook,
`minigrad.check(N, globals())` marks the notebook's own definitions the same way.

Where the lessons live: `$MINIGRAD_LESSONS` if set; else the copy shipped inside the installed
package (`minigrad/_lessons`, mapped from the repository's `lessons/` folder by pyproject.toml);
else `lessons/` next to the `minigrad` package (a source checkout or an editable install).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace, TracebackType
from typing import Any, TextIO

from minigrad.learn import figures
from minigrad.learn.extras import extra_problem

LESSON_FILE = re.compile(r"^(\d\d)_(\w+)\.py$")
CELL_MARKER = re.compile(r"^# %%(.*)$")
TITLE_LINE = re.compile(r"^# Lesson (\d+): (.+)$")
IMAGE_SUFFIXES = {".png", ".svg", ".jpg", ".jpeg", ".gif"}

PASS, NOT_ATTEMPTED, FAIL = "pass", "not attempted", "fail"
PREDICTION_PROMPT = "Your prediction (type it, then Enter; q quits): "
PREDICTION_AGAIN = "  Type your answer first (a word or a number is enough): committing is the point.\n"
STEP_PROMPT = "[press Enter to run the next step; q quits] "
COMMANDS = ("lessons", "lesson", "check", "exercise")  # the subcommands this module adds to `minigrad`
WORKING_FOLDER = "minigrad-exercises"  # under the current directory, unless $MINIGRAD_EXERCISES
ECHO_LINES = 16  # a code cell longer by more than 3 lines is echoed up to here, then named by its lines
IMPORT_LINE = re.compile(r"^(import \S|from \S+ import [^(]*$|\s*$)")
DURATION = re.compile(r"^lesson = setup\(\d+, minutes=\(([\d.]+), ([\d.]+)\)\)", re.MULTILINE)
CODE_MARK, OUTPUT_MARK = "  | ", "  > "  # echoed code, and what it printed


# ---- finding lessons ---------------------------------------------------------------------------

def lessons_root() -> Path:
    """The folder holding NN_slug.py, exercises/, solutions/ and checks/ (see module docstring)."""
    configured = os.environ.get("MINIGRAD_LESSONS")
    if configured:
        root = Path(configured)
        if not root.is_dir():
            raise FileNotFoundError(f"MINIGRAD_LESSONS={configured!r} is not a folder")
        return root.resolve()
    package = Path(__file__).resolve().parent.parent  # minigrad/, above learn/
    # The installed copy first: in site-packages a sibling `lessons/` could be anyone's package.
    for candidate in (package / "_lessons", package.parent / "lessons"):
        if (candidate / "checks").is_dir() and (candidate / "exercises").is_dir():
            return candidate
    raise FileNotFoundError(
        f"no lessons folder found: looked for {package / '_lessons'} (an installed copy) and "
        f"{package.parent / 'lessons'} (a source checkout); set MINIGRAD_LESSONS to the folder"
    )


@dataclass(frozen=True)
class Cell:
    """One notebook cell. `line` is the 1-based line of the file where `source` starts."""

    kind: str  # "markdown" or "code"
    source: str  # markdown without the leading "# "; code as written
    line: int


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    path: Path

    @property
    def stem(self) -> str:
        return self.path.stem  # "01_backward_graph"

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def exercise_path(self) -> Path:
        return self.root / "exercises" / self.path.name

    @property
    def working_copy(self) -> Path:
        """Where `minigrad exercise N` puts the learner's copy of the stub."""
        return working_folder() / self.path.name

    @property
    def answers_path(self) -> Path:
        """The file `minigrad check N` marks: the learner's copy when there is one, else the stub."""
        return self.working_copy if self.working_copy.is_file() else self.exercise_path

    @property
    def solution_path(self) -> Path:
        return self.root / "solutions" / self.path.name

    @property
    def check_path(self) -> Path:
        return self.root / "checks" / self.path.name

    def cells(self) -> list[Cell]:
        return parse_cells(self.path.read_text(encoding="utf-8"))

    @property
    def title(self) -> str:
        return _heading(self)[0]

    @property
    def summary(self) -> str:
        return _heading(self)[1]


def working_folder() -> Path:
    """The learner's folder for exercise copies: $MINIGRAD_EXERCISES, else ./minigrad-exercises."""
    return Path(os.environ.get("MINIGRAD_EXERCISES") or WORKING_FOLDER)


def find_lessons(root: Path | None = None) -> list[Lesson]:
    """Every `NN_slug.py` in the lessons folder, in order."""
    root = lessons_root() if root is None else Path(root)
    found = []
    for path in sorted(root.glob("*.py")):
        match = LESSON_FILE.match(path.name)
        if match:
            found.append(Lesson(int(match.group(1)), match.group(2), path))
    return found


def get_lesson(number: int, root: Path | None = None) -> Lesson:
    lessons = find_lessons(root)
    for lesson in lessons:
        if lesson.number == number:
            return lesson
    available = ", ".join(str(lesson.number) for lesson in lessons) or "none"
    raise LookupError(f"lesson {number} not found (available lessons: {available})")


# ---- reading the percent format ----------------------------------------------------------------

def parse_cells(text: str) -> list[Cell]:
    """Split a percent-format script into cells; text before the first marker is a code cell."""
    cells: list[Cell] = []
    kind, start, body = "code", 1, []

    def close() -> None:
        while body and not body[-1].strip():
            body.pop()
        lead = 0
        while lead < len(body) and not body[lead].strip():
            lead += 1
        if body[lead:]:
            lines = body[lead:]
            source = "\n".join(_uncomment(line) for line in lines) if kind == "markdown" else "\n".join(lines)
            cells.append(Cell(kind, source, start + lead))

    for number, line in enumerate(text.splitlines(), start=1):
        marker = CELL_MARKER.match(line)
        if marker:
            close()
            options = marker.group(1)
            kind = "markdown" if ("[markdown]" in options or "[md]" in options) else "code"
            start, body = number + 1, []
        else:
            body.append(line)
    close()
    return cells


def _uncomment(line: str) -> str:
    if line.startswith("# "):
        return line[2:]
    return line[1:] if line.startswith("#") else line


def _heading(lesson: Lesson) -> tuple[str, str]:
    """(title, one-sentence summary) from the first markdown cell; blank when malformed.

    The summary is the paragraph after the title line, so it may wrap over several lines.
    """
    cells = lesson.cells()
    if not cells or cells[0].kind != "markdown":
        return "", ""
    first, *rest = cells[0].source.splitlines()
    match = TITLE_LINE.match(first)
    title = match.group(2).strip() if match else first.lstrip("# ").strip()
    summary: list[str] = []
    for line in rest:
        if line.strip():
            if line.lstrip().startswith("#"):
                break  # a heading: there was no summary paragraph
            summary.append(line.strip())
        elif summary:
            break
    return title, " ".join(summary)


def contract_problems(lesson: Lesson) -> list[str]:
    """What in this lesson breaks the lesson format contract (empty list: nothing)."""
    problems = []
    cells = lesson.cells()
    text = lesson.path.read_text(encoding="utf-8")
    first = cells[0] if cells else None
    title = TITLE_LINE.match(first.source.splitlines()[0]) if first and first.kind == "markdown" else None
    if not title:
        problems.append(f"the first cell must be markdown starting '# Lesson {lesson.number}: Title'")
    elif int(title.group(1)) != lesson.number:
        problems.append(f"the title says lesson {title.group(1)} but the file is lesson {lesson.number}")
    if not lesson.summary:
        problems.append("the first cell needs a one-sentence summary after the title")
    code = [cell for cell in cells if cell.kind == "code"]
    if not code:
        problems.append("no code cells")
    prediction = [i for i, c in enumerate(cells) if c.kind == "markdown" and c.source.rstrip().endswith("?")]
    if not prediction:
        problems.append("no prediction cell (a markdown cell ending with a question)")
    if not re.search(rf"^lesson = setup\({lesson.number}\b", text, re.MULTILINE):
        problems.append(f"the first code cell must run `lesson = setup({lesson.number})` from "
                        "minigrad.learn.lesson_kit (BLAS threads capped, figures in $MINIGRAD_OUT/lesson-NN)")
    if "gradcheck" not in text:
        problems.append("no check against finite differences (minigrad.tools.gradcheck)")
    if f"minigrad check {lesson.number}" not in text:
        problems.append(f"the exercise must tell the learner to run `minigrad check {lesson.number}`")
    if re.search(r"^\s*(from|import)\s+lessons", text, re.MULTILINE):
        problems.append("a lesson must not import from the lessons folder (solutions stay apart)")
    for path in (lesson.exercise_path, lesson.solution_path, lesson.check_path):
        if not path.is_file():
            problems.append(f"missing {path.relative_to(lesson.root.parent)}")
    return problems


# ---- showing and running a lesson --------------------------------------------------------------

def render_markdown(source: str) -> str:
    """Markdown as terminal text: headings underlined, everything else as written."""
    out = []
    for line in source.splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        if heading:
            text = heading.group(2).strip()
            rule = "=" if len(heading.group(1)) == 1 else "-"
            out += ["", text, rule * len(text)]
        else:
            out.append(line)
    return "\n".join(out).strip("\n")


def with_learners_paths(source: str, lesson: Lesson) -> str:
    """The lesson text with the default copy's path (`minigrad-exercises/NN_slug.py`) replaced by
    where `minigrad exercise N` puts it for this learner ($MINIGRAD_EXERCISES, seen from here)."""
    return source.replace(f"{WORKING_FOLDER}/{lesson.path.name}", _display_path(lesson.working_copy))


def echo_code(cell: Cell, path: Path) -> str:
    """A code cell as shown before it runs: marked lines; a block of imports at its top named by
    its lines, and a long body cut after ECHO_LINES (the rest named by its lines in the file)."""
    lines = cell.source.splitlines()
    imports = 0
    while imports < len(lines) and IMPORT_LINE.match(lines[imports]):
        imports += 1
    while imports and not lines[imports - 1].strip():
        imports -= 1  # blank lines after the imports belong to the body
    shown = []
    if imports > 3:
        last_import = cell.line + imports - 1
        shown.append(f"... {imports} lines of imports ({path.name}, lines {cell.line}-{last_import})")
        start = imports
        while start < len(lines) and not lines[start].strip():
            start += 1
    else:
        start = 0
    body = lines[start:]
    if len(body) <= ECHO_LINES + 3:  # cutting would hide hardly anything
        shown += body
    else:
        first, last = cell.line + start + ECHO_LINES, cell.line + len(lines) - 1
        more = f"... {len(body) - ECHO_LINES} more lines ({path.name}, lines {first}-{last})"
        shown += body[:ECHO_LINES] + [more]
    return "\n".join(CODE_MARK + line for line in shown)


class _MarkedOutput:
    """A text stream that writes to `target` with OUTPUT_MARK at the start of every line, so what
    a cell prints stands apart from the lesson's text. A carriage return (a redrawn progress
    line) starts a marked line too."""

    def __init__(self, target: TextIO):
        self.target = target
        self.at_line_start = True

    def write(self, text: str) -> int:
        for piece in re.split(r"(?<=[\n\r])", text):
            if not piece:
                continue
            if self.at_line_start and piece not in ("\n", "\r"):
                self.target.write(OUTPUT_MARK)
            self.target.write(piece)
            self.at_line_start = piece.endswith(("\n", "\r"))
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return False

    def end_line(self) -> None:
        if not self.at_line_start:
            self.write("\n")


@dataclass
class LessonRun:
    lesson: Lesson
    ok: bool
    seconds: float
    files: list[Path]  # written or rewritten under the output folder during the run
    error: str = ""
    stopped_by_learner: bool = False  # q at a pause: not a failure
    predictions: list[str] = field(default_factory=list)  # what the learner typed, in order


@contextlib.contextmanager
def _lesson_environment(out_dir: Path, fast: bool = False) -> Iterator[None]:
    """MINIGRAD_OUT, a headless matplotlib, MINIGRAD_FAST with `fast`, MINIGRAD_RUNNER, BLAS threads
    capped; all restored afterwards."""
    # threadpoolctl sets KMP_DUPLICATE_LIB_OK when first imported: the run leaves no trace either way
    keys = ("MINIGRAD_OUT", "MPLBACKEND", "MINIGRAD_FAST", "MINIGRAD_RUNNER", "KMP_DUPLICATE_LIB_OK")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ["MINIGRAD_RUNNER"] = "1"  # the runner has said how long the lesson takes
    os.environ["MINIGRAD_OUT"] = str(out_dir)
    os.environ["MPLBACKEND"] = "Agg"
    if fast:
        os.environ["MINIGRAD_FAST"] = "1"
    from minigrad.learn.lesson_kit import cap_blas_threads

    limits = cap_blas_threads()
    try:
        with limits if limits is not None else contextlib.nullcontext():
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _snapshot(folder: Path) -> dict[Path, float]:
    if not folder.is_dir():
        return {}
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _changed_files(folder: Path, before: dict[Path, float]) -> list[Path]:
    after = _snapshot(folder)
    return sorted(p for p, mtime in after.items() if before.get(p) != mtime)


def _ask_to_continue(prompt: str, stdin: TextIO, stdout: TextIO) -> bool:
    """Wait for Enter; False when the learner types q (or stdin closes)."""
    stdout.write(prompt)
    stdout.flush()
    answer = stdin.readline()
    return bool(answer) and answer.strip().lower() not in {"q", "quit"}


def ask_prediction(stdin: TextIO, stdout: TextIO) -> str | None:
    """The learner's prediction as typed, asked again while empty; None for q or a closed stdin."""
    while True:
        stdout.write(PREDICTION_PROMPT)
        stdout.flush()
        line = stdin.readline()
        answer = line.strip()
        if not line or answer.lower() in {"q", "quit"}:
            return None
        if answer:
            return answer
        stdout.write(PREDICTION_AGAIN)


def _show_prediction(prediction: str, stdout: TextIO) -> None:
    print(f'You predicted: "{prediction}". Compare it with the output above.\n', file=stdout)


def _lesson_frames_only(tb: TracebackType | None, path: Path) -> TracebackType | None:
    """Drop the runner's own frames so a traceback starts in the lesson file."""
    while tb is not None and Path(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return tb


def run_lesson(
    lesson: Lesson,
    out_dir: Path | str,
    pause: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    fast: bool = False,
) -> LessonRun:
    """Show the markdown cells and run the code cells of `lesson`, in order, in one namespace.

    With `pause`, wait for Enter after each markdown cell that leads into code (the learner
    reads, then sees); after a question, ask for a prediction and show it back once the code
    that answers it has run. What the code prints is marked (OUTPUT_MARK) to set it apart from
    the text. Figures go under `out_dir` (exported as MINIGRAD_OUT); `fast` sets MINIGRAD_FAST=1.
    """
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    before = _snapshot(out_dir)
    namespace = {"__name__": "__main__", "__file__": str(lesson.path), "__builtins__": builtins}
    cells = lesson.cells()
    start = time.perf_counter()
    ok, error, stopped_by_learner = True, "", False
    predictions: list[str] = []
    pending: str | None = None  # a prediction waiting for the code that answers it
    duration = DURATION.search(lesson.path.read_text(encoding="utf-8"))
    with _lesson_environment(out_dir, fast):
        if duration:  # a long lesson: say so before it starts (its setup() then stays quiet)
            from minigrad.learn.lesson_kit import expected_duration

            minutes = (float(duration.group(1)), float(duration.group(2)))
            print(expected_duration(minutes, os.environ.get("MINIGRAD_FAST") == "1") + "\n", file=stdout)
        for index, cell in enumerate(cells):
            if cell.kind == "markdown":
                if pending is not None:
                    _show_prediction(pending, stdout)
                    pending = None
                print(render_markdown(with_learners_paths(cell.source, lesson)) + "\n", file=stdout)
                leads_to_code = index + 1 < len(cells) and cells[index + 1].kind == "code"
                if pause and leads_to_code:
                    if cell.source.rstrip().endswith("?"):
                        pending = ask_prediction(stdin, stdout)
                        carry_on = pending is not None
                        if carry_on:
                            predictions.append(pending)
                    else:
                        carry_on = _ask_to_continue(STEP_PROMPT, stdin, stdout)
                    if not carry_on:
                        stopped_by_learner = True
                        break
                continue
            print(echo_code(cell, lesson.path), file=stdout)
            stdout.flush()
            # Pad with blank lines so tracebacks and warnings point at the lesson file's own lines.
            code = compile("\n" * (cell.line - 1) + cell.source, str(lesson.path), "exec")
            marked = _MarkedOutput(stdout)
            try:
                with contextlib.redirect_stdout(marked):
                    exec(code, namespace)
            except Exception as exc:  # a failing check or a bug: report it, name the cell
                marked.end_line()
                tb = _lesson_frames_only(exc.__traceback__, lesson.path)
                traceback.print_exception(type(exc), exc, tb, file=stdout)
                kind = "a check failed" if isinstance(exc, AssertionError) else "an error"
                error = f"{kind} in the code cell at line {cell.line} of {lesson.path}"
                ok = False
                break
            marked.end_line()
            print(file=stdout)
        if pending is not None and ok and not stopped_by_learner:
            _show_prediction(pending, stdout)
    seconds = time.perf_counter() - start
    return LessonRun(lesson, ok, seconds, _changed_files(out_dir, before), error, stopped_by_learner,
                     predictions)


# ---- notebooks ---------------------------------------------------------------------------------

def notebook_json(lesson: Lesson, out_dir: Path | str) -> dict[str, Any]:
    """The lesson as an nbformat 4.5 notebook (plain JSON; no nbformat/jupytext needed).

    A setup cell after the title finds the lesson on the machine that runs the notebook (by
    number, so no path of the machine that wrote it is baked in), sends figures next to the
    notebook (MINIGRAD_OUT = the kernel's working folder, which Jupyter sets to the
    notebook's), and shows each image a cell writes there. `out_dir` is unused in the JSON: it
    is where `write_notebook` puts the file.
    """
    setup = (
        f"# Added by `minigrad lesson {lesson.number} --notebook`: finds lesson {lesson.number} on this "
        "machine; figures go next to this notebook and show inline.\n"
        "from minigrad.learn.lessons import notebook_setup\n"
        f"__file__ = notebook_setup({lesson.number})"
    )
    cells = [Cell(c.kind, with_learners_paths(c.source, lesson), c.line) if c.kind == "markdown" else c
             for c in lesson.cells()]
    sequence = cells[:1] + [Cell("code", setup, 0)] + cells[1:]
    notebook_cells = []
    for i, cell in enumerate(sequence):
        entry: dict[str, Any] = {"cell_type": cell.kind, "id": f"cell-{i}", "metadata": {},
                                 "source": cell.source.splitlines(keepends=True)}
        if cell.kind == "code":
            entry.update(execution_count=None, outputs=[])
        notebook_cells.append(entry)
    return {
        "cells": notebook_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(lesson: Lesson, out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{lesson.stem}.ipynb"
    path.write_text(json.dumps(notebook_json(lesson, out_dir), indent=1) + "\n", encoding="utf-8")
    return path


def notebook_setup(number: int, out_dir: str | Path = ".") -> str:
    """Run in a generated notebook: export MINIGRAD_OUT (`out_dir`, default the working folder)
    and, in a notebook kernel, display every image a cell writes under it that the lesson did
    not show itself. Returns the path of lesson `number` here, for `__file__`."""
    lesson_path = str(get_lesson(number).path)
    out_dir = str(Path(out_dir).resolve())
    os.environ["MINIGRAD_OUT"] = out_dir
    if not figures.in_notebook():
        return lesson_path
    from IPython import get_ipython  # type: ignore[import-not-found]

    shell = get_ipython()
    folder = Path(out_dir)
    state = {"before": _snapshot(folder)}

    def remember(*_: Any) -> None:
        state["before"] = _snapshot(folder)

    def show_new_images(*_: Any) -> None:
        for path in _changed_files(folder, state["before"]):
            if path.suffix in IMAGE_SUFFIXES and path.resolve() not in figures.SHOWN:
                figures.show_file(path)  # not shown by the lesson itself (save_figure, show_file)

    # Running the setup cell again must not display every figure twice.
    for event, callback in _notebook_hooks:
        with contextlib.suppress(ValueError):
            shell.events.unregister(event, callback)
    _notebook_hooks[:] = [("pre_run_cell", remember), ("post_run_cell", show_new_images)]
    for event, callback in _notebook_hooks:
        shell.events.register(event, callback)
    return lesson_path


_notebook_hooks: list[tuple[str, Callable[..., None]]] = []


# ---- checking the learner's answers ------------------------------------------------------------

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
        return _display_path(self.file) if self.file is not None else "your notebook's definitions"

    def __str__(self) -> str:
        head = f"lesson {self.lesson.number} exercise ({self.source}): "
        if self.status == PASS:
            return head + "PASS, every check passed"
        if self.status == NOT_ATTEMPTED:
            n = self.lesson.number
            if self.file is None:
                todo = "Fill in the functions in your notebook, then run the check again."
            elif self.file.resolve() == self.lesson.exercise_path.resolve():
                copy = _display_path(self.lesson.working_copy)
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
        question = f"{_display_path(target)} exists and holds your changes. Replace it with the stub?"
        if not force and not (confirm is not None and confirm(question)):
            raise FileExistsError(
                f"{_display_path(target)} already exists and differs from the stub: it is kept. "
                f"Rename it, or run `minigrad exercise {lesson.number} --force` to replace it with the stub"
            )
        target.write_text(stub, encoding="utf-8")
        return target, "replaced with the stub"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(stub, encoding="utf-8")
    return target, "copied"


# ---- the command line --------------------------------------------------------------------------

def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _out_dir(args: argparse.Namespace) -> Path:
    return Path(args.out or os.environ.get("MINIGRAD_OUT") or "minigrad-out")


def command_lessons(args: argparse.Namespace) -> int:
    for lesson in find_lessons():
        if lesson.check_path.is_file():
            result = check_answers(lesson)
            mine = lesson.answers_path == lesson.working_copy
            status = f"{result.status}: {result.source}" if mine else result.status
        else:
            status = "no exercise"
        print(f"{lesson.number:2d}. {lesson.title}  [{status}]")
        print(textwrap.fill(lesson.summary, width=96, initial_indent="    ", subsequent_indent="    "))
    print("\nRun one with `minigrad lesson N`; copy its exercise with `minigrad exercise N`, "
          "check it with `minigrad check N`.")
    return 0


def command_lesson(args: argparse.Namespace) -> int:
    lesson = get_lesson(args.number)
    out_dir = _out_dir(args)
    if args.notebook:
        path = write_notebook(lesson, out_dir)
        print(f"wrote {_display_path(path)}  (open it with: jupyter lab {_display_path(path)})")
        return 0
    problem = extra_problem("lessons", f"lesson {lesson.number}")
    if problem is not None:
        print(f"minigrad lesson: {problem}", file=sys.stderr)
        return 1
    pause = not args.no_pause and sys.stdin.isatty()
    if hasattr(sys.stdout, "reconfigure"):  # lessons print √ and ²: never die on an ASCII terminal
        sys.stdout.reconfigure(errors="replace")
    run = run_lesson(lesson, out_dir, pause=pause, fast=args.fast)
    if run.stopped_by_learner:
        print(f"lesson {lesson.number} stopped at your request after {run.seconds:.1f} s")
    elif run.ok:
        print(f"lesson {lesson.number} finished in {run.seconds:.1f} s")
    else:
        print(f"lesson {lesson.number} stopped after {run.seconds:.1f} s: {run.error}")
    if run.files:
        print("files written:")
        for path in run.files:
            print(f"  {_display_path(path)}")
    return 0 if run.ok else 1


def command_check(args: argparse.Namespace) -> int:
    result = check_answers(get_lesson(args.number), args.file)
    print(result)
    return {PASS: 0, NOT_ATTEMPTED: 3}.get(result.status, 1)


def command_exercise(args: argparse.Namespace) -> int:
    lesson = get_lesson(args.number)
    confirm = _confirm_on_terminal if sys.stdin.isatty() else None
    try:
        path, what = copy_exercise(lesson, force=args.force, confirm=confirm)
    except FileExistsError as exc:
        print(f"minigrad exercise: {exc}", file=sys.stderr)
        return 1
    print(f"{_display_path(path)}: {what}. Fill in its functions, then run `minigrad check {lesson.number}`.")
    return 0


def _confirm_on_terminal(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in {"y", "yes"}


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def add_lesson_commands(sub: argparse._SubParsersAction) -> None:
    """Register `lessons`, `lesson N`, `check N` and `exercise N` on the `minigrad` command line."""
    listing = sub.add_parser("lessons", help="list the lessons and whether your exercises pass")
    listing.set_defaults(handler=command_lessons)

    lesson = sub.add_parser("lesson", help="show and run lesson N step by step")
    lesson.add_argument("number", type=int, help="the lesson number, e.g. 1")
    lesson.add_argument("--out", default=None,
                        help="output folder for figures (default: $MINIGRAD_OUT, else minigrad-out)")
    lesson.add_argument("--no-pause", action="store_true", help="do not wait for Enter between steps")
    lesson.add_argument("--fast", action="store_true",
                        help="smaller sizes, a few seconds per lesson (the same as MINIGRAD_FAST=1)")
    lesson.add_argument("--notebook", action="store_true",
                        help="write the lesson as a Jupyter notebook (.ipynb) instead of running it")
    lesson.set_defaults(handler=command_lesson)

    check = sub.add_parser("check", help="check your answers to lesson N's exercise")
    check.add_argument("number", type=int, help="the lesson number, e.g. 1")
    check.add_argument("--file", default=None,
                       help=f"your answers (default: your copy in ./{WORKING_FOLDER}/ if there is one, "
                            "else the lesson's stub)")
    check.set_defaults(handler=command_check)

    exercise = sub.add_parser("exercise", help=f"copy lesson N's exercise stub to ./{WORKING_FOLDER}/ "
                                               "(or $MINIGRAD_EXERCISES) to work on")
    exercise.add_argument("number", type=int, help="the lesson number, e.g. 4")
    exercise.add_argument("--force", action="store_true",
                          help="replace your copy with the stub even when it holds your changes")
    exercise.set_defaults(handler=command_exercise)


def run_command(args: argparse.Namespace) -> int:
    """Dispatch a parsed `lessons | lesson | check | exercise` command; user errors print and return 2."""
    try:
        return args.handler(args)
    except (LookupError, FileNotFoundError) as exc:
        print(f"minigrad {args.command}: {exc}", file=sys.stderr)
        return 2
