"""The lessons and their runner: every lesson found follows the contract, runs headless, and
has an exercise whose solution passes and whose stub is "not attempted"; plus the runner's
own behaviour (cells, pauses, failures, checks, notebooks, the command line, packaging) on
small lessons written into a temporary folder."""

from __future__ import annotations

import io
import json
import linecache
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minigrad import cli
from minigrad.learn import course as runner
from minigrad.learn.course import runner as lesson_runner

REPO = Path(__file__).resolve().parents[2]
LESSONS = runner.find_lessons(REPO / "lessons")


def lesson_ids(lesson: runner.Lesson) -> str:
    return lesson.stem


def test_lessons_are_found_in_order():
    numbers = [lesson.number for lesson in LESSONS]
    assert numbers[:2] == [1, 2] and numbers == sorted(numbers)


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_lesson_follows_the_contract(lesson):
    assert runner.contract_problems(lesson) == []
    assert lesson.title and lesson.summary.endswith(".")


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("MINIGRAD_OUT", "MPLBACKEND")}
    environment.update(MINIGRAD_SMALL="1", PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=environment, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )


def _figures(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in runner.IMAGE_SUFFIXES)


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_cells_are_read_as_jupytext_reads_them(lesson):
    jupytext = pytest.importorskip("jupytext")
    theirs = [(cell.cell_type, cell.source) for cell in jupytext.read(lesson.path).cells]
    assert [(cell.kind, cell.source) for cell in lesson.cells()] == theirs


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_lesson_runs_headless_through_the_runner(lesson, tmp_path):
    out = tmp_path / "out"
    command = ["-m", "minigrad.cli", "lesson", str(lesson.number), "--no-pause", "--out", str(out)]
    done = _run(command, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"lesson {lesson.number} finished in" in done.stdout
    figures = _figures(out / f"lesson-{lesson.number:02d}")
    assert figures, f"lesson {lesson.number} wrote no figure under {out}"
    for figure in figures:
        assert str(figure) in done.stdout, f"the path of {figure.name} is not printed"


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_lesson_runs_as_a_plain_script(lesson, tmp_path):
    done = _run([str(lesson.path)], tmp_path, MINIGRAD_OUT=str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _figures(tmp_path / "out" / f"lesson-{lesson.number:02d}")


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_solution_passes_its_check(lesson):
    result = runner.check_answers(lesson, lesson.solution_path)
    assert (result.status, result.message) == (runner.PASS, "every check passed")


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_stub_reports_not_attempted(lesson):
    result = runner.check_answers(lesson)
    assert result.status == runner.NOT_ATTEMPTED, result.message


def _stub_with_a_bug(lesson: runner.Lesson) -> tuple[str, set[int]]:
    """The lesson's stub with each `raise NotImplementedError(...)` replaced by a line that raises
    IndexError (line numbers kept); and the numbers of those lines."""
    import ast

    text = lesson.exercise_path.read_text()
    lines = text.splitlines()
    buggy = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node):
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1] = indent + "return [][1]  # a bug"
            for continuation in range(node.lineno, node.end_lineno):
                lines[continuation] = ""
            buggy.add(node.lineno)
    return "\n".join(lines) + "\n", buggy


@pytest.mark.parametrize("lesson", LESSONS, ids=lesson_ids)
def test_a_crash_in_the_learners_code_is_reported_with_its_file_and_line(lesson, tmp_path):
    text, buggy = _stub_with_a_bug(lesson)
    assert buggy, "the stub has no NotImplementedError to replace"
    mine = tmp_path / "mine.py"
    mine.write_text(text)
    result = runner.check_answers(lesson, mine)
    assert result.status == runner.FAIL
    named = [line for line in buggy if f"IndexError: list index out of range (in mine.py, line {line})"
             in result.message]
    assert named, result.message
    assert f'mine.py", line {named[0]}' in result.traceback


# ---- the runner on small lessons written for the test ------------------------------------------

LESSON_TEXT = '''\
# %% [markdown]
# # Lesson {n}: Tiny
#
# A tiny lesson that
# exists for the tests.

# %%
import os
from pathlib import Path
from minigrad.learn.kit import setup
lesson = setup({n})
OUT = lesson.out
value = 21

# %% [markdown]
# ## Predict
# What is twice the value?

# %%
(OUT / "figure.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
print("twice:", 2 * value, "from", Path(__file__).name)
assert {condition}, "the check in the lesson failed"
# gradcheck is mentioned here; then run `minigrad check {n}`
'''

CHECK_TEXT = '''\
def check(answers):
    got = answers.double(21)
    assert got != 21, "you returned the input unchanged: multiply it by 2"
    assert got == 42, f"double(21) gave {got}, expected 42"
'''


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A lessons folder with lesson 3 (passes) and lesson 4 (its check fails)."""
    before = set(sys.modules)
    root = tmp_path / "lessons"
    for folder in ("", "exercises", "solutions", "checks"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    for n, condition in ((3, "value == 21"), (4, "value == 22")):
        (root / f"0{n}_tiny.py").write_text(LESSON_TEXT.format(n=n, condition=condition))
        (root / "exercises" / f"0{n}_tiny.py").write_text(
            "def double(x):\n    raise NotImplementedError('lesson: double is not written yet')\n")
        (root / "solutions" / f"0{n}_tiny.py").write_text("def double(x):\n    return 2 * x\n")
        (root / "checks" / f"0{n}_tiny.py").write_text(CHECK_TEXT)
    monkeypatch.setenv("MINIGRAD_LESSONS", str(root))
    monkeypatch.chdir(tmp_path)
    yield root
    for name in set(sys.modules) - before:  # the tiny lessons package must not leak into other tests
        del sys.modules[name]


def test_cells_keep_their_kind_text_and_line():
    cells = runner.parse_cells("x = 1\n# %% [markdown]\n# # Title\n#\n# text\n\n# %% a title\n\ny = 2\n\n")
    assert cells == [
        runner.Cell("code", "x = 1", 1),
        runner.Cell("markdown", "# Title\n\ntext", 3),
        runner.Cell("code", "y = 2", 9),
    ]


def test_title_and_wrapped_summary_are_read(tiny):
    lesson = runner.get_lesson(3)
    assert (lesson.title, lesson.summary) == ("Tiny", "A tiny lesson that exists for the tests.")
    assert runner.contract_problems(lesson) == []


def test_contract_problems_are_named(tiny):
    path = tiny / "03_tiny.py"
    text = path.read_text().replace("# # Lesson 3", "# # Lesson 5").replace("the value?", "the value.")
    text = text.replace("lesson = setup(3)", "lesson = setup(number=3)")
    path.write_text(text)
    (tiny / "checks" / "03_tiny.py").unlink()
    problems = runner.contract_problems(runner.get_lesson(3))
    assert "the title says lesson 5 but the file is lesson 3" in problems
    assert "no prediction cell (a markdown cell ending with a question)" in problems
    assert ("missing its check: 03_tiny.py in minigrad/learn/course/checks/ (or, for a lessons folder of "
            "one's own, in its checks/ folder)") in problems
    assert any(p.startswith("the first code cell must run `lesson = setup(3)` from") for p in problems)


def test_unknown_lesson_names_the_available_ones(tiny, capsys):
    with pytest.raises(LookupError, match=r"lesson 9 not found \(available lessons: 3, 4\)"):
        runner.get_lesson(9)
    assert cli.main(["lesson", "9"]) == 2
    assert "minigrad lesson: lesson 9 not found (available lessons: 3, 4)" in capsys.readouterr().err


def test_lessons_root_from_the_environment_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("MINIGRAD_LESSONS", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=r"MINIGRAD_LESSONS='.*nowhere' is not a folder"):
        runner.lessons_root()


def test_run_shows_markdown_runs_code_and_lists_files(tiny, tmp_path):
    shown = io.StringIO()
    before = dict(os.environ)
    run = runner.run_lesson(runner.get_lesson(3), tmp_path / "out", stdout=shown)
    text = shown.getvalue()
    assert run.ok and run.error == ""
    assert "Lesson 3: Tiny\n==============" in text  # a heading, underlined
    assert "  | value = 21" in text  # the code is echoed before it runs
    assert run.files == [(tmp_path / "out" / "lesson-03" / "figure.svg").resolve()]
    assert dict(os.environ) == before  # MINIGRAD_OUT and MPLBACKEND are put back


def test_failing_check_stops_the_lesson_and_names_the_line(tiny, tmp_path, capsys):
    shown = io.StringIO()
    run = runner.run_lesson(runner.get_lesson(4), tmp_path / "out", stdout=shown)
    assert not run.ok
    assert run.error == f"a check failed in the code cell at line 20 of {tiny / '04_tiny.py'}"
    assert "AssertionError: the check in the lesson failed" in shown.getvalue()
    assert f'File "{tiny / "04_tiny.py"}", line 22' in shown.getvalue()  # the assert's own line
    assert "  > twice: 42 from 04_tiny.py" in shown.getvalue()  # __file__ is the lesson's; output marked


def test_pauses_after_markdown_that_leads_to_code_and_q_quits(tiny, tmp_path):
    shown = io.StringIO()
    answers = io.StringIO("\n42\n")
    run = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=answers, stdout=shown)
    assert run.ok
    assert shown.getvalue().count(runner.STEP_PROMPT) == 1
    assert shown.getvalue().count(runner.PREDICTION_PROMPT) == 1  # after "What is twice the value?"
    stopped = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=io.StringIO("q\n"),
                                stdout=io.StringIO())
    assert (stopped.ok, stopped.stopped_by_learner, stopped.error) == (True, True, "")  # not a failure


def test_prediction_is_asked_again_when_empty_and_shown_back_after_the_result(tiny, tmp_path):
    shown = io.StringIO()
    answers = io.StringIO("\n\n  \nforty-two, I think\n")  # Enter at the step, then two empty tries
    run = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=answers, stdout=shown)
    text = shown.getvalue()
    assert run.ok and run.predictions == ["forty-two, I think"]
    assert text.count(runner.PREDICTION_PROMPT) == 3 and text.count(runner.PREDICTION_AGAIN) == 2
    result, reveal = text.index("  > twice: 42"), text.index('You predicted: "forty-two, I think"')
    assert result < reveal  # shown back after the output it predicts
    closed = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=io.StringIO("\n"),
                               stdout=io.StringIO())
    assert closed.stopped_by_learner and closed.predictions == []  # stdin closed while asking


def test_output_is_marked_and_cells_past_the_40_line_limit_are_cut(tiny, tmp_path):
    lesson = runner.get_lesson(3)
    long_cell = "\n".join(f"x{i} = {i}" for i in range(48)) + "\nprint('a\\nb', end='')\n"
    lesson.path.write_text(lesson.path.read_text() + "\n# %%\n" + long_cell)
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path, stdout=shown).ok
    text = shown.getvalue()
    assert runner.ECHO_LINES == 40 and "  | x39 = 39\n" in text and "x40 = 40" not in text
    first = lesson.cells()[-1].line
    assert f"  | ... 9 more lines (03_tiny.py, lines {first + 40}-{first + 48})" in text
    assert "  > a\n  > b\n" in text  # every printed line marked, the last one ended


def test_a_cell_of_40_lines_is_shown_whole_blank_lines_not_counted(tiny, tmp_path):
    lesson = runner.get_lesson(3)
    cell = "\n\n".join(f"z{i} = {i}" for i in range(40))  # 40 lines of code, 39 blank lines between
    lesson.path.write_text(lesson.path.read_text() + "\n# %%\n" + cell + "\n")
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path, stdout=shown).ok
    assert "  | z0 = 0\n" in shown.getvalue() and "  | z39 = 39\n" in shown.getvalue()
    assert "more lines" not in shown.getvalue()


def test_a_block_of_imports_is_named_not_shown(tiny, tmp_path):
    lesson = runner.get_lesson(3)
    imports = "import io\nimport json\n\nimport numpy as np\nfrom pathlib import Path\n\n"
    lesson.path.write_text(lesson.path.read_text() + "\n# %%\n" + imports + "shown = 1\n")
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path, stdout=shown).ok
    first = lesson.cells()[-1].line
    named = f"  | ... 5 lines of imports (03_tiny.py, lines {first}-{first + 4})\n  | shown = 1\n"
    assert named in shown.getvalue()
    assert "import json" not in shown.getvalue()


def test_a_long_lesson_says_how_long_it_takes_before_it_starts(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    lesson = runner.get_lesson(3)
    long_setup = "lesson = setup(3, minutes=(2.0, 0.5))"
    lesson.path.write_text(lesson.path.read_text().replace("lesson = setup(3)", long_setup))
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path, stdout=shown).ok
    text = shown.getvalue()
    assert text.startswith("This lesson takes about 2.0 minutes at full size (30 s with `--small`")
    assert text.count("This lesson takes") == 1  # setup() stays quiet under the runner
    done = _run([str(lesson.path)], tmp_path, MINIGRAD_OUT=str(tmp_path / "script"))  # as a plain script
    assert done.returncode == 0 and "This lesson takes about 30 s at the small size" in done.stdout


def test_small_sets_minigrad_small_for_the_lesson_only(tiny, tmp_path, monkeypatch):
    monkeypatch.delenv("MINIGRAD_SMALL", raising=False)
    lesson = runner.get_lesson(3)
    cell = "\n# %%\nprint('small:', os.environ.get('MINIGRAD_SMALL'))\n"
    lesson.path.write_text(lesson.path.read_text() + cell)
    for small, expected in ((True, "  > small: 1"), (False, "  > small: None")):
        shown = io.StringIO()
        assert runner.run_lesson(lesson, tmp_path, stdout=shown, small=small).ok
        assert expected in shown.getvalue()
    assert "MINIGRAD_SMALL" not in os.environ
    shown = io.StringIO()
    with pytest.warns(DeprecationWarning, match=r"run_lesson\(fast=\.\.\.\) is deprecated.*small="):
        assert runner.run_lesson(lesson, tmp_path, stdout=shown, fast=True).ok  # the old keyword, one release
    assert "  > small: 1" in shown.getvalue()


def test_the_runner_caps_blas_threads_while_the_lesson_runs(tiny, tmp_path, monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not threadpoolctl.threadpool_info():
        pytest.skip("no BLAS library that threadpoolctl can see")
    lesson = runner.get_lesson(3)
    lesson.path.write_text(lesson.path.read_text() + (
        "\n# %%\nfrom threadpoolctl import threadpool_info\n"
        "print('threads:', sorted({p['num_threads'] for p in threadpool_info()\n"
        "                          if p['user_api'] == 'blas'}))\n"))
    monkeypatch.setenv("MINIGRAD_BLAS_THREADS", "1")
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path, stdout=shown).ok
    assert "  > threads: [1]" in shown.getvalue()


@pytest.mark.parametrize(("tty", "no_pause", "pauses"), [(True, False, True), (True, True, False),
                                                         (False, False, False)])
def test_cli_pauses_only_on_a_terminal_without_no_pause(tiny, monkeypatch, tty, no_pause, pauses):
    seen = {}

    def fake_run(lesson, out_dir, pause, small):
        seen["pause"], seen["small"] = pause, small
        return runner.LessonRun(lesson, True, 0.0, [])

    monkeypatch.setattr(lesson_runner, "run_lesson", fake_run)  # the module the CLI calls
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"isatty": lambda self: tty})())
    assert cli.main(["lesson", "3"] + (["--no-pause"] if no_pause else [])) == 0
    assert seen["pause"] is pauses and seen["small"] is False
    assert cli.main(["lesson", "3", "--small"]) == 0
    assert seen["small"] is True


def test_cli_fast_is_a_deprecated_spelling_of_small(tiny, monkeypatch, capsys):
    seen = {}

    def fake_run(lesson, out_dir, pause, small):
        seen["small"] = small
        return runner.LessonRun(lesson, True, 0.0, [])

    monkeypatch.setattr(lesson_runner, "run_lesson", fake_run)
    assert cli.main(["lesson", "3", "--fast"]) == 0
    assert seen["small"] is True
    assert "minigrad lesson: --fast is deprecated and will be removed in the next release; use --small" in (
        capsys.readouterr().err)
    assert cli.main(["lesson", "3", "--small"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_lesson_reports_time_and_files(tiny, capsys):
    assert cli.main(["lesson", "3", "--no-pause", "--out", "figs"]) == 0
    out = capsys.readouterr().out
    assert "lesson 3 finished in" in out and "files written:\n  figs/lesson-03/figure.svg" in out
    assert cli.main(["lesson", "4", "--no-pause"]) == 1
    out = capsys.readouterr().out
    assert "lesson 4 stopped after" in out and ": a check failed in the code cell at line 20 of" in out


def _answers(tiny: Path, body: str) -> Path:
    path = tiny.parent / "mine.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_check_statuses(tiny):
    lesson = runner.get_lesson(3)
    assert runner.check_answers(lesson).status == runner.NOT_ATTEMPTED
    assert runner.check_answers(lesson, lesson.solution_path).status == runner.PASS
    wrong = runner.check_answers(lesson, _answers(tiny, "def double(x):\n    return x\n"))
    assert wrong.status == runner.FAIL
    assert wrong.message == "you returned the input unchanged: multiply it by 2"


def test_check_reports_where_the_learners_code_crashed(tiny):
    lesson = runner.get_lesson(3)
    crash = runner.check_answers(lesson, _answers(tiny, "def double(x):\n    return x / 0\n"))
    assert crash.status == runner.FAIL
    assert crash.message == "your code raised ZeroDivisionError: division by zero (in mine.py, line 2)"
    broken = runner.check_answers(lesson, _answers(tiny, "def double(x) return 2 * x\n"))
    assert broken.status == runner.FAIL and broken.message.startswith("your code raised SyntaxError")


def test_cli_check_exit_codes_and_messages(tiny, capsys):
    assert cli.main(["check", "3"]) == 3
    out = capsys.readouterr().out
    assert "lesson 3 exercise (lessons/exercises/03_tiny.py): NOT ATTEMPTED" in out
    assert "lesson: double is not written yet" in out
    assert cli.main(["check", "3", "--file", str(_answers(tiny, "def double(x):\n    return 2 * x\n"))]) == 0
    assert "PASS" in capsys.readouterr().out
    assert cli.main(["check", "3", "--file", str(_answers(tiny, "def double(x):\n    return x + 1\n"))]) == 1
    assert "FAIL\n  double(21) gave 22, expected 42" in capsys.readouterr().out
    assert cli.main(["check", "3", "--file", "missing.py"]) == 2
    assert capsys.readouterr().err == "minigrad check: --file missing.py does not exist\n"  # said once


def test_cli_lessons_lists_titles_summaries_and_status(tiny, capsys):
    assert cli.main(["lessons"]) == 0
    out = capsys.readouterr().out
    assert " 3. Tiny  [not attempted]\n    A tiny lesson that exists for the tests." in out
    assert " 4. Tiny  [not attempted]" in out


def test_a_check_of_ones_own_runs_as_a_file_and_may_use_the_courses_diagnosis(tiny):
    (tiny / "checks" / "03_tiny.py").write_text(
        "from minigrad.learn.course.checks import _common as common\n\n"
        "def check(answers):\n    assert common.close(answers.double(21), 42)\n")
    lesson = runner.get_lesson(3)
    assert not lesson.check_is_packaged and lesson.check_path == tiny / "checks" / "03_tiny.py"
    assert runner.check_answers(lesson, lesson.solution_path).status == runner.PASS
    assert not any(name == "lessons" or name.startswith("lessons.") for name in sys.modules)


def test_a_lesson_the_package_has_a_check_for_is_marked_by_the_packaged_check(tiny):
    import shutil

    for folder in ("", "exercises", "solutions"):
        shutil.copy(REPO / "lessons" / folder / "02_finite_differences.py", tiny / folder)
    (tiny / "checks" / "02_finite_differences.py").write_text("def check(answers):\n    assert False\n")
    lesson = runner.get_lesson(2)
    assert lesson.check_is_packaged
    assert lesson.check_path == REPO / "minigrad" / "learn" / "course" / "checks" / "02_finite_differences.py"
    assert runner.load_check_module(lesson).__name__ == "minigrad.learn.course.checks.02_finite_differences"
    assert runner.check_answers(lesson, lesson.solution_path).passed  # not the folder's `assert False`


# ---- the learner's own copy: minigrad exercise N -------------------------------------------------

def test_exercise_copies_the_stub_to_the_working_folder_and_check_marks_it(tiny, tmp_path, capsys):
    copy = tmp_path / "minigrad-exercises" / "03_tiny.py"
    assert cli.main(["exercise", "3"]) == 0
    assert copy.read_text() == (tiny / "exercises" / "03_tiny.py").read_text()
    assert "minigrad-exercises/03_tiny.py: copied." in capsys.readouterr().out
    copy.write_text("def double(x):\n    return 2 * x\n")
    assert cli.main(["check", "3"]) == 0  # the copy is marked, not the stub
    assert "lesson 3 exercise (minigrad-exercises/03_tiny.py): PASS" in capsys.readouterr().out
    assert cli.main(["lessons"]) == 0
    out = capsys.readouterr().out
    assert " 3. Tiny  [pass: minigrad-exercises/03_tiny.py]" in out  # says which file it marked
    assert " 4. Tiny  [not attempted]" in out  # no copy of lesson 4: its stub


def test_exercise_never_overwrites_the_learners_work_without_asking(tiny, tmp_path, capsys, monkeypatch):
    copy = tmp_path / "minigrad-exercises" / "03_tiny.py"
    assert cli.main(["exercise", "3"]) == 0
    assert cli.main(["exercise", "3"]) == 0  # unchanged from the stub: nothing to lose
    assert "already there, unchanged from the stub" in capsys.readouterr().out
    copy.write_text("def double(x):\n    return x + x  # mine\n")
    monkeypatch.setattr(sys, "stdin", type("Pipe", (), {"isatty": lambda self: False})())
    assert cli.main(["exercise", "3"]) == 1  # not a terminal: refuse, name the file and the flag
    err = capsys.readouterr().err
    assert "minigrad-exercises/03_tiny.py already exists and differs from the stub: it is kept" in err
    assert "`minigrad exercise 3 --force`" in err and "# mine" in copy.read_text()
    monkeypatch.setattr(sys, "stdin", type("Tty", (), {"isatty": lambda self: True})())
    monkeypatch.setattr("builtins.input", lambda question: "n")
    assert cli.main(["exercise", "3"]) == 1 and "# mine" in copy.read_text()  # a terminal asks; no keeps it
    monkeypatch.setattr("builtins.input", lambda question: "y")
    assert cli.main(["exercise", "3"]) == 0 and "# mine" not in copy.read_text()
    copy.write_text("# mine again\n")
    assert cli.main(["exercise", "3", "--force"]) == 0 and "replaced with the stub" in capsys.readouterr().out


def test_exercise_of_a_lesson_without_a_stub_says_so(tiny, capsys):
    (tiny / "exercises" / "04_tiny.py").unlink()
    assert cli.main(["exercise", "4"]) == 2
    assert capsys.readouterr().err.startswith("minigrad exercise: lesson 4 has no exercise stub (")


def _files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_exercise_onto_a_folder_says_so_and_writes_nothing(tiny, tmp_path, capsys):
    (tmp_path / "minigrad-exercises" / "03_tiny.py").mkdir(parents=True)
    before = _files_under(tmp_path)
    assert cli.main(["exercise", "3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("minigrad exercise: minigrad-exercises/03_tiny.py is a folder: the copy needs")
    assert _files_under(tmp_path) == before


def test_exercise_keeps_an_edited_copy_that_is_not_utf8(tiny, tmp_path, capsys):
    copy = tmp_path / "minigrad-exercises" / "03_tiny.py"
    copy.parent.mkdir()
    copy.write_bytes(b"# caf\xe9 (latin-1)\ndef double(x):\n    return 2 * x\n")
    assert cli.main(["exercise", "3"]) == 1
    assert "03_tiny.py already exists and differs from the stub: it is kept" in capsys.readouterr().err
    assert copy.read_bytes().startswith(b"# caf\xe9")
    assert cli.main(["exercise", "3", "--force"]) == 0
    assert copy.read_text() == (tiny / "exercises" / "03_tiny.py").read_text()


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling link", "link to a file"])
def test_exercise_never_writes_through_a_link_outside_the_folder(tiny, tmp_path, capsys, dangling):
    outside = tmp_path / "outside" / "victim.py"
    outside.parent.mkdir()
    if not dangling:
        outside.write_text("someone else's file\n")
    copy = tmp_path / "minigrad-exercises" / "03_tiny.py"
    copy.parent.mkdir()
    copy.symlink_to(outside)
    for force in ([], ["--force"]):
        assert cli.main(["exercise", "3", *force]) == 1
        err = capsys.readouterr().err
        assert f"minigrad-exercises/03_tiny.py is a symbolic link (to {outside})" in err
        assert "copied" not in err and copy.is_symlink()
        assert outside.exists() is not dangling
        assert dangling or outside.read_text() == "someone else's file\n"


def test_exercise_into_a_folder_it_cannot_write_says_so(tiny, tmp_path, capsys, monkeypatch):
    from minigrad.learn.course import grading

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(args[0]))

    monkeypatch.setattr(grading, "open", refused, raising=False)  # what a read-only folder does
    assert cli.main(["exercise", "3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("minigrad exercise: cannot write minigrad-exercises/03_tiny.py: Permission denied")
    assert "MINIGRAD_EXERCISES" in err and not (tmp_path / "minigrad-exercises" / "03_tiny.py").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="a read-only folder does not stop root")
def test_exercise_into_a_read_only_folder_says_so(tiny, tmp_path, capsys):
    folder = tmp_path / "minigrad-exercises"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert cli.main(["exercise", "3"]) == 1
        assert "cannot write minigrad-exercises/03_tiny.py: Permission denied" in capsys.readouterr().err
    finally:
        folder.chmod(0o755)


def test_working_folder_comes_from_the_environment(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path / "mine"))
    path, what = runner.copy_exercise(runner.get_lesson(4))
    assert (path, what) == (tmp_path / "mine" / "04_tiny.py", "copied")
    assert runner.get_lesson(4).answers_path == path


def test_not_attempted_on_the_stub_says_how_to_get_a_copy(tiny, capsys):
    assert cli.main(["check", "3"]) == 3
    out = capsys.readouterr().out
    assert "Run `minigrad exercise 3` to copy it to minigrad-exercises/03_tiny.py" in out
    runner.copy_exercise(runner.get_lesson(3))
    assert cli.main(["check", "3"]) == 3
    assert "Fill in the functions in minigrad-exercises/03_tiny.py, then `minigrad check 3` again" in (
        capsys.readouterr().out)


def test_lesson_text_names_the_learners_copy(tiny, tmp_path, monkeypatch):
    lesson = runner.get_lesson(3)
    cell = "\n# %% [markdown]\n# Open `minigrad-exercises/03_tiny.py`.\n"
    lesson.path.write_text(lesson.path.read_text() + cell)
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path / "out", stdout=shown).ok
    assert "Open `minigrad-exercises/03_tiny.py`." in shown.getvalue()  # the default, from here
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path / "elsewhere"))
    shown = io.StringIO()
    assert runner.run_lesson(lesson, tmp_path / "out", stdout=shown).ok
    assert "Open `elsewhere/03_tiny.py`." in shown.getvalue()
    monkeypatch.setenv("MINIGRAD_EXERCISES", "/srv/course/mine")
    text = json.dumps(runner.notebook_json(lesson, tmp_path / "nb"))
    assert "Open `/srv/course/mine/03_tiny.py`." in text and "minigrad-exercises/03_tiny.py" not in text


def test_every_lesson_names_the_copy_and_how_to_make_it():
    for lesson in LESSONS:
        text = lesson.path.read_text()
        assert f"`minigrad exercise {lesson.number}`" in text
        assert f"minigrad-exercises/{lesson.path.name}" in text
        assert f"minigrad.check({lesson.number}, globals())" in text
        assert "lessons/exercises/" not in text, f"{lesson.path.name} names the stub, not the learner's copy"


# ---- minigrad.check(N, answers) in a notebook ----------------------------------------------------

def test_check_in_a_notebook_takes_a_module_a_namespace_or_globals(tiny):
    import types

    import minigrad

    def double(x):
        return 2 * x

    module = types.ModuleType("answers")
    module.double = double
    for answers in (module, types.SimpleNamespace(double=double), {"double": double, "__name__": "__main__"}):
        result = minigrad.check(3, answers)
        assert result.passed is True and result.status == runner.PASS
    wrong = minigrad.check(3, {"double": lambda x: x})
    assert wrong.passed is False
    assert repr(wrong) == ("lesson 3 exercise (your notebook's definitions): FAIL\n"
                           "  you returned the input unchanged: multiply it by 2")
    crash = minigrad.check(3, {"double": lambda x: x / 0})
    assert "your code raised ZeroDivisionError: division by zero" in str(crash)
    stub = minigrad.check(3, {"double": runner.load_module(tiny / "exercises" / "03_tiny.py").double})
    assert stub.status == runner.NOT_ATTEMPTED and "Fill in the functions in your notebook" in str(stub)


def test_check_with_nothing_defined_is_not_attempted_as_on_the_command_line(tiny):
    import minigrad

    result = minigrad.check(3, {})
    assert result.status == runner.NOT_ATTEMPTED and result.passed is False
    assert str(result) == ("lesson 3 exercise (your notebook's definitions): NOT ATTEMPTED\n"
                           "  none of the exercise's functions is defined yet (double())\n"
                           "  Fill in the functions in your notebook, then run the check again.")
    empty = _answers(tiny, "# nothing yet\n")
    assert runner.check_answers(runner.get_lesson(3), empty).status == runner.NOT_ATTEMPTED


def test_check_in_a_notebook_turns_sys_exit_into_a_fail_but_lets_the_stop_button_stop(tiny):
    """The notebook's Stop button interrupts the kernel, which is where the check waits for the
    learner's process: the interrupt stops the check (and that process)."""
    import signal
    import threading

    import minigrad

    def quits(x):
        sys.exit(0)

    def waits(x):
        import time

        time.sleep(60)

    result = minigrad.check(3, {"double": quits})
    assert result.status == runner.FAIL and "as sys.exit(0) does (in quits, line" in result.message
    stop_button = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))
    stop_button.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            minigrad.check(3, {"double": waits})
    finally:
        stop_button.cancel()


def test_check_prints_its_verdict_in_a_plain_script_and_not_twice_at_a_prompt(tiny, capsys, monkeypatch):
    script = tiny.parent / "script.py"
    script.write_text("import minigrad\n\ndef double(x):\n    return x\n\nminigrad.check(3, globals())\n")
    done = _run([str(script)], tiny.parent, MINIGRAD_LESSONS=str(tiny))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("lesson 3 exercise (your notebook's definitions): FAIL\n"
                           "  you returned the input unchanged: multiply it by 2\n")
    runner.check(3, {"double": lambda x: 2 * x})
    passed = "lesson 3 exercise (your notebook's definitions): PASS, every check passed\n"
    assert capsys.readouterr().out == passed
    monkeypatch.setattr(sys, "ps1", ">>> ", raising=False)  # the prompt shows the returned result itself
    assert runner.check(3, {"double": lambda x: 2 * x}).passed
    assert capsys.readouterr().out == ""


def test_notebook_and_command_line_give_the_same_diagnosis(tiny, capsys):
    path = _answers(tiny, "def double(x):\n    return x + 1\n")
    assert cli.main(["check", "3", "--file", str(path)]) == 1
    printed = capsys.readouterr().out
    result = runner.check(3, runner.load_module(path))
    assert str(result).split(": ", 1)[1] == printed.strip().split(": ", 1)[1]  # all but the source


def test_check_in_a_notebook_refuses_a_path_with_a_pointer(tiny):
    expected = (r"answers must be a module, a namespace or a dict such as globals\(\), "
                r"got 'mine.py' \(to mark a file, run `minigrad check 3 --file PATH`\)")
    with pytest.raises(TypeError, match=expected):
        runner.check(3, "mine.py")


# ---- notebooks -----------------------------------------------------------------------------------

def test_notebook_is_nbformat_4_with_every_cell(tiny, tmp_path, capsys):
    assert cli.main(["lesson", "3", "--notebook", "--out", "nb"]) == 0
    path = tmp_path / "nb" / "03_tiny.ipynb"
    assert "wrote nb/03_tiny.ipynb" in capsys.readouterr().out
    notebook = json.loads(path.read_text())
    assert (notebook["nbformat"], notebook["nbformat_minor"]) == (4, 5)
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    # title, setup, the lesson, then the exercise: what to do, the stub to fill in, its check
    assert kinds == ["markdown", "code", "code", "markdown", "code", "markdown", "code", "code"]
    stub = (tiny / "exercises" / "03_tiny.py").read_text()
    assert "".join(notebook["cells"][-2]["source"]) == stub.rstrip()
    assert "".join(notebook["cells"][-1]["source"]).endswith("minigrad.check(3, globals())")
    assert "".join(notebook["cells"][0]["source"]).startswith("# Lesson 3: Tiny")
    setup = "".join(notebook["cells"][1]["source"])
    # found by number where the notebook runs; the copies by where they are from the notebook
    assert "__file__ = notebook_setup(3, exercises='../minigrad-exercises')" in setup
    assert str(tmp_path) not in path.read_text() and str(Path.home()) not in path.read_text()
    for cell in notebook["cells"]:
        assert set(cell) >= {"cell_type", "id", "metadata", "source"}
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))


def test_notebook_code_runs_in_order_like_the_script(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MINIGRAD_OUT", raising=False)  # restored afterwards: notebook_setup sets it
    notebook = runner.notebook_json(runner.get_lesson(3), tmp_path / "nb")
    (tmp_path / "nb").mkdir()
    monkeypatch.chdir(tmp_path / "nb")  # Jupyter runs a notebook in its own folder
    namespace: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec("".join(cell["source"]), namespace)
    assert namespace["__file__"] == str(tiny / "03_tiny.py")
    assert (tmp_path / "nb" / "lesson-03" / "figure.svg").is_file()
    out = capsys.readouterr().out
    assert "twice: 42" in out
    assert "lesson 3 exercise (your notebook's definitions): NOT ATTEMPTED" in out  # the stub as it is
    cell = "def double(x):\n    return 2 * x\n"  # the learner fills it in; the kernel keeps its source
    linecache.cache["<cell 9>"] = (len(cell), None, cell.splitlines(keepends=True), "<cell 9>")
    exec(compile(cell, "<cell 9>", "exec"), namespace)
    exec("".join(notebook["cells"][-1]["source"]), namespace)
    assert "lesson 3 exercise (your notebook's definitions): PASS" in capsys.readouterr().out


def test_notebook_hint_says_how_to_get_jupyterlab_when_it_is_missing(tiny, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    for installed in (False, True):
        def find_spec(name, *args, installed=installed):
            if name == "jupyterlab":
                return object() if installed else None
            return real(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        assert cli.main(["lesson", "3", "--notebook", "--out", "nb"]) == 0
        out = capsys.readouterr().out
        if installed:
            assert "open it with: jupyter lab nb/03_tiny.ipynb" in out
        else:
            assert f"{sys.executable} -m pip install jupyterlab" in out and "open it with" not in out


def test_the_real_hint_matches_what_is_installed(tiny, capsys):
    import importlib.util

    assert cli.main(["lesson", "3", "--notebook", "--out", "nb"]) == 0
    out = capsys.readouterr().out
    assert ("open it with: jupyter lab" in out) == (importlib.util.find_spec("jupyterlab") is not None)


def test_working_copies_are_ignored_by_git():
    patterns = (REPO / ".gitignore").read_text().splitlines()
    assert "minigrad-exercises/" in patterns  # the README runs `minigrad exercise 1` at the root
    if (REPO / ".git").exists():
        done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "minigrad-exercises/01_x.py"])
        assert done.returncode == 0


# ---- packaging -----------------------------------------------------------------------------------

def test_pyproject_ships_every_package_and_the_lessons():
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "minigrad").rglob("__init__.py")}
    assert on_disk <= listed, f"add these packages to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    # a plain layout (any other mapping makes every editable install warn); setup.py ships lessons/
    assert setuptools["package-dir"] == {"": "."}
    assert not any(name.startswith("minigrad._lessons") for name in listed)
    assert "build_py_with_lessons" in (REPO / "setup.py").read_text()


def test_checks_import_their_shared_helpers_as_a_package():
    for path in sorted((REPO / "lessons" / "checks").glob("0*.py")):
        text = path.read_text()
        assert "spec_from_file_location" not in text, f"{path.name} loads a file by path"
        if "common." in text:
            assert "from . import _common as common" in text, path.name
