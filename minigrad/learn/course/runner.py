"""Showing and running a lesson step by step: `minigrad lesson N`.

Markdown cells are shown as readable text, code cells echoed and then run, all cells in one
namespace, as a notebook kernel would. With pauses, the learner presses Enter between steps and
types a prediction before the code that answers a question runs; what the code prints is marked
to stand apart from the lesson's text.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TextIO

from minigrad.learn.course.catalog import WORKING_FOLDER, Cell, Lesson, display_path

PREDICTION_PROMPT = "Your prediction (type it, then Enter; q quits): "
PREDICTION_AGAIN = "  Type your answer first (a word or a number is enough): committing is the point.\n"
STEP_PROMPT = "[press Enter to run the next step; q quits] "
# a code cell is echoed whole up to the lessons' limit on a cell, 40 non-blank lines (checked in
# tests/lessons/test_lesson_cells.py); a longer one is echoed up to there, the rest named by its lines
ECHO_LINES = 40
IMPORT_LINE = re.compile(r"^(import \S|from \S+ import [^(]*$|\s*$)")
DURATION = re.compile(r"^lesson = setup\(\d+, minutes=\(([\d.]+), ([\d.]+)\)\)", re.MULTILINE)
CODE_MARK, OUTPUT_MARK = "  | ", "  > "  # echoed code, and what it printed


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
    return source.replace(f"{WORKING_FOLDER}/{lesson.path.name}", display_path(lesson.working_copy))


def echo_code(cell: Cell, path: Path) -> str:
    """A code cell as shown before it runs: marked lines; a block of imports at its top named by
    its lines, and a body of more than ECHO_LINES non-blank lines cut there (the rest named by its
    lines in the file)."""
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
    non_blank = [i for i, line in enumerate(body) if line.strip()]
    if len(non_blank) <= ECHO_LINES:
        shown += body
    else:
        cut = non_blank[ECHO_LINES]  # the first line past the limit
        first, last = cell.line + start + cut, cell.line + len(lines) - 1
        more = f"... {len(body) - cut} more lines ({path.name}, lines {first}-{last})"
        shown += body[:cut] + [more]
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
def _lesson_environment(out_dir: Path, small: bool = False) -> Iterator[None]:
    """MINIGRAD_OUT, a headless matplotlib, MINIGRAD_SMALL with `small`, MINIGRAD_RUNNER, BLAS threads
    capped; all restored afterwards."""
    # threadpoolctl sets KMP_DUPLICATE_LIB_OK when first imported: the run leaves no trace either way
    keys = ("MINIGRAD_OUT", "MPLBACKEND", "MINIGRAD_SMALL", "MINIGRAD_RUNNER", "KMP_DUPLICATE_LIB_OK")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ["MINIGRAD_RUNNER"] = "1"  # the runner has said how long the lesson takes
    os.environ["MINIGRAD_OUT"] = str(out_dir)
    os.environ["MPLBACKEND"] = "Agg"
    if small:
        os.environ["MINIGRAD_SMALL"] = "1"
    from minigrad.learn.kit import cap_blas_threads

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


def snapshot(folder: Path) -> dict[Path, float]:
    if not folder.is_dir():
        return {}
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def changed_files(folder: Path, before: dict[Path, float]) -> list[Path]:
    after = snapshot(folder)
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
    small: bool = False,
    *,
    fast: bool | None = None,
) -> LessonRun:
    """Show the markdown cells and run the code cells of `lesson`, in order, in one namespace.

    With `pause`, wait for Enter after each markdown cell that leads into code (the learner
    reads, then sees); after a question, ask for a prediction and show it back once the code
    that answers it has run. What the code prints is marked (OUTPUT_MARK) to set it apart from
    the text. Figures go under `out_dir` (exported as MINIGRAD_OUT); `small` sets MINIGRAD_SMALL=1
    (`fast`: its deprecated spelling).
    """
    if fast is not None:
        warnings.warn("run_lesson(fast=...) is deprecated and will be removed in the next release; use "
                      "run_lesson(small=...)", DeprecationWarning, stacklevel=2)
        small = fast
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    before = snapshot(out_dir)
    run = _Run(lesson, pause, sys.stdin if stdin is None else stdin, sys.stdout if stdout is None else stdout)
    start = time.perf_counter()
    with _lesson_environment(out_dir, small):
        run.say_how_long()
        run.through_the_cells()
    seconds = time.perf_counter() - start
    return LessonRun(lesson, run.ok, seconds, changed_files(out_dir, before), run.error,
                     run.stopped_by_learner, run.predictions)


class _Run:
    """One run of a lesson's cells: the namespace they share, and how far the run got."""

    def __init__(self, lesson: Lesson, pause: bool, stdin: TextIO, stdout: TextIO):
        self.lesson, self.pause, self.stdin, self.stdout = lesson, pause, stdin, stdout
        self.namespace = {"__name__": "__main__", "__file__": str(lesson.path), "__builtins__": builtins}
        self.ok, self.error, self.stopped_by_learner = True, "", False
        self.predictions: list[str] = []
        self.pending: str | None = None  # a prediction waiting for the code that answers it

    def say_how_long(self) -> None:
        """A long lesson says how long it takes before it starts (its setup() then stays quiet)."""
        duration = DURATION.search(self.lesson.path.read_text(encoding="utf-8"))
        if duration:
            from minigrad.learn.kit import expected_duration, small_mode

            minutes = (float(duration.group(1)), float(duration.group(2)))
            print(expected_duration(minutes, small_mode(announce=False)) + "\n", file=self.stdout)

    def through_the_cells(self) -> None:
        """Every cell in order, until the end, an error, or the learner's q."""
        cells = self.lesson.cells()
        for index, cell in enumerate(cells):
            if cell.kind == "markdown":
                leads_to_code = index + 1 < len(cells) and cells[index + 1].kind == "code"
                carry_on = self.show(cell, leads_to_code)
            else:
                carry_on = self.execute(cell)
            if not carry_on:
                break
        if self.pending is not None and self.ok and not self.stopped_by_learner:
            _show_prediction(self.pending, self.stdout)

    def show(self, cell: Cell, leads_to_code: bool) -> bool:
        """A markdown cell as text (after the prediction the code before it answered); with pauses,
        wait before the code it leads to, or ask for a prediction. False: the learner stopped."""
        if self.pending is not None:
            _show_prediction(self.pending, self.stdout)
            self.pending = None
        print(render_markdown(with_learners_paths(cell.source, self.lesson)) + "\n", file=self.stdout)
        if not (self.pause and leads_to_code):
            return True
        if cell.source.rstrip().endswith("?"):
            self.pending = ask_prediction(self.stdin, self.stdout)
            if self.pending is not None:
                self.predictions.append(self.pending)
            carry_on = self.pending is not None
        else:
            carry_on = _ask_to_continue(STEP_PROMPT, self.stdin, self.stdout)
        self.stopped_by_learner = not carry_on
        return carry_on

    def execute(self, cell: Cell) -> bool:
        """Echo a code cell, then run it with its output marked. False: it raised (reported,
        naming the cell)."""
        path = self.lesson.path
        print(echo_code(cell, path), file=self.stdout)
        self.stdout.flush()
        # Pad with blank lines so tracebacks and warnings point at the lesson file's own lines.
        code = compile("\n" * (cell.line - 1) + cell.source, str(path), "exec")
        marked = _MarkedOutput(self.stdout)
        try:
            with contextlib.redirect_stdout(marked):
                exec(code, self.namespace)
        except Exception as exc:  # a failing check or a bug: report it, name the cell
            marked.end_line()
            traceback.print_exception(type(exc), exc, _lesson_frames_only(exc.__traceback__, path),
                                      file=self.stdout)
            kind = "a check failed" if isinstance(exc, AssertionError) else "an error"
            self.ok, self.error = False, f"{kind} in the code cell at line {cell.line} of {path}"
            return False
        marked.end_line()
        print(file=self.stdout)
        return True

