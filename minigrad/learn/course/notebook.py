"""A lesson as a Jupyter notebook: `minigrad lesson N --notebook`.

The notebook is written as plain nbformat 4.5 JSON (no nbformat or jupytext needed). Its setup
cell finds the lesson on the machine that runs it and shows inline each figure a cell writes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minigrad.learn.course import catalog
from minigrad.learn.course.catalog import Cell, Lesson, get_lesson, working_folder
from minigrad.learn.course.runner import changed_files, snapshot, with_learners_paths
from minigrad.learn.kit import figures

IMAGE_SUFFIXES = {".png", ".svg", ".jpg", ".jpeg", ".gif"}


def notebook_json(lesson: Lesson, out_dir: Path | str) -> dict[str, Any]:
    """The lesson as an nbformat 4.5 notebook (plain JSON; no nbformat/jupytext needed).

    A setup cell after the title finds the lesson on the machine that runs the notebook (by
    number, so no path of the machine that wrote it is baked in), sends figures next to the
    notebook (MINIGRAD_OUT = the kernel's working folder, which Jupyter sets to the
    notebook's), and shows each image a cell writes there. `out_dir` is unused in the JSON: it
    is where `write_notebook` puts the file. The exercise comes last (`exercise_cells`).
    """
    exercises = _relative(working_folder(), Path(out_dir))
    recorded = f", exercises={exercises!r}" if exercises else ""
    setup = (
        f"# Added by `minigrad lesson {lesson.number} --notebook`: finds lesson {lesson.number} on this "
        "machine and your exercise copies; figures go next to this notebook and show inline.\n"
        "from minigrad.learn.course.notebook import notebook_setup\n"
        f"__file__ = notebook_setup({lesson.number}{recorded})"
    )
    cells = [Cell(c.kind, with_learners_paths(c.source, lesson), c.line) if c.kind == "markdown" else c
             for c in lesson.cells()]
    sequence = cells[:1] + [Cell("code", setup, 0)] + cells[1:] + exercise_cells(lesson)
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


def exercise_cells(lesson: Lesson) -> list[Cell]:
    """The exercise, to do in the notebook: the stub's code to fill in, then its check on this
    notebook's definitions. None when the lesson has no stub."""
    if not lesson.exercise_path.is_file():
        return []
    n = lesson.number
    intro = (f"## Your answer, in this notebook\n\n"
             f"The cell below is lesson {n}'s exercise as `minigrad exercise {n}` would copy it. Fill in "
             "its functions here and run it, then run the check under it: it marks the definitions of "
             f"this notebook the way `minigrad check {n}` marks a file, and says NOT ATTEMPTED until "
             "you have written them.")
    stub = lesson.exercise_path.read_text(encoding="utf-8").rstrip("\n")
    check = f"import minigrad\n\nminigrad.check({n}, globals())"
    return [Cell("markdown", intro, 0), Cell("code", stub, 0), Cell("code", check, 0)]


def write_notebook(lesson: Lesson, out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{lesson.stem}.ipynb"
    path.write_text(json.dumps(notebook_json(lesson, out_dir), indent=1) + "\n", encoding="utf-8")
    return path


def _relative(folder: Path, out_dir: Path) -> str | None:
    """`folder` as seen from `out_dir` (both as given, from the current folder), e.g.
    '../minigrad-exercises': how the notebook finds the exercise copies wherever it runs."""
    try:
        return os.path.relpath(os.path.abspath(folder), os.path.abspath(out_dir))
    except ValueError:  # another drive
        return None


def notebook_setup(number: int, out_dir: str | Path = ".", exercises: str | None = None) -> str:
    """Run in a generated notebook: export MINIGRAD_OUT (`out_dir`, default the working folder);
    find the learner's exercise folder (`exercises`, recorded relative to the notebook when it
    was written, else a `minigrad-exercises` folder here or above) and export it as
    MINIGRAD_EXERCISES, so that `yours(N)` marks the learner's copy; and, in a notebook kernel,
    display every image a cell writes under out_dir that the lesson did not show itself. Returns
    the path of lesson `number` here, for `__file__`."""
    lesson_path = str(get_lesson(number).path)
    out_dir = str(Path(out_dir).resolve())
    os.environ["MINIGRAD_OUT"] = out_dir
    _find_exercises(exercises)
    if not figures.in_notebook():
        return lesson_path
    from IPython import get_ipython

    shell = get_ipython()
    folder = Path(out_dir)
    state = {"before": snapshot(folder)}

    def remember(*_: Any) -> None:
        state["before"] = snapshot(folder)

    def show_new_images(*_: Any) -> None:
        for path in changed_files(folder, state["before"]):
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


def _find_exercises(recorded: str | None) -> None:
    """Export MINIGRAD_EXERCISES for this kernel when it is not set and a folder is found; else
    remember where the search looked (catalog.SEARCHED), for `yours(N)` to say."""
    catalog.SEARCHED.clear()
    if os.environ.get("MINIGRAD_EXERCISES"):
        return
    found, looked = catalog.find_working_folder(Path.cwd(), recorded)
    if found is not None:
        os.environ["MINIGRAD_EXERCISES"] = str(found)
    else:
        catalog.SEARCHED.extend(looked)

