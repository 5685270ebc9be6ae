"""Lesson figures: written to a file, and shown inline when a notebook kernel runs the lesson.

Lessons draw with the headless Agg backend so that they run anywhere (a terminal, CI, a
machine without a display), which means a notebook never sees a figure unless it is shown
explicitly. `save_figure` writes the file and, in a notebook, displays that very file; in a
terminal or a script it only writes. Either way the figure is closed, so memory stays flat
across a lesson's many figures.

    save_figure(fig, OUT / "loss.png", dpi=120)   # instead of fig.savefig(...); plt.close(fig)
    show_file(OUT / "graph.svg")                   # an image written some other way (a drawing)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# Files already displayed in this kernel, so the generated notebooks' "show new images" hook
# (minigrad.learn.course.notebook.notebook_setup) does not show them twice.
SHOWN: set[Path] = set()


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (not a terminal IPython, not a script).

    The shell of a kernel has a `kernel`; asking for it, rather than for the class name
    ZMQInteractiveShell, also recognises kernels whose shell subclasses it (Google Colab's).
    The one test for the whole package: the kit and the notebook hooks import this one.
    """
    ipython = sys.modules.get("IPython")  # a kernel has imported it; a script need not pay for it
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def show_file(path: str | Path) -> Path:
    """Display an image file (.svg, .png, .jpg, .gif) inline when in a notebook; return its path."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"show_file: {path} does not exist (write the figure first)")
    if in_notebook():
        from IPython.display import SVG, Image, display

        display(SVG(filename=str(path)) if path.suffix == ".svg" else Image(filename=str(path)))
        SHOWN.add(path.resolve())
    return path


def save_figure(fig: Any, path: str | Path, **savefig: Any) -> Path:
    """`fig.savefig(path, **savefig)`, then show the file in a notebook, then close the figure."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, **savefig)
    plt.close(fig)
    return show_file(path)

