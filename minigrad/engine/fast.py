"""Every fast path of the engine, apart from the reading path, behind one switch.

The core (graph.py, ops.py, sparse.py) shows the plain form of each computation; where a faster
form exists, the core asks this module for it through one named hook, and uses the plain form
when the hook says no. Each fast form gives bit-identical results (tests run the same programs
both ways and compare the bytes); what each buys is measured in benchmarks/ (docs/performance.md).

    unshared(g)                      the walk may keep a gradient nobody else holds, uncopied
    scalar(value, dtype)             a Python number as a 0-d array, made once per value and dtype
    cross_entropy_exp(logits, y)     exp(z - max z) and its row sums in a buffer recycled from
                                     step to step, in cache-sized row blocks on two threads
    reusable(ctx, array)             a backward may write its result into its own saved buffer
    scale_rows(e, factors, out)      e * factors in cache-sized row blocks on two threads
    elementwise_in_row_blocks(a, f)  an elementwise update (Adam's) run on row blocks of `a`
    run_sums(rows, starts)           segmented sums of a sorted lookup gradient, vectorised

The switch: set the environment variable MINIGRAD_FAST_PATHS=0 before importing minigrad, or
run code inside `with minigrad.engine.fast.disabled():`. It is process-wide (not per thread):
results are identical either way, so a thread that turns it off changes only the speed of others.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

_on = os.environ.get("MINIGRAD_FAST_PATHS", "1") != "0"


def enabled() -> bool:
    """Whether the fast paths are on (the default; MINIGRAD_FAST_PATHS=0 turns them off)."""
    return _on


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the plain form of every computation: the same results, more slowly."""
    global _on
    previous, _on = _on, False
    try:
        yield
    finally:
        _on = previous


# ---- the one reference-count probe -------------------------------------------------------------

_HAS_REFERENCE_COUNTS = hasattr(sys, "getrefcount")  # False on PyPy: nothing counts as unshared


def reference_count(value: Any) -> int:
    """How many references `value` has, as `sys.getrefcount` counts them ("many" without counts).

    The count includes the references of the calls on the way here, and interpreters differ in
    which references they borrow, so each user compares it with a count measured once, at import,
    for a value held exactly as it holds one (the `_calibrate_*` functions below).
    """
    return sys.getrefcount(value) if _HAS_REFERENCE_COUNTS else sys.maxsize


# ---- gradients kept without a copy -------------------------------------------------------------

def unshared(gradient: Any) -> bool:
    """Whether nothing but the backward walk holds `gradient`, one result of a node's backward.

    The walk may then keep the array as the buffer it sums into and store it as a leaf's `.grad`
    without copying it (PyTorch's AccumulateGrad steals a gradient whose use count is 1 the same
    way). Buys: one copy of the gradient per parameter per step, a (V, d) array for a vocabulary
    table; with the other fast paths, half the time of a tied training step at V = 8192
    (benchmarks/fast_paths.py). A view, a read-only array, or one that a recorder (the ledger),
    the backward itself or a second edge still holds is never unshared.
    Called as the walk calls it: the array bound to one local name and held by one list.
    """
    return (_on and type(gradient) is np.ndarray and gradient.base is None
            and gradient.flags.writeable and reference_count(gradient) <= _UNSHARED_GRADIENT)


def _count_as_unshared_sees_it(gradient: Any) -> int:
    return reference_count(gradient)  # one call deep, as inside `unshared`


def _calibrate_unshared() -> int:
    grads = [np.empty(1)]  # held as the walk holds a backward's result: its list and a local name
    gradient = grads[0]
    return _count_as_unshared_sees_it(gradient)


_UNSHARED_GRADIENT = _calibrate_unshared()


# ---- per-op overhead: Python numbers as 0-d arrays ------------------------------------------------

SCALAR_CACHE_SIZE = 256  # distinct (value, dtype) pairs kept; a loop uses a handful
_scalars: dict[tuple[Any, np.dtype], np.ndarray] = {}


def scalar(value: int | float | bool, dtype: np.dtype) -> np.ndarray | None:
    """`np.asarray(value, dtype)`, made once and handed out again (read-only), or None.

    `x * 1.0001` lifts the number to x's dtype (as PyTorch keeps float32 float32), and on a small
    tensor `np.asarray` of a Python number costs most of what the arithmetic costs. Buys about
    1,000 of the 55,000 instructions an op of the per-op chain costs, 2% (benchmarks/overhead.py
    --marks under callgrind; docs/performance.md). Equal numbers give equal arrays (1, 1.0 and
    True are one key, and all three convert to the same value), except zeros, whose sign an
    equal key would lose (0.0 == -0.0), and NaN, never equal to itself: those are left to the
    plain form. Read-only, so no op can change a constant another op shares.
    """
    if not _on:
        return None
    key = (value, dtype)
    array = _scalars.get(key)
    if array is None and value and value == value:
        if len(_scalars) >= SCALAR_CACHE_SIZE:
            _scalars.clear()
        array = np.asarray(value, dtype=dtype)
        array.flags.writeable = False
        _scalars[key] = array
    return array


# ---- the cross-entropy's buffer ----------------------------------------------------------------

class Recycled:
    """An array kept from one call to the next, and handed out again once nothing holds it.

    Why: a fresh large array costs more than the arithmetic on it. The kernel maps and zeroes new
    pages on first touch (logits of shape (1024, 50257) in float32 are 200 MiB to zero), far more
    slowly on a virtual machine whose host has taken freed memory back. A training loop asks for
    an array of the same shape every step, and last step's is free again: reuse it. "Free" is
    known from the reference count: a saved graph, a `.grad`, a view, anything that still holds
    the old array makes this hand out a new one instead. The cost: one array stays allocated
    between calls (`clear()` frees it).
    """

    def __init__(self) -> None:
        self._array: np.ndarray | None = None
        self._lock = threading.Lock()  # two threads must not both see the array as free

    def get(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised array of `shape` and `dtype` that nothing else references."""
        with self._lock:
            if not self._reusable(shape, dtype):
                self._array = np.empty(shape, dtype)
            return self._array

    def clear(self) -> None:
        with self._lock:
            self._array = None

    def _reusable(self, shape: tuple[int, ...], dtype: Any) -> bool:
        # no local name for the array here: it would count as one more reference
        return (self._array is not None and self._array.shape == shape
                and self._array.dtype == dtype and self._count() <= _FREE_IN_RECYCLED)

    def _count(self) -> int:
        return reference_count(self._array)


def _calibrate_recycled() -> int:
    probe = Recycled()
    probe._array = np.empty(1)
    return probe._count()


_FREE_IN_RECYCLED = _calibrate_recycled()
cross_entropy_buffer = Recycled()


# ---- elementwise work over large (rows, C) arrays: cache-sized row blocks on two threads -------

ROW_BLOCK_BYTES = 1024 * 1024  # a block of input and one of output stay in cache between passes
PARALLEL_MIN_BYTES = 4 * 1024 * 1024  # below this, starting a second thread costs more than it buys
_THREADS = min(2, os.cpu_count() or 1)
_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _helper_thread() -> ThreadPoolExecutor:
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=_THREADS - 1, thread_name_prefix="minigrad-rows")
        return _helper


def _forget_helper_after_fork() -> None:
    # a forked child has none of its parent's threads: a pool copied from the parent would
    # queue work for a thread that does not exist, so the child makes its own when it needs one
    global _helper, _helper_lock
    _helper, _helper_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper_after_fork)


def in_row_blocks(n_rows: int, row_bytes: int, work: Callable[[int, int], None]) -> None:
    """Run `work(start, stop)` over consecutive row blocks of ROW_BLOCK_BYTES, covering every row.

    Why: numpy's ufuncs run on one core and release the GIL, so the two halves of the rows run
    on two threads at once (this thread and one helper); and each pass of `work` (max, subtract,
    exp, sum) reads a block that is still in cache from the pass before, instead of streaming the
    whole array from memory once per pass. `work` must only touch its own rows: then every row
    gets exactly the operations, in the same order, that it gets from one call over all rows,
    and the bits are the same.
    """
    block = max(1, ROW_BLOCK_BYTES // max(row_bytes, 1))

    def rows(lo: int, hi: int) -> None:
        for start in range(lo, hi, block):
            work(start, min(start + block, hi))

    if _THREADS < 2 or n_rows * row_bytes < PARALLEL_MIN_BYTES or n_rows < 2:
        rows(0, n_rows)
        return
    middle = n_rows // 2
    other_half = _helper_thread().submit(rows, middle, n_rows)
    try:
        rows(0, middle)
    finally:
        other_half.result()


def elementwise_in_row_blocks(array: np.ndarray, work: Callable[[int, int], None]) -> bool:
    """Run `work(start, stop)` on row blocks of `array` (see `in_row_blocks`); False to decline.

    For an update whose every step is elementwise over rows of `array` (and of arrays of its
    shape), such as Adam's ten passes over a (V, d) table and its two moments: each element
    gets the same operations either way, so the bits are the same. Declines small arrays (one
    call over all rows is cheaper) and when the fast paths are off.
    """
    if not _on or array.ndim == 0 or array.nbytes < PARALLEL_MIN_BYTES:
        return False
    in_row_blocks(array.shape[0], array[:1].nbytes, work)
    return True


def _as_rows(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1, array.shape[-1])  # a view: callers pass C-contiguous arrays


def cross_entropy_exp(logits: np.ndarray,
                      y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(e, sum(e), z_y - max z) with e = exp(z - max z), as ops.CrossEntropy computes them, or None.

    The fast form writes the shift and the exp into one recycled (..., C) buffer, in place: one
    (N, V) array per step instead of two new ones (the shifted logits and their exp), and works
    through it in row blocks on two threads (`in_row_blocks`). With `reusable` and `scale_rows`,
    the cross-entropy's forward and backward at (256, 50257) take half the time of the plain
    form on one thread (benchmarks/fast_paths.py).
    """
    if not _on or logits.ndim == 0 or not logits.flags.c_contiguous or logits.shape[-1] == 0:
        return None
    e = cross_entropy_buffer.get(logits.shape, logits.dtype)
    total = np.empty((*logits.shape[:-1], 1), logits.dtype)
    shifted_target = np.empty((*logits.shape[:-1], 1), logits.dtype)
    z, e_rows, y_rows = _as_rows(logits), _as_rows(e), _as_rows(y)
    total_rows, target_rows = _as_rows(total), _as_rows(shifted_target)

    def work(lo: int, hi: int) -> None:
        block = e_rows[lo:hi]
        np.subtract(z[lo:hi], z[lo:hi].max(axis=-1, keepdims=True), out=block)
        target_rows[lo:hi] = np.take_along_axis(block, y_rows[lo:hi], axis=-1)
        np.exp(block, out=block)
        np.sum(block, axis=-1, keepdims=True, out=total_rows[lo:hi])

    in_row_blocks(z.shape[0], z.shape[1] * z.itemsize, work)
    return e, total, shifted_target


def scale_rows(e: np.ndarray, factors: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
    """e * factors (factors: (..., 1), one per row) into `out` or a new array, or None.

    The cross-entropy's backward, G scale e / s, in row blocks on two threads (`in_row_blocks`).
    """
    if not _on or not e.flags.c_contiguous or e.ndim == 0 or factors.shape != (*e.shape[:-1], 1):
        return None
    result = np.empty_like(e) if out is None else out
    e_rows, f_rows, r_rows = _as_rows(e), _as_rows(factors), _as_rows(result)

    def work(lo: int, hi: int) -> None:
        np.multiply(e_rows[lo:hi], f_rows[lo:hi], out=r_rows[lo:hi])

    in_row_blocks(e_rows.shape[0], e_rows.shape[1] * e.itemsize, work)
    return result


def reusable(ctx: Any, array: np.ndarray) -> np.ndarray | None:
    """`array` itself, as the `out=` of a backward's result, when that is safe; else None.

    Safe when this is the node's last backward (no retain_graph: its saved arrays are freed right
    after) and `array` is a buffer only this op holds. Buys one (N, V) array in the
    cross-entropy's backward: dz is written over e.
    """
    return array if _on and ctx.last_backward else None


# ---- coalescing a lookup's gradient ------------------------------------------------------------

SHORT_RUN = 16  # runs up to this long are summed by vectorised steps, longer ones one by one


def run_sums(rows: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """Each run `rows[starts[k]:starts[k+1]]` summed in order into one row, or None.

    The plain form (sparse.RowSparse.coalesce) adds the rows of all runs with one `np.add.at`.
    This one: most ids in a batch occur a few times, so step j adds the j-th row of every run at
    least j+1 long, one vectorised add per step, at most SHORT_RUN - 1 steps; the few very
    frequent ids (long runs) are each summed as one contiguous block. Buys 3.5x to 10x over
    `np.add.at` on (2.5 10^4 to 10^5, 128) float32 rows of Zipf ids (benchmarks/fast_paths.py,
    benchmarks/coalesce.py).
    Rows of one element are left to the plain form: numpy sums a long 1-D block pairwise, in a
    different order, so the bits would differ.
    """
    if not _on or rows[0].size < 2:
        return None
    lengths = np.diff(np.r_[starts, len(rows)])
    sums = rows[starts]  # a copy holding each run's first row
    for k in np.flatnonzero(lengths > SHORT_RUN):
        sums[k] = rows[starts[k]:starts[k] + lengths[k]].sum(axis=0)  # row by row along axis 0
    runs = np.flatnonzero((lengths > 1) & (lengths <= SHORT_RUN))
    for j in range(1, SHORT_RUN):
        runs = runs[lengths[runs] > j]
        if runs.size == 0:
            break
        sums[runs] += rows[starts[runs] + j]  # `runs` are distinct rows of sums: += is exact
    return sums
