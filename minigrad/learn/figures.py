"""Lesson figures: written to a file, and shown inline when a notebook kernel runs the lesson.

Lessons draw with the headless Agg backend so that they run anywhere (a terminal, CI, a
machine without a display), which means a notebook never sees a figure unless it is shown
explicitly. `save_figure` writes the file and, in a notebook, displays that very file; in a
terminal or a script it only writes. Either way the figure is closed, so memory stays flat
across a lesson's many figures.

    save_figure(fig, OUT / "loss.png", dpi=120)   # instead of fig.savefig(...); plt.close(fig)
    show_file(OUT / "graph.svg")                   # an image written some other way (a drawing)

Also the panels more than one lesson draws (lessons 9 and 10): `draw_cone` and
`draw_frequency_axis` fill a matplotlib Axes they are given.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

# Files already displayed in this kernel, so the generated notebooks' "show new images" hook
# (minigrad.learn.lessons.notebook_setup) does not show them twice.
SHOWN: set[Path] = set()


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (not a terminal IPython, not a script)."""
    ipython = sys.modules.get("IPython")  # a kernel has imported it; a script need not pay for it
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def show_file(path: str | Path) -> Path:
    """Display an image file (.svg, .png, .jpg, .gif) inline when in a notebook; return its path."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"show_file: {path} does not exist (write the figure first)")
    if in_notebook():
        from IPython.display import SVG, Image, display  # type: ignore[import-not-found]

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


def draw_cone(ax: Any, start: np.ndarray, end: np.ndarray, title: str) -> None:
    """Histograms of the pairwise cosines of a table's rows: at init (start), trained (end), and
    trained after subtracting the mean row. start, end: (n, d), the same rows of one table."""
    from minigrad.learn.lesson_kit import pair_cosines  # here: lesson_kit imports this module

    rows = np.asarray(end, dtype=np.float64)
    style = dict(bins=100, range=(-1, 1), histtype="step")
    ax.hist(pair_cosines(np.asarray(start, dtype=np.float64)), color="grey", label="at init", **style)
    ax.hist(pair_cosines(rows), label="trained", **style)
    ax.hist(pair_cosines(rows - rows.mean(axis=0)), ls="--", label="trained, centred", **style)
    ax.set(title=title, xlabel="cosine between two rows")
    ax.title.set_fontsize(9)


def draw_frequency_axis(ax: Any, counts: np.ndarray, pc1: np.ndarray, title: str) -> None:
    """Each row's score on its table's first principal component against its count (log axis)."""
    ax.scatter(counts, pc1, s=3, alpha=0.4)
    ax.set_xscale("log")
    ax.set(title=title, xlabel="count in training text")
    ax.title.set_fontsize(9)
