"""minigrad never imports the lessons folder, and the lessons use only minigrad's public API.

What `minigrad check`, the lab and the catalog need from a lesson is inside the package (the
checks: minigrad.learn.course.checks) or read as data (the lesson scripts and the exercise
stubs, read as text and run as files). Read from the source, and watched at run time: the
commands run in processes where importing `lessons` (or the installed copy, `minigrad._lessons`)
fails, child processes included.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "minigrad"
LESSONS = REPO / "lessons"
LESSONS_PACKAGE = re.compile(r"^(lessons|minigrad\._lessons)(\.|$)")
LESSONS_SUBMODULE = re.compile(r"^(lessons|minigrad\._lessons)\.\w")  # as a string: "lessons" alone is a word


def imported_names(path: Path) -> list[tuple[str, int]]:
    """(the module an import statement names, line) for every import in a file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found += [(node.module or "", node.lineno)]
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
    return found


# ---- minigrad never imports lessons/ -------------------------------------------------------------

def test_no_module_of_minigrad_imports_or_names_the_lessons_package():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(REPO)
        wrong += [f"{where}:{line}: imports {name}" for name, line in imported_names(path)
                  if LESSONS_PACKAGE.match(name)]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # import_module("lessons.x")
            if isinstance(node, ast.Constant) and LESSONS_SUBMODULE.match(str(node.value)):
                wrong.append(f"{where}:{node.lineno}: names the module {node.value!r}")
    assert wrong == [], "minigrad must not import the lessons folder:\n" + "\n".join(wrong)


def test_the_source_scan_sees_an_import_of_lessons(tmp_path):
    # guards the scan above: both spellings are found, a relative import is not mistaken for one
    probe = tmp_path / "probe.py"
    probe.write_text("import lessons.checks\nfrom lessons import solutions\nfrom . import lessons\n")
    assert [name for name, _ in imported_names(probe) if LESSONS_PACKAGE.match(name)] == [
        "lessons.checks", "lessons", "lessons.solutions"]


# A process in which `import lessons` (and the installed copy) fails, and so does every process it
# starts: site imports sitecustomize from PYTHONPATH at startup.
REFUSE_LESSONS = '''\
import sys


class RefuseLessons:
    """Importing the lessons folder as a package fails in this process."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "lessons" or name.startswith(("lessons.", "minigrad._lessons")):
            raise ImportError(f"minigrad imported {name} at run time")
        return None


sys.meta_path.insert(0, RefuseLessons)
'''


@pytest.fixture
def no_lessons_package(tmp_path):
    """(run, env): run(*args) runs `python -m minigrad *args` (or `python -c CODE` with code=...)
    from an empty folder, in processes that cannot import the lessons folder."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(REFUSE_LESSONS)
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("MINIGRAD_LESSONS", "MINIGRAD_EXERCISES", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), str(REPO)])
    env["MINIGRAD_OUT"] = str(tmp_path / "out")

    def run(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
        command = [sys.executable, *(("-c", code) if code is not None else ("-m", "minigrad", *args))]
        return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)

    return run


def test_the_guard_refuses_the_lessons_package_in_the_process_and_its_children(no_lessons_package):
    out = no_lessons_package(code=textwrap.dedent("""\
        import subprocess, sys
        try:
            import lessons
        except ImportError as error:
            print(error)
        child = "import lessons.checks"
        print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stderr.strip()
              .splitlines()[-1])
        """))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["minigrad imported lessons at run time",
                                       "ImportError: minigrad imported lessons at run time"]


def test_check_marks_with_the_packaged_check_without_importing_lessons(no_lessons_package):
    solution = LESSONS / "solutions" / "04_sparse_row_gradients.py"
    passed = no_lessons_package("check", "4", "--file", str(solution))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASS, every check passed" in passed.stdout
    stub = no_lessons_package("check", "6")  # the stub: marked too, in a child process
    assert stub.returncode == 3, stub.stdout + stub.stderr
    assert "NOT ATTEMPTED" in stub.stdout


def test_the_lesson_list_marks_every_exercise_without_importing_lessons(no_lessons_package):
    listing = no_lessons_package("lessons")
    assert listing.returncode == 0, listing.stderr
    statuses = re.findall(r"^\s*(\d+)\. .*\[(.*)\]$", listing.stdout, re.MULTILINE)
    assert len(statuses) == 15 and {status for _, status in statuses} == {"not attempted"}, listing.stdout


def test_the_labs_answer_page_diagnoses_without_importing_lessons(no_lessons_package):
    page = no_lessons_package(code=textwrap.dedent("""\
        from minigrad.learn.lab import answer
        print(answer.check({"mode": "tied", "row": "cat", "answer": "0 0 0 0"})["verdict"])
        """))
    assert page.returncode == 0, page.stderr
    assert page.stdout.strip() == "fail"


# ---- lessons use the public API ----------------------------------------------------------------

ENGINE_MODULES = {path.stem for path in (PACKAGE / "engine").iterdir()  # its files and subpackages
                  if path.suffix == ".py" or (path / "__init__.py").is_file()} - {"__init__"}


def engine_submodule_imports(path: Path) -> list[str]:
    """Every minigrad.engine.<submodule> a file imports: `import minigrad.engine.x`,
    `from minigrad.engine.x import ...` and `from minigrad.engine import x` alike."""
    found = []
    for name, line in imported_names(path):
        parts = name.split(".")
        if parts[:2] == ["minigrad", "engine"] and len(parts) > 2 and parts[2] in ENGINE_MODULES:
            found.append((".".join(parts[:3]), line))
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    return sorted({f"{shown}:{line}: {name}" for name, line in found})


def test_lessons_exercises_and_solutions_import_no_engine_submodule():
    wrong = [problem for path in sorted(LESSONS.rglob("*.py")) for problem in engine_submodule_imports(path)]
    assert wrong == [], "use the public API (minigrad, minigrad.engine's exports):\n" + "\n".join(wrong)


def test_the_lesson_scan_sees_each_spelling_of_an_engine_submodule(tmp_path):
    assert {"graph", "seam", "ops"} <= ENGINE_MODULES
    probe = tmp_path / "probe.py"
    probe.write_text("import minigrad.engine.graph\nfrom minigrad.engine.seam import whose\n"
                     "from minigrad.engine import ops, Tensor\nfrom minigrad.engine import RowSparse\n")
    assert [line.split(": ")[1] for line in engine_submodule_imports(probe)] == [
        "minigrad.engine.graph", "minigrad.engine.seam", "minigrad.engine.ops"]
