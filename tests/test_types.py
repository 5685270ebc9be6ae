"""Types that check: `make test` runs mypy (configured in pyproject.toml) before the tests, all of
minigrad in mypy's default mode and the engine in strict mode. These tests keep that configuration
honest; mypy itself runs in `make test`.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minigrad"


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_engine_is_checked_with_every_flag_of_strict_mode():
    main = pytest.importorskip("mypy.main")
    _, _, strict_flags = main.define_options()  # [(option, the value --strict gives it)]
    config = pyproject()["tool"]["mypy"]
    engine = next(o for o in config["overrides"] if "minigrad.engine.*" in o["module"])
    settings = {**config, **engine}  # a flag that mypy takes only for a whole run is global
    missing = [f"{name} = {value}" for name, value in strict_flags if settings.get(name) != value]
    assert missing == [], "add these to the engine's [[tool.mypy.overrides]] in pyproject.toml"
    assert set(engine["module"]) == {"minigrad.engine", "minigrad.engine.*"}


def test_all_of_minigrad_is_checked_and_nothing_in_it_is_let_off():
    config = pyproject()["tool"]["mypy"]
    assert config["files"] == ["minigrad"]
    assert config.get("follow_imports", "normal") == "normal"  # "silent" or "skip" would hide errors
    let_off = ("ignore_errors", "ignore_missing_imports", "follow_imports", "disable_error_code")
    for override in config["overrides"]:
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        ours = [m for m in modules if m == "minigrad" or m.startswith("minigrad.")]
        if ours:
            assert set(ours) == {"minigrad.engine", "minigrad.engine.*"}, override  # strict, not looser
            assert not set(override) & set(let_off), override
        else:  # a library without types: only its missing types may be let off
            assert set(override) == {"module", "ignore_missing_imports"}, override


def test_make_test_runs_the_type_checker_before_the_tests():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("test", "test-quick"):
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
        commands = [line.strip() for line in recipe.splitlines()]
        assert "$(BIN)/mypy" in commands, target
        pytest_at = next(i for i, c in enumerate(commands) if "pytest" in c)
        assert commands.index("$(BIN)/mypy") < pytest_at, target


def test_the_type_checker_is_installed_by_the_dev_extra():
    project = pyproject()["project"]
    assert any(dep.startswith("mypy") for dep in project["optional-dependencies"]["dev"])


def test_no_name_stands_in_for_a_class_as_any():
    """`Tensor = Any` would make every use of the name unchecked: import the class for the type
    checker instead (`if TYPE_CHECKING:`)."""
    stand_ins = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if value is not None and ast.unparse(value) in ("Any", "typing.Any"):
                stand_ins.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert stand_ins == []


def test_every_type_ignore_says_why():
    """An ignore names the error it silences and is followed by a comment giving the reason."""
    unexplained = [f"{path.relative_to(ROOT)}:{number}"
                   for path in sorted(PACKAGE.rglob("*.py"))
                   for number, line in enumerate(path.read_text().splitlines(), 1)
                   if "type: ignore" in line
                   and not re.search(r"type: ignore\[[\w, -]+\]\s+#\s*\S", line)]
    assert unexplained == []


def test_the_engine_annotates_numpy_arrays_as_array():
    """`np.ndarray` bare is an error under numpy 2.2's stubs (what Python 3.10 installs) in strict
    mode, though numpy 2.4's accept it: the engine writes `Array` (engine/arrays.py)."""
    bare = []
    for path in sorted((PACKAGE / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            annotations = [node.annotation] if isinstance(node, (ast.arg, ast.AnnAssign)) else []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                annotations.append(node.returns)
            written = [ast.unparse(a) for a in annotations if a is not None]
            if any(re.search(r"\bnp\.ndarray\b(?!\[)", text) for text in written):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert bare == []
