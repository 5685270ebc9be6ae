"""The reading path: the engine a learner reads is the plain one.

function.py, graph.py, the Tensor core (tensor.py) and the vocabulary and arithmetic ops are the
files a learner reads to follow `(x * w).sum().backward()`. They stay short, the walk stays the
algorithm, and none of them reaches into the fast kernels: fast twins plug in at the seam.
"""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "minigrad" / "engine"
READING_PATH = [ENGINE / "function.py", ENGINE / "graph.py", ENGINE / "tensor.py",
                ENGINE / "ops" / "vocabulary.py", ENGINE / "ops" / "arithmetic.py"]
PLAIN_OPS = sorted((ENGINE / "ops").glob("*.py"))
MAX_READING_LINES = 1300


def complexity(function: ast.FunctionDef) -> int:
    """McCabe's cyclomatic complexity: 1 + the decision points (as radon and mccabe count them)."""
    decisions = 0
    for node in ast.walk(function):
        if isinstance(node, (ast.If, ast.For, ast.While, ast.IfExp, ast.ExceptHandler, ast.With,
                             ast.AsyncFor, ast.Assert)):
            decisions += not isinstance(node, (ast.With, ast.Assert))
        elif isinstance(node, ast.BoolOp):
            decisions += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            decisions += 1 + len(node.ifs)
    return 1 + decisions


def find_function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def test_the_complexity_counter_counts_decisions():
    tree = ast.parse("def f(x):\n    if x and x > 1:\n        return [y for y in x if y]\n"
                     "    while x:\n        x -= 1\n    return 0\n")
    assert complexity(tree.body[0]) == 1 + 1 + 1 + 2 + 1  # if, and, for + if in comprehension, while


def test_the_reading_path_is_short_enough_to_read_in_one_sitting():
    lines = {path.relative_to(ENGINE).as_posix(): len(path.read_text().splitlines()) for path in READING_PATH}
    assert sum(lines.values()) <= MAX_READING_LINES, lines


def test_the_backward_walk_is_the_algorithm():
    walk = find_function(ENGINE / "graph.py", "backward")
    assert walk.end_lineno - walk.lineno + 1 <= 25
    assert complexity(walk) <= 5


def test_the_reading_path_and_the_plain_ops_never_reach_into_the_fast_kernels():
    offenders = []
    for path in READING_PATH + PLAIN_OPS + [ENGINE / "sparse.py", ENGINE / "inplace.py",
                                            ENGINE / "spellings.py"]:
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Name):
                names = [node.id]
            if any(n in ("fast", "fast_ops") or n.endswith((".fast", ".fast_ops")) for n in names):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_importing_minigrad_changes_nothing_process_wide():
    import subprocess
    import sys

    probe = ("import ctypes, unittest.mock as m\n"
             "calls = []\n"
             "real = ctypes.CDLL\n"
             "class Spy:\n"
             "    def __init__(self, *a, **k): self._lib = real(*a, **k)\n"
             "    def __getattr__(self, name):\n"
             "        calls.append(name)\n"
             "        return getattr(self._lib, name)\n"
             "ctypes.CDLL = Spy\n"
             "import minigrad\n"
             "print('mallopt' in calls)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
