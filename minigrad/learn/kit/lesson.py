"""What every lesson's first code cell needs, in one call: `lesson = setup(N)`.

`setup` caps the BLAS threads (numpy's matrix products otherwise start one thread per core in
each process, and on a shared or 2-core machine those threads fight each other), draws with
matplotlib's headless Agg backend outside a notebook, makes the lesson's figure folder
`$MINIGRAD_OUT/lesson-NN/`, reads `MINIGRAD_SMALL=1` (the small sizes) and, for a long lesson,
says how long it takes. The returned `LessonSetup` saves figures with a one-line caption and
picks the lesson's sizes for the full or the small mode in one place (`lesson.sizes(...)`).

Environment: MINIGRAD_OUT (figure folder, default ./minigrad-out), MINIGRAD_SMALL=1 (the small
sizes), MINIGRAD_BLAS_THREADS (the cap; default 1, `0` leaves BLAS alone).

"fast" names minigrad's fast kernels only. The small mode's former spellings still work until the
next release and say they are deprecated: MINIGRAD_FAST=1, `lesson.fast`, `lesson.sizes(fast=...)`,
`LessonSetup(fast=...)` (and `minigrad lesson N --fast`, `run_lesson(fast=...)`).
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from minigrad.engine import kernels
from minigrad.learn.extras import install_hint
from minigrad.learn.kit.figures import in_notebook, show_file

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


class ThreadCap:
    """numpy's BLAS and the fast kernels' row blocks held to `threads` threads, until restored.

    One thread for each when lessons run two at a time on two cores: a second BLAS or row-block
    thread would only wait for a core, and its hand-offs cost CPU time.
    """

    def __init__(self, blas_limits: Any, threads: int):
        self.blas_limits = blas_limits  # threadpoolctl's limiter, or None
        self.kernel_threads = kernels.get_threads()
        kernels.set_threads(threads)

    def restore_original_limits(self) -> None:
        if self.blas_limits is not None:
            self.blas_limits.restore_original_limits()
        kernels.set_threads(self.kernel_threads)

    def __enter__(self) -> ThreadCap:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore_original_limits()


def cap_blas_threads(threads: int | None = None, extra: str = "lessons") -> ThreadCap | None:
    """Limit numpy's BLAS and the fast kernels' row blocks to `threads` (default: blas_thread_cap())
    for the rest of the process.

    Returns a ThreadCap (use it as a context manager, or call restore_original_limits(), to put
    the old limits back), or None when there is no cap. Without threadpoolctl only the row blocks
    are capped, and a note says how to get it (with minigrad's `extra`: "lessons" for a lesson,
    "lab" for the lab).
    """
    threads = blas_thread_cap() if threads is None else threads
    if not threads:
        return None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print(f"note: BLAS threads are not capped (threadpoolctl is missing; it comes with the `{extra}` "
              f"extra: {install_hint(extra)})", file=sys.stderr)
        return ThreadCap(None, threads)
    return ThreadCap(threadpool_limits(limits=threads, user_api="blas"), threads)


def small_mode(announce: bool = True) -> bool:
    """Whether lessons run at their small sizes: MINIGRAD_SMALL=1, or its deprecated spelling
    MINIGRAD_FAST=1 (then, with `announce`, a note on stderr says so)."""
    if os.environ.get("MINIGRAD_SMALL") == "1":
        return True
    if os.environ.get("MINIGRAD_FAST") == "1":
        if announce:
            print("note: MINIGRAD_FAST=1 is deprecated and will be removed in the next release; use "
                  "MINIGRAD_SMALL=1 for the small lesson sizes (\"fast\" names the fast kernels)",
                  file=sys.stderr)
        return True
    return False


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new} (\"fast\" "
                  "names minigrad's fast kernels, not the lesson sizes)", DeprecationWarning, stacklevel=3)


@dataclass(frozen=True, init=False)
class LessonSetup:
    """What a lesson's code uses: its figure folder, whether it runs small, its number."""

    number: int
    out: Path  # $MINIGRAD_OUT/lesson-NN, created
    small: bool  # MINIGRAD_SMALL=1: the small sizes (the tests, or `minigrad lesson N --small`)

    def __init__(self, number: int, out: Path, small: bool = False, *, fast: bool | None = None):
        if fast is not None:
            _deprecated("LessonSetup(fast=...)", "LessonSetup(small=...)")
            small = fast
        object.__setattr__(self, "number", number)
        object.__setattr__(self, "out", out)
        object.__setattr__(self, "small", bool(small))

    @property
    def fast(self) -> bool:
        """Deprecated spelling of `small`."""
        _deprecated("lesson.fast", "lesson.small")
        return self.small

    def save(self, fig: Any, name: str, caption: str, **savefig: Any) -> Path:
        """Write a matplotlib figure to out/name, close it, and say what it shows."""
        path = self.out / name
        fig.tight_layout()
        fig.savefig(path, **savefig)
        import matplotlib.pyplot as plt

        plt.close(fig)
        self.announce(path, caption)
        return path

    def sizes(self, full: dict[str, Any], small: dict[str, Any] | None = None, *,
              fast: dict[str, Any] | None = None) -> SimpleNamespace:
        """The lesson's sizes, chosen in one place: `full` at full size, `small` with
        MINIGRAD_SMALL=1, as attributes (`S = lesson.sizes(full=dict(steps=4000), small=dict(steps=300))`,
        then `S.steps`). Both must name the same settings, so that neither mode silently lacks one.
        (`fast=`: the deprecated spelling of `small=`.)"""
        if fast is not None:
            if small is not None:
                raise TypeError("sizes: give the small sizes once, as small= (fast= is its old spelling)")
            _deprecated("lesson.sizes(fast=...)", "lesson.sizes(small=...)")
            small = fast
        if small is None:
            raise TypeError("sizes: missing the small sizes, small=dict(...) (the settings of full, smaller)")
        if set(full) != set(small):
            only_full, only_small = sorted(set(full) - set(small)), sorted(set(small) - set(full))
            raise ValueError(f"sizes: full and small must name the same settings; only in full: {only_full}, "
                             f"only in small: {only_small}")
        return SimpleNamespace(**(small if self.small else full))

    def verdict_tested(self, what: str) -> bool:
        """True at full size. In the small mode, print that this verdict is not tested (the short run
        does not reach the regime the claim is about) and return False, so that a lesson writes
        `if lesson.verdict_tested("..."): assert ...` and the small run says what it skipped."""
        if self.small:
            print(f"small mode: not testing that {what} (the full-size run does)")
        return not self.small

    def announce(self, path: Path | str, caption: str) -> None:
        """Print a figure's path and, on the next line, what it shows (a drawing rendered elsewhere
        is announced the same way)."""
        print(f"figure: {path}\n  shows: {caption}")
        if Path(path).is_file():  # in a notebook kernel, show it under the cell (figures are closed)
            show_file(path)


def setup(number: int, minutes: tuple[float, float] | None = None) -> LessonSetup:
    """The lesson's common first steps (see the module docstring); returns its LessonSetup.

    minutes: (full size, with MINIGRAD_SMALL=1) on a quiet 2-core machine, for lessons long
    enough that a learner should know before they start.
    """
    cap = cap_blas_threads()
    if cap is not None:
        _blas_limits.append(cap)
    if not in_notebook():
        import matplotlib

        matplotlib.use("Agg")  # headless: figures go to files (a notebook keeps its inline backend)
    small = small_mode()
    out = Path(os.environ.get("MINIGRAD_OUT", "minigrad-out")) / f"lesson-{number:02d}"
    out.mkdir(parents=True, exist_ok=True)
    if minutes is not None and not os.environ.get("MINIGRAD_RUNNER"):  # the runner said it already
        print(expected_duration(minutes, small))
    return LessonSetup(number, out, small)


def expected_duration(minutes: tuple[float, float], small: bool = False, *, fast: bool | None = None) -> str:
    """One sentence: how long this lesson takes here (at the small sizes with `small`), and why it
    may take longer right now. (`fast=`: the deprecated spelling of `small=`.)"""
    if fast is not None:
        _deprecated("expected_duration(fast=...)", "expected_duration(small=...)")
        small = fast
    at_full, at_small = minutes
    size = f"about {_minutes(at_small)} at the small size" if small else (
        f"about {_minutes(at_full)} at full size ({_minutes(at_small)} with `--small` or MINIGRAD_SMALL=1)")
    busy = ""
    if hasattr(os, "getloadavg"):
        load, cores = os.getloadavg()[0], os.cpu_count() or 1
        if load > cores:
            busy = (f" The machine is busy now (load average {load:.1f} on {cores} cores), so expect "
                    f"up to {load / cores:.1f} times longer.")
    return f"This lesson takes {size} on a quiet 2-core machine.{busy}"


def _minutes(value: float) -> str:
    return f"{value * 60:.0f} s" if value < 1 else f"{value:.1f} minutes"
