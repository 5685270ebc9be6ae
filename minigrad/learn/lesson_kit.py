"""What every lesson's first code cell needs, in one call: `lesson = setup(N)`.

`setup` caps the BLAS threads (numpy's matrix products otherwise start one thread per core in
each process, and on a shared or 2-core machine those threads fight each other), draws with
matplotlib's headless Agg backend outside a notebook, makes the lesson's figure folder
`$MINIGRAD_OUT/lesson-NN/`, reads `MINIGRAD_FAST=1` (smaller sizes) and, for a long lesson,
says how long it takes. The returned `LessonSetup` saves figures with a one-line caption.

Also here: what more than one lesson measures, so there is one of each: the statistics
(`spearman`), the geometry of a table (`unit_rows`, `pair_cosines`, `mean_cosine`, `cone`,
`principal_axes`: lessons 5, 9 and 10), the warm-up + cosine learning rate (`warmup_cosine`) and
a tied table's gradient split by path (`split_paths`, `classifier_share`: lesson 6), and the
panels lessons 9 and 10 both draw (`draw_cone`, `draw_frequency_axis`, each filling a
matplotlib Axes it is given).

Environment: MINIGRAD_OUT (figure folder, default ./minigrad-out), MINIGRAD_FAST=1 (small
sizes), MINIGRAD_BLAS_THREADS (the cap; default 1, `0` leaves BLAS alone).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from minigrad.engine import Tensor, tensor
from minigrad.learn.figures import in_notebook, show_file
from minigrad.tools.ledger import Ledger

DEFAULT_BLAS_THREADS = 1

_blas_limits: list[Any] = []  # the process-wide cap, kept alive while the process runs


def blas_thread_cap() -> int | None:
    """The BLAS thread cap from MINIGRAD_BLAS_THREADS (default 1); None: do not cap."""
    raw = os.environ.get("MINIGRAD_BLAS_THREADS", str(DEFAULT_BLAS_THREADS)).strip()
    try:
        threads = int(raw)
    except ValueError:
        raise ValueError(f"MINIGRAD_BLAS_THREADS={raw!r}: expected a whole number (0: no cap)") from None
    if threads < 0:
        raise ValueError(f"MINIGRAD_BLAS_THREADS={raw!r}: expected 0 (no cap) or a positive number")
    return threads or None


def cap_blas_threads(threads: int | None = None) -> Any:
    """Limit numpy's BLAS to `threads` (default: blas_thread_cap()) for the rest of the process.

    Returns threadpoolctl's limiter (use it as a context manager to restore the old limits), or
    None when there is no cap or threadpoolctl is missing (then say how to get it).
    """
    threads = blas_thread_cap() if threads is None else threads
    if not threads:
        return None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("note: BLAS threads are not capped "
              "(threadpoolctl is missing: pip install 'minigrad-tying[lessons]')",
              file=sys.stderr)
        return None
    return threadpool_limits(limits=threads, user_api="blas")


@dataclass(frozen=True)
class LessonSetup:
    """What a lesson's code uses: its figure folder, whether it runs small, its number."""

    number: int
    out: Path  # $MINIGRAD_OUT/lesson-NN, created
    fast: bool  # MINIGRAD_FAST=1: smaller sizes (the tests, or `minigrad lesson N --fast`)

    def save(self, fig: Any, name: str, caption: str, **savefig: Any) -> Path:
        """Write a matplotlib figure to out/name, close it, and say what it shows."""
        path = self.out / name
        fig.tight_layout()
        fig.savefig(path, **savefig)
        import matplotlib.pyplot as plt

        plt.close(fig)
        self.announce(path, caption)
        return path

    def announce(self, path: Path | str, caption: str) -> None:
        """Print a figure's path and, on the next line, what it shows (a drawing rendered elsewhere
        is announced the same way)."""
        print(f"figure: {path}\n  shows: {caption}")
        if Path(path).is_file():  # in a notebook kernel, show it under the cell (figures are closed)
            show_file(path)


def setup(number: int, minutes: tuple[float, float] | None = None) -> LessonSetup:
    """The lesson's common first steps (see the module docstring); returns its LessonSetup.

    minutes: (full size, with MINIGRAD_FAST=1) on a quiet 2-core machine, for lessons long
    enough that a learner should know before they start.
    """
    cap = cap_blas_threads()
    if cap is not None:
        _blas_limits.append(cap)
    if not in_notebook():
        import matplotlib

        matplotlib.use("Agg")  # headless: figures go to files (a notebook keeps its inline backend)
    fast = os.environ.get("MINIGRAD_FAST") == "1"
    out = Path(os.environ.get("MINIGRAD_OUT", "minigrad-out")) / f"lesson-{number:02d}"
    out.mkdir(parents=True, exist_ok=True)
    if minutes is not None and not os.environ.get("MINIGRAD_RUNNER"):  # the runner said it already
        print(expected_duration(minutes, fast))
    return LessonSetup(number, out, fast)


def expected_duration(minutes: tuple[float, float], fast: bool) -> str:
    """One sentence: how long this lesson takes here, and why it may take longer right now."""
    full, small = minutes
    size = f"about {_minutes(small)} at the small size" if fast else (
        f"about {_minutes(full)} at full size ({_minutes(small)} with `--fast` or MINIGRAD_FAST=1)")
    busy = ""
    if hasattr(os, "getloadavg"):
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
        if load > cores:
            busy = (f" The machine is busy now (load average {load:.1f} on {cores} cores), so expect "
                    f"up to {load / cores:.1f} times longer.")
    return f"This lesson takes {size} on a quiet 2-core machine.{busy}"


def _minutes(value: float) -> str:
    return f"{value * 60:.0f} s" if value < 1 else f"{value:.1f} minutes"


# ---- statistics shared by the lessons ---------------------------------------------------------

def unit_rows(table: np.ndarray) -> np.ndarray:
    """Each row of a (V, d) table divided by its length: (V, d) rows of length 1."""
    return table / np.linalg.norm(table, axis=1, keepdims=True)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-d array, tied values sharing the mean of the ranks they occupy."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"average_ranks: expected a 1-d array, got shape {x.shape}")
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    _, group, size = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(group, weights=ranks) / size)[group]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation: the Pearson correlation of the average ranks of x and y.

    Ties get the mean of the ranks they span (as in scipy.stats.spearmanr), so the value does
    not depend on the order the data happens to be listed in.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        raise ValueError(f"spearman: x has shape {x.shape} but y has shape {y.shape}")
    return float(np.corrcoef(average_ranks(x), average_ranks(y))[0, 1])


# ---- the geometry of a table (lessons 9 and 10) -------------------------------------------------

def pair_cosines(table: np.ndarray) -> np.ndarray:
    """Cosines of every unordered pair of different rows of a (V, d) table: (V (V - 1) / 2,)."""
    u = unit_rows(table)
    return (u @ u.T)[np.triu_indices(len(u), k=1)]


def mean_cosine(table: Tensor) -> Tensor:
    """Mean cosine over pairs i != j of the rows of a (V, d) Tensor, differentiable:
    (|sum_i u_i|^2 - V) / (V (V - 1)) with u_i = e_i / |e_i|, so no V x V matrix is formed."""
    n = table.shape[0]
    unit = table / ((table * table).sum(axis=1, keepdims=True) ** 0.5)
    total = unit.sum(axis=0)
    return ((total * total).sum() - n) / (n * (n - 1))


def cone(table: np.ndarray, rows: np.ndarray | None = None) -> tuple[float, float]:
    """(mean pairwise cosine, the same after subtracting the mean row) of table[rows] (all rows
    when rows is None), in float64."""
    picked = np.asarray(table if rows is None else table[rows], dtype=np.float64)
    return (mean_cosine(tensor(picked)).item(),
            mean_cosine(tensor(picked - picked.mean(axis=0))).item())


def principal_axes(table: np.ndarray, log_count: np.ndarray, rows: np.ndarray | None = None,
                   k: int = 5) -> tuple[np.ndarray, np.ndarray, float]:
    """How the principal components of a table follow frequency.

    table (V, d); rows: which rows to use (all when None); log_count: (n,) one per used row.
    Centres the rows, takes the principal components (right singular vectors) and each row's
    score on them. Returns (PC1 scores (n,), signed so they rise with frequency; |Spearman| of
    the scores on PC1..PCk with log_count, (k,); the share of the variance on PC1).
    """
    picked = np.asarray(table if rows is None else table[rows], dtype=np.float64)
    if picked.shape[:1] != np.shape(log_count):
        raise ValueError(f"principal_axes: {picked.shape[0]} rows but log_count has shape "
                         f"{np.shape(log_count)}; give one log-count per row used")
    left, singular, _ = np.linalg.svd(picked - picked.mean(axis=0), full_matrices=False)
    scores = left * singular  # each row's coordinate along each component
    rho = np.array([spearman(scores[:, j], log_count) for j in range(min(k, len(singular)))])
    return scores[:, 0] * np.sign(rho[0]), np.abs(rho), float(singular[0] ** 2 / np.sum(singular**2))


def warmup_cosine(step: int, total: int, peak: float) -> float:
    """The learning rate at `step` (0-based) of `total`: linear warm-up over the first 5% of the
    steps, then a cosine decay to peak / 10 at the end (how language models are usually trained)."""
    from minigrad.optim import lr_scheduler  # the one schedule, in the optimizer layer

    return lr_scheduler.warmup_cosine(step, total, peak)


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


# ---- a tied table's gradient by path (lesson 6) -------------------------------------------------

def split_paths(led: Ledger, table: Tensor) -> tuple[np.ndarray, Any]:
    """A tied table's gradient as the ledger recorded it: (the classifier's dense (V, d) float64
    array, the lookup's coalesced RowSparse). Works for any model whose ledger names one
    `classifier ...` and one `lookup ...` path into `table` (TinyLM and TinyGPT alike)."""
    by_path = led.path_grads(table)
    classifier = [g for name, g in by_path.items() if name.startswith("classifier")]
    lookup = [g for name, g in by_path.items() if name.startswith("lookup")]
    if len(by_path) != 2 or len(classifier) != 1 or len(lookup) != 1:  # nothing else may reach it
        raise ValueError(f"split_paths: expected exactly one classifier and one lookup path into the "
                         f"table, the ledger has {sorted(by_path)}")
    return np.asarray(classifier[0], dtype=np.float64), lookup[0].coalesce()


def classifier_share(sent: dict[str, np.ndarray], rows: np.ndarray) -> float:
    """classifier / (classifier + lookup) of the gradient traffic (summed row norms) to `rows`;
    sent: {"classifier": (V,), "lookup": (V,)} norms summed over steps."""
    c, k = sent["classifier"][rows].sum(), sent["lookup"][rows].sum()
    return float(c / (c + k))
