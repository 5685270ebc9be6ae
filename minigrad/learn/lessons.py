"""The lessons, as one import: a facade over the modules that each do one job.

- minigrad.learn.catalog: finding lessons and their files, reading cells (Lesson, Cell)
- minigrad.learn.runner: running a lesson step by step (`minigrad lesson N`)
- minigrad.learn.notebook: a lesson as a Jupyter notebook (`minigrad lesson N --notebook`)
- minigrad.learn.grading: marking exercises and copying stubs (`minigrad check N`, `exercise N`)

The command line itself is minigrad/cli.py.
"""

from minigrad.learn.catalog import (
    CELL_MARKER,
    LESSON_FILE,
    TITLE_LINE,
    WORKING_FOLDER,
    Cell,
    Lesson,
    contract_problems,
    display_path,
    find_lessons,
    get_lesson,
    lessons_root,
    parse_cells,
    working_folder,
)
from minigrad.learn.grading import (
    FAIL,
    NOT_ATTEMPTED,
    PASS,
    CheckResult,
    check,
    check_answers,
    copy_exercise,
    load_check,
    load_module,
)
from minigrad.learn.notebook import IMAGE_SUFFIXES, notebook_json, notebook_setup, write_notebook
from minigrad.learn.runner import (
    ECHO_LINES,
    PREDICTION_AGAIN,
    PREDICTION_PROMPT,
    STEP_PROMPT,
    LessonRun,
    ask_prediction,
    echo_code,
    render_markdown,
    run_lesson,
    with_learners_paths,
)

__all__ = [
    "CELL_MARKER", "ECHO_LINES", "FAIL", "IMAGE_SUFFIXES", "LESSON_FILE", "NOT_ATTEMPTED", "PASS",
    "PREDICTION_AGAIN", "PREDICTION_PROMPT", "STEP_PROMPT", "TITLE_LINE", "WORKING_FOLDER",
    "Cell", "CheckResult", "Lesson", "LessonRun", "ask_prediction", "check", "check_answers",
    "contract_problems", "copy_exercise", "display_path", "echo_code", "find_lessons", "get_lesson",
    "lessons_root", "load_check", "load_module", "notebook_json", "notebook_setup", "parse_cells",
    "render_markdown", "run_lesson", "with_learners_paths", "working_folder", "write_notebook",
]
