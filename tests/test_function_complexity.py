"""No function of minigrad outside the engine is above McCabe complexity 12: a function that
does more is split into named helpers that each read as one step. (The engine's functions are
held to the same bound by the engine's own checks.)"""

import ast
from pathlib import Path

from test_reading_path import complexity  # one counter for the whole suite

PACKAGE = Path(__file__).resolve().parents[1] / "minigrad"
MAX_COMPLEXITY = 12


def functions_above(limit: int, folder: Path, skip: str = "engine") -> list[str]:
    """'path:line name (complexity)' for every function (a nested one counts in its parent too)
    above `limit`, in the files under `folder` outside its `skip` subfolder."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if skip in path.relative_to(folder).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and complexity(node) > limit:
                where = path.relative_to(folder.parent)
                found.append(f"{where}:{node.lineno} {node.name} ({complexity(node)})")
    return found


def test_no_function_outside_the_engine_is_above_complexity_12():
    assert functions_above(MAX_COMPLEXITY, PACKAGE) == []


def test_the_scan_finds_a_complex_function_and_skips_the_engine(tmp_path):
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(12))
    (tmp_path / "pkg" / "engine").mkdir(parents=True)
    (tmp_path / "pkg" / "big.py").write_text(f"def big(x):\n{branches}    return -1\n")
    (tmp_path / "pkg" / "engine" / "big.py").write_text(f"def big(x):\n{branches}    return -1\n")
    assert functions_above(12, tmp_path / "pkg") == ["pkg/big.py:1 big (13)"]
