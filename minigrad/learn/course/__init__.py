"""The course, one front door: finding, running and marking the lessons.

- `catalog`: finding lessons and their files, reading cells (Lesson, Cell)
- `runner`: running a lesson step by step (`minigrad lesson N`)
- `notebook`: a lesson as a Jupyter notebook (`minigrad lesson N --notebook`)
- `grading`: marking exercises and copying stubs (`minigrad check N`, `exercise N`)
- `learner`: the learner's code in a process of its own (probes, `Answers`), and `wire`, the data
  that crosses between it and the check
- `pieces`: the learner's pieces a lesson runs once they pass their check (`yours(N)`), and
  those of lessons 4 to 8 that the models of lessons 8 to 14 are built and trained with
  (`model_pieces(N)`)
- `checks/`: each lesson's check, `checks/NN_slug.py`, and the diagnosis they share
  (`checks/_common.py`). They live in the package: minigrad never imports the lessons folder,
  whose lesson scripts and exercise stubs it reads and runs as files.

The command line itself is minigrad/cli.py; what a lesson imports is minigrad.learn.kit.
"""

from minigrad.learn.course.catalog import (
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
from minigrad.learn.course.grading import (
    FAIL,
    NOT_ATTEMPTED,
    PASS,
    CheckResult,
    check,
    check_answers,
    copy_exercise,
    load_check,
    load_check_module,
    load_module,
)
from minigrad.learn.course.notebook import IMAGE_SUFFIXES, notebook_json, notebook_setup, write_notebook
from minigrad.learn.course.pieces import (
    MODEL_LESSONS,
    PIECES,
    Piece,
    YourPieces,
    map_lines,
    milestone,
    model_pieces,
    yours,
)
from minigrad.learn.course.runner import (
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
    "MODEL_LESSONS", "PIECES", "Piece", "YourPieces", "map_lines", "milestone", "model_pieces", "yours",
    "Cell", "CheckResult", "Lesson", "LessonRun", "ask_prediction", "check", "check_answers",
    "contract_problems", "copy_exercise", "display_path", "echo_code", "find_lessons", "get_lesson",
    "lessons_root", "load_check", "load_check_module", "load_module", "notebook_json", "notebook_setup",
    "parse_cells", "render_markdown", "run_lesson", "with_learners_paths", "working_folder", "write_notebook",
]
