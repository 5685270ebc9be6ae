"""The panels more than one lesson draws, each filling a matplotlib Axes it is given
(lessons 11 and 12): the cone of a table's rows and its frequency axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.learn.kit.geometry import pair_cosines


def draw_cone(ax: Any, start: np.ndarray, end: np.ndarray, title: str) -> None:
    """Histograms of the pairwise cosines of a table's rows: at init (start), trained (end), and
    trained after subtracting the mean row. start, end: (n, d), the same rows of one table."""
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
