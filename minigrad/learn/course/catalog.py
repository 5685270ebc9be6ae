"""Where the lessons are and what they hold: finding `lessons/NN_slug.py`, its exercise, solution
and check files, and reading the jupytext "percent" format into cells.

A lesson is a jupytext "percent" script, `lessons/NN_slug.py`: cells begin with `# %%` (code)
or `# %% [markdown]` (text written as `# ` comment lines). The same file runs as a plain
script, opens as a notebook (minigrad.learn.course.notebook) and is shown step by step by
minigrad.learn.course.runner. Its exercise is `lessons/exercises/NN_slug.py` (stubs that raise
NotImplementedError), with `lessons/solutions/NN_slug.py` (reference answers, for the tests only)
kept apart. Its check, the marking run by minigrad.learn.course.grading, is part of the package:
`minigrad/learn/course/checks/NN_slug.py`. minigrad reads the lessons folder as files (a lesson
is run as a script, a stub as the learner's answers); it never imports it as a package. A
lessons folder of one's own ($MINIGRAD_LESSONS) may bring a check for a lesson the package has
none for, as the file `checks/NN_slug.py` in that folder.

The learner works on a copy: `minigrad exercise N` copies the stub into the working folder,
`./minigrad-exercises/NN_slug.py` (`$MINIGRAD_EXERCISES` names another folder).

Where the lessons live: `$MINIGRAD_LESSONS` if set; else the copy shipped inside the installed
package (`minigrad/_lessons`, mapped from the repository's `lessons/` folder by pyproject.toml);
else `lessons/` next to the `minigrad` package (a source checkout or an editable install).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

LESSON_FILE = re.compile(r"^(\d\d)_(\w+)\.py$")
CELL_MARKER = re.compile(r"^# %%(.*)$")
TITLE_LINE = re.compile(r"^# Lesson (\d+): (.+)$")
WORKING_FOLDER = "minigrad-exercises"  # under the current directory, unless $MINIGRAD_EXERCISES
CHECKS = Path(__file__).resolve().parent / "checks"  # the lesson checks, in the package


# ---- finding lessons ---------------------------------------------------------------------------

def lessons_root() -> Path:
    """The folder holding NN_slug.py, exercises/ and solutions/ (see module docstring)."""
    configured = os.environ.get("MINIGRAD_LESSONS")
    if configured:
        root = Path(configured)
        if not root.is_dir():
            raise FileNotFoundError(f"MINIGRAD_LESSONS={configured!r} is not a folder")
        return root.resolve()
    package = Path(__file__).resolve().parents[2]  # minigrad/, above learn/course/
    # The installed copy first: in site-packages a sibling `lessons/` could be anyone's package.
    for candidate in (package / "_lessons", package.parent / "lessons"):
        if (candidate / "exercises").is_dir() and any(candidate.glob("[0-9][0-9]_*.py")):
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
        """The lesson's check: the package's (`minigrad/learn/course/checks/NN_slug.py`) when it
        has one for this lesson, else `checks/NN_slug.py` in a lessons folder of one's own."""
        packaged = CHECKS / self.path.name
        return packaged if packaged.is_file() else self.root / "checks" / self.path.name

    @property
    def check_is_packaged(self) -> bool:
        """Whether the check is one of the package's (imported as a module of
        minigrad.learn.course.checks) rather than a file of a lessons folder (run as a file)."""
        return self.check_path.parent == CHECKS

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


# Where a notebook looked for the exercise folder and found none (`yours` says so); empty otherwise.
SEARCHED: list[Path] = []


def find_working_folder(start: Path, recorded: str | None = None) -> tuple[Path | None, list[Path]]:
    """The exercise folder for code that runs in `start` (a notebook's folder): `recorded`
    (relative to start) when given and present, else the first `minigrad-exercises` found in
    start or a folder above it. Returns (the folder or None, every place looked at)."""
    start = Path(start).resolve()
    places = [start / recorded] if recorded else []
    places += [folder / WORKING_FOLDER for folder in (start, *start.parents)]
    for place in places:
        if place.is_dir():
            return place.resolve(), places
    return None, places


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
    kind, start = "code", 1
    body: list[str] = []

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
    cells = lesson.cells()
    text = lesson.path.read_text(encoding="utf-8")
    return [*_heading_problems(lesson, cells), *_cell_problems(cells), *_text_problems(lesson, text),
            *_file_problems(lesson)]


def _heading_problems(lesson: Lesson, cells: list[Cell]) -> list[str]:
    """The first cell: markdown, `# Lesson N: Title` with this lesson's number, then a summary."""
    problems = []
    first = cells[0] if cells else None
    title = TITLE_LINE.match(first.source.splitlines()[0]) if first and first.kind == "markdown" else None
    if not title:
        problems.append(f"the first cell must be markdown starting '# Lesson {lesson.number}: Title'")
    elif int(title.group(1)) != lesson.number:
        problems.append(f"the title says lesson {title.group(1)} but the file is lesson {lesson.number}")
    if not lesson.summary:
        problems.append("the first cell needs a one-sentence summary after the title")
    return problems


def _cell_problems(cells: list[Cell]) -> list[str]:
    """Code to run, and a prediction to commit to (a markdown cell ending with a question)."""
    rules = [
        (any(cell.kind == "code" for cell in cells), "no code cells"),
        (any(c.kind == "markdown" and c.source.rstrip().endswith("?") for c in cells),
         "no prediction cell (a markdown cell ending with a question)"),
    ]
    return [problem for holds, problem in rules if not holds]


def _text_problems(lesson: Lesson, text: str) -> list[str]:
    """What the lesson's text must say: its setup, a gradcheck, `minigrad check N`; and must not:
    an import of the lessons folder."""
    n = lesson.number
    rules = [
        (re.search(rf"^lesson = setup\({n}\b", text, re.MULTILINE),
         f"the first code cell must run `lesson = setup({n})` from minigrad.learn.kit (BLAS threads "
         "capped, figures in $MINIGRAD_OUT/lesson-NN)"),
        ("gradcheck" in text, "no check against finite differences (minigrad.tools.gradcheck)"),
        (f"minigrad check {n}" in text, f"the exercise must tell the learner to run `minigrad check {n}`"),
        (not re.search(r"^\s*(from|import)\s+lessons", text, re.MULTILINE),
         "a lesson must not import from the lessons folder (solutions stay apart)"),
    ]
    return [problem for holds, problem in rules if not holds]


def _file_problems(lesson: Lesson) -> list[str]:
    """The lesson's exercise stub, its reference answer and its check must exist."""
    problems = [f"missing {path.relative_to(lesson.root.parent)}"
                for path in (lesson.exercise_path, lesson.solution_path) if not path.is_file()]
    if not lesson.check_path.is_file():
        problems.append(f"missing its check: {lesson.path.name} in minigrad/learn/course/checks/ (or, for a "
                        "lessons folder of one's own, in its checks/ folder)")
    return problems


def display_path(path: Path) -> str:
    """`path` relative to the current folder when it is under it (what a learner types), else as is.
    A symbolic link is named as itself, not as where it points."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except ValueError:
        return str(path)
