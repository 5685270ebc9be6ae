"""The `minigrad` command itself: --version, output cut short by a closed pipe, and `minigrad check`
against hostile learner files (sys.exit, os._exit, endless loops, crashes)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import minigrad
from minigrad import cli

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_packages_and_written_once(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"minigrad {minigrad.__version__}\n"
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]  # read from minigrad.__version__
    distribution = importlib.metadata.packages_distributions().get("minigrad", [])
    if distribution:  # installed (editable or not): the metadata agrees
        assert importlib.metadata.version(distribution[0]) == minigrad.__version__


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`minigrad lessons | head`: the reader goes away; no BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to the pipe now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "minigrad.cli", "lessons"], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=300)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 1


# ---- a bad argument: one line and status 2, never a usage block or a traceback ---------------------

BAD_ARGUMENTS = [
    (["lab", "--port", "99999"], "minigrad lab: argument --port: 99999 is not a port; expected 0"),
    (["lab", "--port", "-1"], "minigrad lab: argument --port: -1 is not a port"),
    (["lab", "--port", "http"], "minigrad lab: argument --port: expected a port number from 0 to 65535"),
    (["lab", "--colour"], "minigrad: unrecognized arguments: --colour"),
    (["lesson", "x"], "minigrad lesson: argument number: invalid int value: 'x'"),
    (["lesson"], "minigrad lesson: the following arguments are required: number"),
    (["lesson", "99"], "minigrad lesson: lesson 99 not found"),
    (["lesson", "1", "--out", "/proc/none"], "minigrad lesson: --out /proc/none: cannot make or use this"),
    (["tour", "--out", "/proc/none"], "minigrad tour: --out /proc/none: cannot make or use this folder"),
    (["check", "1", "--timeout", "nan"], "minigrad check: argument --timeout: expected a positive number"),
    (["check", "1", "--timeout", "0"], "minigrad check: argument --timeout: expected a positive number"),
    (["check", "1", "--file", "no-such-file.py"], "minigrad check: --file no-such-file.py does not exist"),
    (["exercise", "0"], "minigrad exercise: lesson 0 not found"),
    (["teach"], "minigrad: argument command: invalid choice: 'teach'"),
    ([], "minigrad: the following arguments are required: command"),
]


@pytest.mark.parametrize("argv, message", BAD_ARGUMENTS, ids=[" ".join(a) or "-" for a, _ in BAD_ARGUMENTS])
def test_a_bad_argument_gets_one_line_and_status_2(argv, message, tmp_path):
    done = subprocess.run([sys.executable, "-m", "minigrad.cli", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(message) and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr and not done.stdout


def test_a_bad_environment_variable_for_the_lab_is_one_line_too(tmp_path):
    done = subprocess.run([sys.executable, "-m", "minigrad.cli", "lab", "--port", "0", "--no-browser"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MINIGRAD_BLAS_THREADS": "many"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "minigrad lab: MINIGRAD_BLAS_THREADS='many': expected a whole number (0: no cap)\n"


# ---- `minigrad check N`: only the check decides the verdict ---------------------------------------

CHECK = '''\
def check(answers):
    got = answers.double(21)
    assert got == 42, f"double(21) gave {got}, expected 42"
'''


@pytest.fixture
def lesson_three(tmp_path, monkeypatch):
    """A lessons folder holding lesson 3, whose exercise asks for double(x); the current folder
    is tmp_path, where the learner's files are written."""
    before = set(sys.modules)
    root = tmp_path / "lessons"
    for folder in ("", "exercises", "solutions", "checks"):
        (root / folder).mkdir()
        (root / folder / "__init__.py").write_text("")
    (root / "03_double.py").write_text("# %% [markdown]\n# # Lesson 3: Double\n#\n# Twice.\n")
    (root / "exercises" / "03_double.py").write_text("def double(x):\n    raise NotImplementedError\n")
    (root / "solutions" / "03_double.py").write_text("def double(x):\n    return 2 * x\n")
    (root / "checks" / "03_double.py").write_text(CHECK)
    monkeypatch.setenv("MINIGRAD_LESSONS", str(root))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _check(folder: Path, body: str, capsys, *flags: str) -> tuple[int, str]:
    (folder / "mine.py").write_text(body)
    status = cli.main(["check", "3", "--file", "mine.py", *flags])
    return status, capsys.readouterr().out


HOSTILE = {
    "sys.exit(0) at the top": ("import sys\nsys.exit(0)\n", "as sys.exit(0) does (in mine.py, line 2)"),
    "sys.exit() at the top": ("import sys\nsys.exit()\n", "as sys.exit() does (in mine.py, line 2)"),
    "SystemExit in the checked function": ("def double(x):\n    raise SystemExit\n",
                                           "as sys.exit() does (in mine.py, line 2)"),
    "sys.exit(3), the not-attempted status": ("import sys\ndef double(x):\n    sys.exit(3)\n",
                                              "as sys.exit(3) does (in mine.py, line 3)"),
    "sys.exit('bye')": ("import sys\n\nsys.exit('bye')\n", "as sys.exit('bye') does (in mine.py, line 3)"),
    "os._exit(0) at the top": ("import os\nos._exit(0)\n", "ended Python before the check could finish "
                                                            "(exit status 0): os._exit"),
    "os._exit(0) in the checked function": ("import os\ndef double(x):\n    os._exit(0)\n",
                                            "(exit status 0): os._exit"),
    "KeyboardInterrupt in the checked function": ("def double(x):\n    raise KeyboardInterrupt\n",
                                                  "your code raised KeyboardInterrupt (in mine.py, line 2)"),
    "a crash of the interpreter": ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
                                   "(signal SIGSEGV)"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_learners_file_cannot_end_the_check_without_a_fail_verdict(lesson_three, capsys, name):
    body, diagnosis = HOSTILE[name]
    status, out = _check(lesson_three, body, capsys)
    assert status == 1, out
    assert "lesson 3 exercise (mine.py): FAIL\n" in out and diagnosis in out


@pytest.mark.parametrize("where", ["at the top", "in the checked function"])
def test_an_endless_loop_ends_in_a_fail_within_the_time_limit(lesson_three, capsys, where):
    loop = "while True:\n    pass\n"
    body = loop if where == "at the top" else "def double(x):\n" + textwrap.indent(loop, "    ")
    start = time.perf_counter()
    status, out = _check(lesson_three, body, capsys, "--timeout", "1.5")
    assert time.perf_counter() - start < 20
    assert status == 1
    assert "FAIL\n  your code did not finish within 1.5 s, so the check was stopped" in out


def test_the_verdict_follows_what_the_learners_code_printed_and_an_endless_print_is_cut(lesson_three,
                                                                                         capsys):
    status, out = _check(lesson_three, "print('working on it')\ndef double(x):\n    return 2 * x\n", capsys)
    assert status == 0
    assert out.index("  > working on it") < out.index("lesson 3 exercise (mine.py): PASS")
    status, out = _check(lesson_three, "while True:\n    print('x' * 99)\n", capsys, "--timeout", "1")
    assert status == 1 and "did not finish within 1 s" in out
    assert len(out) < 40_000 and "more bytes of output not shown" in out


def test_a_crash_names_the_learners_line_and_traceback_shows_it_whole(lesson_three, capsys):
    body = "def helper(x):\n    return x / 0\n\ndef double(x):\n    return helper(x)\n"
    status, out = _check(lesson_three, body, capsys)
    assert status == 1
    assert "your code raised ZeroDivisionError: division by zero (in mine.py, line 2)" in out
    assert "Traceback" not in out and "`minigrad check 3 --traceback` shows the whole traceback" in out
    status, out = _check(lesson_three, body, capsys, "--traceback")
    assert 'mine.py", line 5, in double' in out and 'mine.py", line 2, in helper' in out
    assert out.rstrip().endswith("(in mine.py, line 2)")  # the verdict comes last


def test_a_check_that_cannot_be_loaded_is_not_blamed_on_the_learner(lesson_three, capsys):
    (lesson_three / "lessons" / "checks" / "03_double.py").write_text("def check(answers) oops\n")
    status, out = _check(lesson_three, "def double(x):\n    return 2 * x\n", capsys)
    assert status == 1
    assert "FAIL\n  the check of lesson 3 could not run: SyntaxError" in out


def test_a_file_in_the_learners_folder_does_not_shadow_what_the_check_imports(lesson_three, capsys):
    (lesson_three / "numpy.py").write_text("raise RuntimeError('the learner has a numpy.py')\n")
    status, out = _check(lesson_three, "def double(x):\n    return 2 * x\n", capsys)
    assert status == 0, out


def test_a_lessons_folder_of_ones_own_may_bring_a_check_with_probes(lesson_three, capsys):
    """A probe of a check loaded as a file runs in the learner's process too (under the name the
    check has there)."""
    (lesson_three / "lessons" / "checks" / "03_double.py").write_text(
        "from minigrad.learn.course.learner import probe, run\n\n"
        "@probe\n"
        "def doubled_twice(answers, x):\n"
        "    return answers.double(answers.double(x))\n\n"
        "def check(answers):\n"
        "    got = run(answers, doubled_twice, 5)\n"
        "    assert got == 20, f'double(double(5)) gave {got}, expected 20'\n")
    status, out = _check(lesson_three, "def double(x):\n    return 2 * x\n", capsys)
    assert status == 0, out
    status, out = _check(lesson_three, "def double(x):\n    return x + 2\n", capsys)
    assert status == 1 and "double(double(5)) gave 9, expected 20" in out
