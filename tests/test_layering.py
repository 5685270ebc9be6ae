"""The layering, read from the source: every `import` and `from ... import` of every module
under minigrad/ (at module level and inside functions), checked against the architecture.

    engine <- nn, optim <- tools <- models <- learn <- cli <- __main__

The engine imports nothing else of minigrad; nn and optim import only the engine (optim does
not need nn: it steps any leaf Tensor); tools import the engine and nn; models the engine and
nn; learn anything below it; only __main__ imports the CLI. Outside the engine, engine names
come from the package (`from minigrad.engine import Tensor`), not from its files, which are
being rearranged. No import circle, module-level or function-local, but the engine's one by
design: Tensor's methods call the ops, whose Function.apply makes Tensors. Imports under
`if TYPE_CHECKING:` (for type hints only, never run) do not count.

Inside learn, by kind: the pieces beside the others (data, corpus, bpe, train, tour, extras)
import none of them; the lesson kit (learn.kit) imports only those; the course (learn.course:
catalog, runner, notebook, grading, pieces, checks) the kit too; the lab (learn.lab) the course
too (the checks' diagnosis).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "minigrad"

# what each layer may import (its own layer included); "minigrad" is the package root
ALLOWED = {
    "engine": {"engine"},
    "nn": {"engine", "nn"},
    "optim": {"engine", "optim"},
    "tools": {"engine", "nn", "tools"},
    "models": {"engine", "nn", "models"},
    "learn": {"engine", "nn", "optim", "tools", "models", "learn"},
    # the root re-exports: `minigrad.check` loads the lesson runner on its first call, so the
    # learning layer must never import the root (that would be a circle)
    "minigrad": {"engine", "nn", "optim", "tools", "models", "learn"},
    "cli": {"engine", "nn", "optim", "tools", "models", "learn", "minigrad", "cli"},
    "__main__": {"cli"},
}


# what each part of learn may import from learn (its own part included)
LEARN_ALLOWED = {
    "beside": {"beside"},
    "kit": {"beside", "kit"},
    "course": {"beside", "kit", "course"},
    "lab": {"beside", "kit", "course", "lab"},
}


def module_files() -> dict[str, Path]:
    """{dotted module name: file} for every module under minigrad/."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = module_files()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "minigrad"


def run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` except those under `if TYPE_CHECKING:` (type hints only, never run)."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            type_only = isinstance(child, ast.If) and ast.unparse(child.test) in (
                "TYPE_CHECKING", "typing.TYPE_CHECKING")
            if type_only:
                stack.extend(child.orelse)
            else:
                stack.append(child)
    return found


def learn_part(module: str) -> str:
    """Which part of learn a module of learn belongs to: kit, course, lab, or beside them."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in LEARN_ALLOWED else "beside"


def imports(module: str) -> list[tuple[str, str, int]]:
    """[(the minigrad module imported, the statement's `from` part or "", line)]: a `from P
    import N` names the submodule P.N when there is one, else P itself."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in run_time_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.append((target if target in MODULES else base, base, node.lineno))
    return [(target, base, line) for target, base, line in found
            if target == "minigrad" or target.startswith("minigrad.")]


def where(module: str, line: int) -> str:
    return f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}"


def test_the_analysis_sees_the_modules_and_their_imports():
    # guards the test itself: it must find the layers and read both kinds of import
    assert {"minigrad.engine", "minigrad.nn.module", "minigrad.tools.io", "minigrad.cli"} <= set(MODULES)
    assert any(target == "minigrad.cli" for target, _, _ in imports("minigrad.__main__"))
    local = [t for t, _, _ in imports("minigrad.cli") if t.startswith("minigrad.learn")]
    assert local, "the CLI's imports of the learning layer were not found"


def test_every_import_points_down_the_layers():
    wrong = [f"{where(m, line)}: {layer(m)} imports {target} ({layer(target)})"
             for m in MODULES for target, _, line in imports(m)
             if layer(target) not in ALLOWED[layer(m)]]
    assert wrong == [], "imports against the layering:\n" + "\n".join(wrong)


def test_inside_learn_the_kit_the_course_and_the_lab_import_down_only():
    learn = [m for m in MODULES if layer(m) == "learn"]
    assert {learn_part(m) for m in learn} == set(LEARN_ALLOWED), "a part of learn has no modules"
    wrong = [f"{where(m, line)}: learn.{learn_part(m)} imports {target} (learn.{learn_part(target)})"
             for m in learn for target, _, line in imports(m)
             if layer(target) == "learn" and learn_part(target) not in LEARN_ALLOWED[learn_part(m)]]
    assert wrong == [], "imports against learn's parts:\n" + "\n".join(wrong)


def test_outside_the_engine_engine_names_come_from_the_package_not_its_files():
    wrong = []
    for m in MODULES:
        if layer(m) == "engine":
            continue
        for target, base, line in imports(m):
            named = base or target  # `from X import ...` or `import X`
            if named.startswith("minigrad.engine."):
                wrong.append(f"{where(m, line)}: imports from {named}")
    assert wrong == [], "use `from minigrad.engine import ...`:\n" + "\n".join(wrong)


def import_circles(modules: set[str]) -> list[list[str]]:
    """Every strongly connected group of more than one module (or a module importing itself)."""
    graph = {m: sorted({t for t, _, _ in imports(m) if t in MODULES}) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(m: str) -> None:  # Tarjan's algorithm; the graph is small, so recursion is fine
        index[m] = low[m] = len(index)
        stack.append(m)
        for t in graph[m]:
            if t not in index:
                visit(t)
                low[m] = min(low[m], low[t])
            elif t in stack:
                low[m] = min(low[m], index[t])
        if low[m] == index[m]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == m:
                    break
            if len(group) > 1 or m in graph[m]:
                circles.append(sorted(group))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return [c for c in circles if set(c) & modules]


def test_the_circle_finder_finds_a_circle():
    def fake_imports(m):
        return {"minigrad.nn.module": [("minigrad.nn.layers", "", 1)],
                "minigrad.nn.layers": [("minigrad.nn.module", "", 1)]}.get(m, [])

    real = globals()["imports"]
    globals()["imports"] = fake_imports
    try:
        assert import_circles(set(MODULES)) == [["minigrad.nn.layers", "minigrad.nn.module"]]
    finally:
        globals()["imports"] = real


def test_no_import_circle_outside_the_engine():
    outside = {m for m in MODULES if layer(m) != "engine"}
    assert import_circles(outside) == []


def test_type_only_imports_are_not_run_time_imports():
    tree = ast.parse("from typing import TYPE_CHECKING\nimport a\nif TYPE_CHECKING:\n    import b\n"
                     "else:\n    import c\n")
    names = sorted(alias.name for node in run_time_nodes(tree) if isinstance(node, ast.Import)
                   for alias in node.names)
    assert names == ["a", "c"]


# Tensor's methods call the ops; the ops subclass Function, whose apply makes Tensors
TENSOR_AND_ITS_OPS = {f"minigrad.engine.{name}" for name in (
    "function", "tensor", "tensor_maths", "tensor_layout", "tensor_inplace", "ops")}


def test_the_engines_one_import_circle_is_tensor_and_its_ops():
    inside = {m for m in MODULES if layer(m) == "engine"}
    circles = import_circles(inside)
    ops_modules = {m for m in MODULES if m.startswith("minigrad.engine.ops.")}
    assert [set(c) for c in circles] == [TENSOR_AND_ITS_OPS | ops_modules]
    # closed by one import, the last statement of function.py (once Function exists)
    source = MODULES["minigrad.engine.function"].read_text()
    closing = {(target, line) for target, _, line in imports("minigrad.engine.function")
               if target in TENSOR_AND_ITS_OPS | ops_modules}
    last_statement = ast.parse(source).body[-1]
    assert closing == {("minigrad.engine.tensor", last_statement.lineno)}
