"""The size of the lessons' code cells (issue 25): no cell longer than 40 non-blank lines, so that
the terminal runner, which echoes a cell whole up to that limit, shows every cell whole; and the
lesson's sizes for the full and fast modes chosen in one place (`lesson.sizes`), not constant
by constant with `X if FAST else Y`.

Every lesson is held to this."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minigrad.learn import course as runner

REPO = Path(__file__).resolve().parents[2]
CHECKED = runner.find_lessons(REPO / "lessons")
MAX_CODE_LINES = 40


def code_cells(lesson: runner.Lesson) -> list[runner.Cell]:
    return [cell for cell in lesson.cells() if cell.kind == "code"]


def test_the_lessons_checked_here_exist():
    assert [lesson.number for lesson in CHECKED] == list(range(1, 16))


@pytest.mark.parametrize("lesson", CHECKED, ids=lambda lesson: lesson.stem)
def test_no_code_cell_is_longer_than_40_lines(lesson):
    long = [(cell.line, n) for cell in code_cells(lesson)
            if (n := sum(1 for line in cell.source.splitlines() if line.strip())) > MAX_CODE_LINES]
    assert long == [], f"{lesson.stem}: cells (line, non-blank lines) over {MAX_CODE_LINES}: {long}"


@pytest.mark.parametrize("lesson", CHECKED, ids=lambda lesson: lesson.stem)
def test_the_terminal_shows_every_code_cell_whole(lesson):
    cut = [cell.line for cell in code_cells(lesson) if "more lines" in runner.echo_code(cell, lesson.path)]
    assert cut == [], f"{lesson.stem}: cells that the runner cuts, at lines {cut}"


@pytest.mark.parametrize("lesson", CHECKED, ids=lambda lesson: lesson.stem)
def test_sizes_are_chosen_in_one_place(lesson):
    text = lesson.path.read_text(encoding="utf-8")
    assert "lesson.sizes(" in text, f"{lesson.stem}: choose the full and fast sizes with lesson.sizes(...)"
    assert not re.search(r"\bif FAST\b|\bFAST else\b", text), f"{lesson.stem}: a size set elsewhere"


def test_the_check_would_catch_a_long_cell(tmp_path):
    """The measure itself: a cell of 41 assert lines is both too long and cut by the runner."""
    path = tmp_path / "08_long.py"
    path.write_text("# %%\n" + "".join(f"assert {i} == {i}\n" for i in range(41)))
    (cell,) = runner.Lesson(8, "long", path).cells()
    assert sum(1 for line in cell.source.splitlines() if line.strip()) > MAX_CODE_LINES
    assert "more lines" in runner.echo_code(cell, path)
