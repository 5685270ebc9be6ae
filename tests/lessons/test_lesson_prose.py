"""The lessons are written for a learner (issue 32): no development history and no talk of the
lessons' CPU budget in their text (code and comments included: a learner reads both), markdown
cells that fit a screen, and lessons short enough to read in one sitting. What changed between
versions of a lesson belongs in CHANGELOG.md and docs/lessons.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minigrad.learn import course

REPO = Path(__file__).resolve().parents[2]
LESSONS = course.find_lessons(REPO / "lessons")

# Phrasing that tells the history of the lesson rather than the subject, or the lessons' running
# time rather than the measurement (each with an example it is meant to catch)
HISTORY = [
    r"the check this replaced",          # "An interval that merely contains zero, the check this replaced"
    r"\bthis replaced\b",
    r"\bearlier version\b",              # "which is what the earlier version of this lesson found"
    r"\bearlier run length\b",           # "At 600 steps, this lesson's earlier run length"
    r"\bearlier (budget|length)\b",      # "`MINIGRAD_GPT_STEPS=240` is the earlier budget"
    r"\bthe earlier measurement\b",
    r"\bchanged from\b",                 # "Changed from \"holds\""
    r"\bbefore (its|the) trim\b",
    r"\bthe old (check|version|run|measurement|verdict)\b",
    r"\bthe lesson used to\b",
    r"\bCPU\b",                          # "about 250 x 9 CPU seconds"
    r"\bseconds per seed\b",             # "this part has about 30 seconds per seed"
    r"\b3-minute\b",                     # "they do not fit in the lesson's 3-minute budget"
    r"\blesson's budget\b",
    r"\bthis part has about\b",
]
MAX_MARKDOWN_LINES = 25  # a screen: a markdown cell's non-blank lines (code cells: 40, test_lesson_cells.py)
MAX_WORDS = 2600  # "about 2,500": the words of a lesson's markdown


def history_phrases(text: str) -> list[tuple[int, str]]:
    """(line number, phrase) for every line of `text` that matches a HISTORY pattern."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in HISTORY:
            match = re.search(pattern, line, re.IGNORECASE)
            if match:
                found.append((number, match.group(0)))
                break
    return found


def markdown_lines(cell: course.Cell) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip())


def markdown_words(lesson: course.Lesson) -> int:
    return sum(len(cell.source.split()) for cell in lesson.cells() if cell.kind == "markdown")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.stem)
def test_no_development_history_or_budget_talk(lesson):
    found = history_phrases(lesson.path.read_text(encoding="utf-8"))
    assert found == [], f"{lesson.stem}: (line, phrase) {found}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.stem)
def test_markdown_cells_fit_a_screen(lesson):
    long = [(cell.line, n) for cell in lesson.cells()
            if cell.kind == "markdown" and (n := markdown_lines(cell)) > MAX_MARKDOWN_LINES]
    assert long == [], f"{lesson.stem}: markdown cells (line, lines) over {MAX_MARKDOWN_LINES}: {long}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.stem)
def test_a_lesson_reads_in_one_sitting(lesson):
    assert markdown_words(lesson) <= MAX_WORDS, f"{lesson.stem}: {markdown_words(lesson)} words of text"


def test_the_scan_catches_the_phrasing_it_is_meant_to():
    examples = [
        "# An interval that merely contains zero, the check this replaced, passes for a shuffle.",
        "# against 76-82%, which is what the earlier version of this lesson found",
        "# (At 600 steps, this lesson's earlier run length, they were still at 67-71%.)",
        "# holds weakly. Changed from \"holds\"",
        "# about 250 x 9 CPU seconds, where this part has about 30 seconds per seed",
        "# they do not fit in the lesson's 3-minute budget",
    ]
    assert [line for line, _ in history_phrases("\n".join(examples))] == list(range(1, len(examples) + 1))
    clean = "# The Old Testament is read once; the earlier layers see less. No longer a constant."
    assert history_phrases(clean) == []


def test_the_limits_would_catch_a_long_cell_and_a_long_lesson(tmp_path):
    path = tmp_path / "01_long.py"
    path.write_text("# %% [markdown]\n# # Lesson 1: Long\n#\n# A summary.\n" + "# words " * 10 + "\n"
                    + "# %% [markdown]\n" + "".join(f"# line {i}\n" for i in range(26))
                    + "# %% [markdown]\n" + "# many words here\n" * 900)
    lesson = course.Lesson(1, "long", path)
    cells = [cell for cell in lesson.cells() if cell.kind == "markdown"]
    assert markdown_lines(cells[1]) == 26 > MAX_MARKDOWN_LINES
    assert markdown_words(lesson) > MAX_WORDS
