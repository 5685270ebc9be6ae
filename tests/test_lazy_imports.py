"""`import minigrad` stays light: graphviz, safetensors, matplotlib and wasmtime load only
when drawing, saving or plotting is first used."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("graphviz", "safetensors", "matplotlib", "wasmtime")


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_minigrad_loads_none_of_the_heavy_packages():
    out = run(f"""
        import minigrad, sys
        print([m for m in {HEAVY!r} if m in sys.modules])
    """)
    assert out == "[]"


def test_import_minigrad_works_when_the_heavy_packages_cannot_be_imported():
    # None in sys.modules makes `import graphviz` raise ImportError: nothing may try it
    out = run(f"""
        import sys
        for m in {HEAVY!r}:
            sys.modules[m] = None
        import minigrad as mg
        import minigrad.nn, minigrad.optim, minigrad.models
        x = mg.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        print(x.grad.tolist())
    """)
    assert out == "[2.0, 4.0]"


def test_draw_save_and_load_still_work_and_load_their_package_then(tmp_path):
    out = run(f"""
        import sys
        import numpy as np
        import minigrad as mg
        x = mg.tensor([1.0, 2.0], requires_grad=True, name="x")
        graph = mg.draw((x * x).sum())
        print("graphviz" in sys.modules, type(graph).__name__, "->" in graph.source)
        mg.save({{"w": np.arange(3.0)}}, {str(tmp_path / "w.safetensors")!r})
        print("safetensors" in sys.modules, mg.load({str(tmp_path / "w.safetensors")!r})["w"].tolist())
        print(mg.tools.viz.render.__name__, "draw" in dir(mg))
    """)
    assert out.splitlines() == ["True Drawing True", "True [0.0, 1.0, 2.0]", "render True"]


def test_an_unknown_attribute_is_still_an_attribute_error():
    import minigrad as mg

    with pytest.raises(AttributeError, match=r"module 'minigrad' has no attribute 'drawz'"):
        mg.drawz  # noqa: B018
    with pytest.raises(AttributeError, match=r"module 'minigrad.tools' has no attribute 'nothing'"):
        mg.tools.nothing  # noqa: B018


def test_models_and_tools_are_attributes_after_import_minigrad_as_mg():
    # an exercise says `mg.models.TinyLM(...)`: it must work without `import minigrad.models`
    out = run("""
        import sys
        import minigrad as mg
        print('minigrad.models' in sys.modules, mg.models.TinyLM.__name__)
    """)
    assert out == "False TinyLM"


def test_the_names_lessons_use_are_public():
    import minigrad as mg

    assert mg.whose("Embedding") == "minigrad"
    x = mg.tensor([1.0], requires_grad=True)
    y = x * x + x
    # x is read by the product twice and by the sum once
    assert sorted(mg.count_dependencies(y.grad_fn).values()) == [0, 1, 3]
