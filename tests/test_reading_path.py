"""One engine: the code that runs by default is the code a learner reads.

The reading path (function.py, graph.py, the Tensor core, the vocabulary and arithmetic ops and
the plain kernels they call) stays short enough to read in one sitting, the walk stays the
algorithm, every gradient that reaches a leaf goes through AccumulateGrad.apply, speed lives only
below the ops (kernels/, reached through the kernel interface), and no class re-implements an op.
"""

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import minigrad as mg
from minigrad.engine import kernels

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minigrad"
ENGINE = PACKAGE / "engine"
READING_PATH = [ENGINE / "function.py", ENGINE / "graph.py", ENGINE / "tensor.py",
                ENGINE / "ops" / "vocabulary.py", ENGINE / "ops" / "arithmetic.py"]
PLAIN_KERNELS = ENGINE / "kernels" / "plain.py"
MAX_READING_LINES = 1300
MAX_COMPLEXITY = 12


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


def functions(path: Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]


def find_function(path: Path, name: str) -> ast.FunctionDef:
    return next(f for f in functions(path) if f.name == name)


def kernels_called(path: Path) -> set[str]:
    """The names `kernels.<name>` that a module's code calls."""
    return {node.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "kernels"}


def test_the_complexity_counter_counts_decisions():
    tree = ast.parse("def f(x):\n    if x and x > 1:\n        return [y for y in x if y]\n"
                     "    while x:\n        x -= 1\n    return 0\n")
    assert complexity(tree.body[0]) == 1 + 1 + 1 + 2 + 1  # if, and, for + if in comprehension, while


def test_the_reading_path_is_short_enough_to_read_in_one_sitting():
    lines = {path.relative_to(ENGINE).as_posix(): len(path.read_text().splitlines()) for path in READING_PATH}
    called = set().union(*(kernels_called(p) for p in READING_PATH))
    assert called >= {"segment_sums", "linear", "cross_entropy_rows", "buffer"}  # the analysis sees them
    lines["plain kernels called: " + ", ".join(sorted(called))] = sum(
        f.end_lineno - f.lineno + 1 for f in functions(PLAIN_KERNELS) if f.name in called)
    assert sum(lines.values()) <= MAX_READING_LINES, lines


def test_the_backward_walk_is_the_algorithm():
    walk = find_function(ENGINE / "graph.py", "backward")
    assert walk.end_lineno - walk.lineno + 1 <= 25
    assert complexity(walk) <= 5


def test_no_function_in_the_engine_is_too_complex_to_read():
    too_complex = [f"{path.relative_to(ROOT)}:{f.lineno} {f.name} ({complexity(f)})"
                   for path in sorted(ENGINE.rglob("*.py")) for f in functions(path)
                   if complexity(f) > MAX_COMPLEXITY]
    assert too_complex == []


def test_the_fast_kernels_are_reached_only_through_the_kernel_interface():
    interface = ENGINE / "kernels" / "__init__.py"
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "lessons").rglob("*.py")):
        if path == interface or path.parent == ENGINE / "kernels":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.startswith(("minigrad.engine.kernels.", "minigrad.kernels.")) or
                   n.endswith((".fast", ".plain")) for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_an_op_calls_the_chosen_kernel_and_the_choice_is_made_in_one_place():
    source = (ENGINE / "kernels" / "__init__.py").read_text()
    assert source.count("globals().update") == 1  # choose(): the one place
    for name in kernels.INTERFACE:
        assert getattr(kernels, name) in (getattr(kernels.fast, name), getattr(kernels.plain, name))


def all_minigrad_modules() -> None:
    for info in pkgutil.walk_packages(mg.__path__, "minigrad."):
        if ".lab.static" not in info.name and not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def every_subclass(cls: type) -> list[type]:
    found, stack = [], [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def test_no_class_in_minigrad_re_implements_an_op():
    all_minigrad_modules()
    functions_ = [c for c in every_subclass(mg.Function) if c.__module__.startswith("minigrad.")]
    outside_ops = [f"{c.__module__}.{c.__qualname__}" for c in functions_
                   if not c.__module__.startswith("minigrad.engine.ops.")]
    assert outside_ops == []
    subclassing_an_op = [c.__qualname__ for c in functions_ if c.__bases__ != (mg.Function,)]
    assert subclassing_an_op == []


def trace(program):
    """(files of minigrad that ran, [(qualified name, the frame's locals) of each call]) for program()."""
    files, calls = set(), []

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(str(PACKAGE)):
            files.add(Path(frame.f_code.co_filename).relative_to(PACKAGE).as_posix())
            calls.append((frame.f_code.co_qualname, dict(frame.f_locals)))

    sys.setprofile(profiler)
    try:
        program()
    finally:
        sys.setprofile(None)
    return files, calls


def sinks_reached(calls):
    return [local["self"].variable for name, local in calls if name == "AccumulateGrad.apply"]


def test_the_default_path_of_x_times_w_summed_is_the_plain_one():
    def program():
        x = mg.tensor(np.ones((3, 4), np.float32), requires_grad=True)
        w = mg.tensor(np.ones((3, 4), np.float32), requires_grad=True)
        (x * w).sum().backward()
        return x, w

    default_files, default_calls = trace(program)
    with kernels.plain_only():
        plain_files, _ = trace(program)
    assert default_files == plain_files
    assert default_files <= {"engine/tensor.py", "engine/tensor_maths.py", "engine/function.py",
                             "engine/graph.py", "engine/grad_mode.py", "engine/arguments.py",
                             "engine/ops/arithmetic.py", "engine/ops/reductions.py", "engine/arrays.py"}
    assert len(sinks_reached(default_calls)) == 2


def test_with_the_default_settings_every_leaf_of_a_tied_model_is_reached_through_its_sink():
    from minigrad.models import TinyLM

    model = TinyLM(vocab_size=40, embedding_dim=8, hidden=16, context=3, tied=True, rng=0)
    ids = np.random.default_rng(1).integers(0, 40, (32, 3))
    targets = np.random.default_rng(2).integers(0, 40, 32)
    loss = model.loss(ids, targets)
    files, calls = trace(loss.backward)
    reached = sinks_reached(calls)
    params = list(model.parameters())
    assert all(p.grad is not None for p in params)
    assert sorted(map(id, reached)) == sorted(map(id, params))  # each leaf once, the tied table too
    walk = {name for name, _ in calls if name.startswith(("backward", "run_node", "add_gradient"))}
    assert walk == {"backward", "run_node", "add_gradient"}
    ran_fast = "engine/kernels/fast.py" in files
    assert ran_fast == kernels.fast_enabled()  # below the ops only: the kernels an op names
    assert not any(f.startswith(("engine/seam", "engine/tensor_inplace")) for f in files)


def test_importing_minigrad_changes_nothing_process_wide():
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
