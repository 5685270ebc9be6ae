"""The lessons and their runner: every lesson found follows the contract, runs headless, and
has an exercise whose solution passes and whose stub is "not attempted"; plus the runner's
own behaviour (cells, pauses, failures, checks, notebooks, the command line, packaging) on
small lessons written into a temporary folder."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minigrad import cli
from minigrad.learn import lessons as runner

REPO = Path(__file__).resolve().parents[1]
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
    environment.update(MINIGRAD_FAST="1", PYTHONPATH=str(REPO), **env)
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
OUT = Path(os.environ.get("MINIGRAD_OUT", "minigrad-out")) / "lesson-{n:02d}"
OUT.mkdir(parents=True, exist_ok=True)
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
    path.write_text(text)
    (tiny / "checks" / "03_tiny.py").unlink()
    problems = runner.contract_problems(runner.get_lesson(3))
    assert "the title says lesson 5 but the file is lesson 3" in problems
    assert "no prediction cell (a markdown cell ending with a question)" in problems
    assert "missing lessons/checks/03_tiny.py" in problems


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
    assert run.error == f"a check failed in the code cell at line 19 of {tiny / '04_tiny.py'}"
    assert "AssertionError: the check in the lesson failed" in shown.getvalue()
    assert f'File "{tiny / "04_tiny.py"}", line 21' in shown.getvalue()  # the assert's own line
    assert "twice: 42 from 04_tiny.py" in capsys.readouterr().out  # __file__ is the lesson's


def test_pauses_after_markdown_that_leads_to_code_and_q_quits(tiny, tmp_path):
    shown = io.StringIO()
    answers = io.StringIO("\n\n")
    run = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=answers, stdout=shown)
    assert run.ok
    assert shown.getvalue().count(runner.STEP_PROMPT) == 1
    assert shown.getvalue().count(runner.PREDICTION_PROMPT) == 1  # after "What is twice the value?"
    stopped = runner.run_lesson(runner.get_lesson(3), tmp_path, pause=True, stdin=io.StringIO("q\n"),
                                stdout=io.StringIO())
    assert (stopped.ok, stopped.stopped_by_learner, stopped.error) == (True, True, "")  # not a failure


@pytest.mark.parametrize(("tty", "no_pause", "pauses"), [(True, False, True), (True, True, False),
                                                         (False, False, False)])
def test_cli_pauses_only_on_a_terminal_without_no_pause(tiny, monkeypatch, tty, no_pause, pauses):
    seen = {}

    def fake_run(lesson, out_dir, pause):
        seen["pause"] = pause
        return runner.LessonRun(lesson, True, 0.0, [])

    monkeypatch.setattr(runner, "run_lesson", fake_run)
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"isatty": lambda self: tty})())
    assert cli.main(["lesson", "3"] + (["--no-pause"] if no_pause else [])) == 0
    assert seen["pause"] is pauses


def test_cli_lesson_reports_time_and_files(tiny, capsys):
    assert cli.main(["lesson", "3", "--no-pause", "--out", "figs"]) == 0
    out = capsys.readouterr().out
    assert "lesson 3 finished in" in out and "files written:\n  figs/lesson-03/figure.svg" in out
    assert cli.main(["lesson", "4", "--no-pause"]) == 1
    out = capsys.readouterr().out
    assert "lesson 4 stopped after" in out and ": a check failed in the code cell at line 19 of" in out


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
    assert "minigrad check: check: --file missing.py does not exist" in capsys.readouterr().err


def test_cli_lessons_lists_titles_summaries_and_status(tiny, capsys):
    assert cli.main(["lessons"]) == 0
    out = capsys.readouterr().out
    assert " 3. Tiny  [not attempted]\n    A tiny lesson that exists for the tests." in out
    assert " 4. Tiny  [not attempted]" in out


def test_checks_can_import_shared_helpers_from_their_package(tiny):
    (tiny / "checks" / "_common.py").write_text("EXPECTED = 42\n")
    (tiny / "checks" / "03_tiny.py").write_text(
        "from ._common import EXPECTED\n\ndef check(answers):\n    assert answers.double(21) == EXPECTED\n")
    lesson = runner.get_lesson(3)
    assert runner.check_answers(lesson, lesson.solution_path).status == runner.PASS


# ---- notebooks -----------------------------------------------------------------------------------

def test_notebook_is_nbformat_4_with_every_cell(tiny, tmp_path, capsys):
    assert cli.main(["lesson", "3", "--notebook", "--out", "nb"]) == 0
    path = tmp_path / "nb" / "03_tiny.ipynb"
    assert "wrote nb/03_tiny.ipynb" in capsys.readouterr().out
    notebook = json.loads(path.read_text())
    assert (notebook["nbformat"], notebook["nbformat_minor"]) == (4, 5)
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert kinds == ["markdown", "code", "code", "markdown", "code"]  # title, setup, then the lesson
    assert "".join(notebook["cells"][0]["source"]).startswith("# Lesson 3: Tiny")
    setup = "".join(notebook["cells"][1]["source"])
    assert "__file__ = notebook_setup(3)" in setup  # found by number where the notebook runs
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
    assert "twice: 42" in capsys.readouterr().out


# ---- packaging -----------------------------------------------------------------------------------

def test_pyproject_ships_every_package_and_the_lessons():
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "minigrad").rglob("__init__.py")}
    assert on_disk <= listed, f"add these packages to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    assert setuptools["package-dir"]["minigrad._lessons"] == "lessons"
    shipped = {name.replace("minigrad._lessons", "lessons").replace(".", "/") for name in listed
               if name.startswith("minigrad._lessons")}
    assert shipped == {"lessons", "lessons/exercises", "lessons/solutions", "lessons/checks"}
