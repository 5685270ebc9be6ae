"""The fast kernels: the speed tricks, apart from the code a learner reads.

The plain ops (ops/) and the backward walk (graph.py) never call this module. The fast twins in
fast_ops.py do: each is a Function registered at the seam (seam.py) in place of its plain op, and
uses these kernels where they apply, the plain form where a kernel says no (returns None). Each
fast form gives bit-identical results (tests run the same programs both ways and compare the
bytes); what each buys is measured in benchmarks/ (docs/performance.md).

    held_only_by(totals, node)       nothing else holds a sum: the walk may add into it in place
    cross_entropy_exp(logits, y)     exp(z - max z) and its row sums in a buffer recycled from
                                     step to step, in cache-sized row blocks on two threads
    reusable(ctx, array)             a backward may write its result into its own saved buffer
    scale_rows(e, factors, out)      e * factors in cache-sized row blocks on two threads
    recycled_logits(shape, dtype)    LinearCrossEntropy's logits buffer, recycled from step to step
    elementwise_in_row_blocks(a, f)  row-wise work (Adam's update, LinearCrossEntropy's softmax)
                                     run on row blocks of `a`
    unary(ufunc, a)                  a slow ufunc (tanh) on row blocks of `a` on two threads
    run_sums(rows, starts)           segmented sums of a sorted lookup gradient, vectorised
    linear_rows(x, weight, bias)     x W^T + b for (..., in) inputs as one BLAS product of rows
    gelu_float32(a), gelu_slope(...) GELU's Phi by a float32 rational fit, in row blocks
    layer_norm(...), layer_norm_dx(...)      LayerNorm in few passes, in row blocks
    attention(...), attention_grads(...)     masked softmax attention per (batch, head), in blocks
    silu(a), silu_slope(...)         the Llama-style model's SiLU in few passes (its RMSNorm is
                                     layer_norm and layer_norm_dx uncentred)
    set_threads(n)                   how many threads the row blocks may use (1 or 2)
    keep_freed_memory()              glibc keeps freed memory for the next step (opt-in: train()
                                     and the benchmarks call it; importing minigrad does not)

The switch: set the environment variable MINIGRAD_FAST_PATHS=0 before importing minigrad, or
run code inside `with minigrad.use(fast=False):` (or `minigrad.engine.fast.disabled()`). It is
process-wide (not per thread):
results are identical either way, so a thread that turns it off changes only the speed of others.
(TinyGPT's fast forms at the end are float32-rounding close to the plain forms rather than
bit-identical; each says why.)
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import platform
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from minigrad.engine import seam


def enabled() -> bool:
    """Whether the fast twins run (the default; MINIGRAD_FAST_PATHS=0 or use(fast=False) says no)."""
    return seam.fast_enabled()


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the plain form of every computation: the same results, more slowly."""
    with seam.use(fast=False):
        yield


# ---- the one reference-count probe -------------------------------------------------------------

_HAS_REFERENCE_COUNTS = hasattr(sys, "getrefcount")  # False on PyPy: nothing counts as unshared


def reference_count(value: Any) -> int:
    """How many references `value` has, as `sys.getrefcount` counts them ("many" without counts).

    The count includes the references of the calls on the way here, and interpreters differ in
    which references they borrow, so each user compares it with a count measured once, at import,
    for a value held exactly as it holds one (the `_calibrate_*` functions below).
    """
    return sys.getrefcount(value) if _HAS_REFERENCE_COUNTS else sys.maxsize


# ---- gradients summed in place ----------------------------------------------------------------

def held_only_by(totals: dict[Any, Any], key: Any) -> bool:
    """Whether nothing but the dict `totals` holds the array totals[key].

    The backward walk's fast sums (fast_ops.OwnedSums) may then add the next gradient into it in
    place and hand it to a leaf's `.grad` without a copy (PyTorch's AccumulateGrad steals a
    gradient whose use count is 1 the same way). Buys: one copy of the gradient per parameter per
    step, a (V, d) array for a vocabulary table (benchmarks/fast_paths.py). A view, a read-only
    array, or one that a recorder (the ledger), a saved context or a second edge still holds is
    never held only by the dict. Call it with no other local name bound to the array.
    """
    gradient = totals[key]
    return (type(gradient) is np.ndarray and gradient.base is None
            and gradient.flags.writeable and reference_count(gradient) <= _HELD_ONLY_BY_DICT)


def _calibrate_held_only_by() -> int:
    totals = {0: np.empty(1)}  # held as held_only_by sees it: the dict and one local name
    gradient = totals[0]
    return reference_count(gradient)


_HELD_ONLY_BY_DICT = _calibrate_held_only_by()


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
logits_buffer = Recycled()  # ops.LinearCrossEntropy's logits, turned into dz in place


def recycled_logits(shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
    """The `out=` of ops.LinearCrossEntropy's product x W^T: last step's logits, or None.

    Buys the page faults of a fresh (N, C) array each step: at (1024, 50257) float32, writing a
    fresh 196 MiB array took 34 ms against 16 ms for the same writes into a kept one (measured
    here, docs/performance.md). None (a new array from the matmul) when the fast paths are off.
    """
    return logits_buffer.get(shape, dtype) if seam.fast_enabled() else None


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


def set_threads(n: int) -> None:
    """Let the row blocks use up to `n` threads (1 or 2; default: min(2, cores)).

    A benchmark at `--threads 1` sets 1, so minigrad uses one core as PyTorch does with
    torch.set_num_threads(1); numpy's BLAS is capped separately (threadpoolctl).
    """
    global _THREADS
    if n < 1:
        raise ValueError(f"set_threads: n must be at least 1, got {n!r}")
    _THREADS = min(2, n, os.cpu_count() or 1)


def in_row_blocks(n_rows: int, row_bytes: int, work: Callable[[int, int], None],
                  parallel_min_bytes: int | None = None) -> None:
    """Run `work(start, stop)` over consecutive row blocks of ROW_BLOCK_BYTES, covering every row.

    Why: numpy's ufuncs run on one core and release the GIL, so the two halves of the rows run
    on two threads at once (this thread and one helper); and each pass of `work` (max, subtract,
    exp, sum) reads a block that is still in cache from the pass before, instead of streaming the
    whole array from memory once per pass. `work` must only touch its own rows: then every row
    gets exactly the operations, in the same order, that it gets from one call over all rows,
    and the bits are the same. Below `parallel_min_bytes` (default PARALLEL_MIN_BYTES) of rows,
    one thread does all the work.
    """
    block = max(1, ROW_BLOCK_BYTES // max(row_bytes, 1))

    def rows(lo: int, hi: int) -> None:
        for start in range(lo, hi, block):
            work(start, min(start + block, hi))

    threshold = PARALLEL_MIN_BYTES if parallel_min_bytes is None else parallel_min_bytes
    if _THREADS < 2 or n_rows * row_bytes < threshold or n_rows < 2:
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

    For work that treats each row of `array` (and of arrays of its shape) on its own: Adam's ten
    elementwise passes over a (V, d) table and its two moments, or LinearCrossEntropy's softmax
    and gradient over (N, C) logits. Each row gets the same operations either way, so the bits
    are the same. Declines small arrays (one call over all rows is cheaper) and when the fast
    paths are off.
    """
    if not seam.fast_enabled() or array.ndim == 0 or array.nbytes < PARALLEL_MIN_BYTES:
        return False
    in_row_blocks(array.shape[0], array[:1].nbytes, work)
    return True


def unary(ufunc: np.ufunc, a: np.ndarray) -> np.ndarray | None:
    """ufunc(a) computed on row blocks of `a` on two threads (`elementwise_in_row_blocks`), or None.

    For the slow one-input ufuncs numpy runs on one core: tanh costs about 3.4 ns an element
    here (measured), so the MLP's (2048, 512) float32 activation takes 3.4 ms on one thread and
    half that on two. None (the caller computes ufunc(a) itself) for small or 0-d arrays and
    when the fast paths are off. Elementwise, so the bits are the same.
    """
    if not seam.fast_enabled() or a.ndim == 0 or a.nbytes < PARALLEL_MIN_BYTES:
        return None
    out = np.empty_like(a)
    elementwise_in_row_blocks(out, lambda lo, hi: ufunc(a[lo:hi], out=out[lo:hi]))
    return out


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
    if not seam.fast_enabled() or logits.ndim == 0 or not logits.flags.c_contiguous or logits.shape[-1] == 0:
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
    if (not seam.fast_enabled() or not e.flags.c_contiguous or e.ndim == 0
            or factors.shape != (*e.shape[:-1], 1)):
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
    return array if not ctx.retain_graph else None


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
    if not seam.fast_enabled() or rows[0].size < 2:
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


# ---- TinyGPT: the transformer's per-row work, in row blocks --------------------------------------
# The plain forms are in ops.py (Linear, GELU, LayerNorm, ScaledDotProductAttention), written as
# the math reads. The forms below give the same numbers up to float32 rounding (each says where
# the order of operations differs); tests/fast/test_fast_transformer.py compares both ways. What each
# buys is measured by `python benchmarks/tinygpt.py --ops` (one op, fast against plain, one core).

ROWWISE_PARALLEL_MIN_BYTES = 256 * 1024  # the helper's wake-up (tens of microseconds) is paid back
# above about this much per-row work (LayerNorm's (1024, 128) float32 rows are 512 KiB)


def linear_rows(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray | None:
    """x W^T + b for x of shape (..., in), as one product of rows with the bias added in place,
    or None (1-D x, or the fast paths off).

    Buys: for (B, T, in) inputs the leading axes flattened into rows make one BLAS product, where
    numpy's batched `x @ W.T` makes one per leading index (2.34 vs 2.07 ms at (16, 64, 128) @
    (128, 512) on one core, and summed in another order, so the two agree to float rounding, not
    bit for bit); for any input the bias is added into the product instead of making a second
    (N, out) array (at a vocabulary-sized output, as large as the logits).
    """
    if not seam.fast_enabled() or x.ndim < 2:
        return None
    out = x.reshape(-1, x.shape[-1]) @ weight.T
    if bias is not None:
        out += bias  # out is a fresh array: adding in place changes nothing else
    return out.reshape(*x.shape[:-1], weight.shape[0])


# Abramowitz & Stegun 7.1.26, for x >= 0: erf(x) = 1 - poly(t) exp(-x^2), t = 1 / (1 + 0.3275911 x),
# |error| < 1.5e-7. Written for Phi(a) = (1 + erf(a / sqrt 2)) / 2, with the sqrt 2 and the 1/2
# folded into the constants: 1 - Phi(|a|) = poly'(t) exp(-a^2/2), t = 1 / (1 + (0.3275911 / sqrt 2) |a|).
_PHI_T = np.float32(0.3275911 / math.sqrt(2))
_PHI_POLY = tuple(np.float32(0.5 * c)
                  for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_ONE_OVER_SQRT_2PI = np.float32(1 / math.sqrt(2 * math.pi))


def gelu_float32(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(a Phi(a), Phi(a), phi(a)) for float32 `a`, Phi by the rational fit above, or None.

    The plain form (ops.GELU) evaluates math.erf element by element in float64; this fit is within
    1.5e-7 of Phi (about one float32 step near 1), shares exp(-a^2/2) with the density phi that
    the backward needs, and runs as 22 in-place passes over row blocks on the threads. Buys: GELU's
    forward and backward at (16, 64, 512) take 4 ms on one core instead of 89 ms (22x).
    """
    if not seam.fast_enabled() or a.dtype != np.float32 or a.ndim == 0 or not a.flags.c_contiguous:
        return None
    out, cdf, pdf = np.empty_like(a), np.empty_like(a), np.empty_like(a)
    a_r, out_r, cdf_r, pdf_r = _as_rows(a), _as_rows(out), _as_rows(cdf), _as_rows(pdf)

    def work(lo: int, hi: int) -> None:
        x, tail, t, gauss = a_r[lo:hi], out_r[lo:hi], cdf_r[lo:hi], pdf_r[lo:hi]
        np.abs(x, out=t)
        t *= _PHI_T
        t += np.float32(1)
        np.reciprocal(t, out=t)
        np.multiply(t, _PHI_POLY[0], out=tail)  # poly'(t) by Horner's rule
        for c in _PHI_POLY[1:]:
            tail += c
            tail *= t
        np.multiply(x, x, out=gauss)
        gauss *= np.float32(-0.5)
        np.exp(gauss, out=gauss)  # exp(-a^2/2)
        tail *= gauss  # 1 - Phi(|a|)
        np.subtract(np.float32(0.5), tail, out=t)
        np.copysign(t, x, out=t)
        t += np.float32(0.5)  # Phi(a) = 1/2 + sign(a) (1/2 - (1 - Phi(|a|)))
        gauss *= _ONE_OVER_SQRT_2PI
        np.multiply(x, t, out=tail)

    in_row_blocks(a_r.shape[0], a_r.shape[1] * a.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, cdf, pdf


def gelu_slope(grad: np.ndarray, a: np.ndarray, cdf: np.ndarray, pdf: np.ndarray) -> np.ndarray | None:
    """G (Phi(a) + a phi(a)), GELU's backward, in row blocks on the threads, or None.

    The same three operations in the same order as ops.GELU's plain backward: the same bits.
    """
    if (not seam.fast_enabled() or a.ndim == 0 or grad.shape != a.shape
            or not all(x.flags.c_contiguous for x in (grad, a, cdf, pdf))):
        return None
    slope = np.empty_like(a)
    g_r, a_r, c_r, p_r, s_r = (_as_rows(x) for x in (grad, a, cdf, pdf, slope))

    def work(lo: int, hi: int) -> None:
        s = s_r[lo:hi]
        np.multiply(a_r[lo:hi], p_r[lo:hi], out=s)
        s += c_r[lo:hi]
        s *= g_r[lo:hi]

    in_row_blocks(a_r.shape[0], a_r.shape[1] * a.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return slope


def _dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a * b) over the last axis of (n, d) arrays, kept as (n, 1): one pass, no product array."""
    return np.einsum("ni,ni->n", a, b)[:, None]


def _sum_rows(a: np.ndarray) -> np.ndarray:
    """sum(a) over the last axis of an (n, d) array, kept as (n, 1), by einsum: 2.5x faster than
    numpy's reduction over short rows (22 vs 54 us at (1024, 128) float32), summed in another
    order (float rounding apart), and row by row, so blocks give the same bits (a product with
    ones would be faster still, but BLAS groups rows differently in different blocks)."""
    return np.einsum("ni->n", a)[:, None]


def layer_norm(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
               eps: float, centred: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(out, xhat, rstd) of LayerNorm over the last axis, as ops.LayerNorm, or None.
    centred=False: RMSNorm's (ops.RMSNorm), the same without subtracting the mean (three
    passes instead of the plain form's five).

    Two passes for the statistics (the mean by einsum, then the
    variance as one dot product per row of the centred x: both sum in another order than the
    plain form's means, so float rounding apart), the centred x scaled in place into xhat, and
    the affine map in place: six (n, d) passes instead of the plain form's nine, in row blocks
    on the threads. With layer_norm_dx, forward and backward at (16, 64, 128) take 0.73 ms on
    one core instead of 0.88.
    """
    if not seam.fast_enabled() or x.ndim == 0 or not x.flags.c_contiguous or x.dtype.kind != "f":
        return None
    xhat, out = np.empty_like(x), np.empty_like(x)
    rstd = np.empty((*x.shape[:-1], 1), x.dtype)
    x_r, xhat_r, out_r, rstd_r = _as_rows(x), _as_rows(xhat), _as_rows(out), _as_rows(rstd)
    d, eps_ = x.shape[-1], np.asarray(eps, x.dtype)

    def work(lo: int, hi: int) -> None:
        xh, r, source = xhat_r[lo:hi], rstd_r[lo:hi], x_r[lo:hi]
        if centred:
            np.subtract(source, _sum_rows(source) / d, out=xh)
            source = xh  # the centred x, scaled into xhat in place below
        np.divide(_dot_rows(source, source), d, out=r)
        r += eps_
        np.sqrt(r, out=r)
        np.reciprocal(r, out=r)
        np.multiply(source, r, out=xh)  # now xhat
        y = out_r[lo:hi]
        if weight is not None:
            np.multiply(xh, weight, out=y)
        else:
            y[...] = xh
        if bias is not None:
            y += bias

    in_row_blocks(x_r.shape[0], d * x.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, xhat, rstd


def layer_norm_dx(grad: np.ndarray, xhat: np.ndarray, rstd: np.ndarray,
                  weight: np.ndarray | None, centred: bool = True) -> np.ndarray | None:
    """dx = r (g - mean(g) - xhat mean(g xhat)), g = G w: LayerNorm's backward to x, or None.
    centred=False: RMSNorm's, the same without the mean(g) term (it never subtracted a mean).

    Both means as one pass each (by einsum: no (n, d) product array), then
    in-place updates: six (n, d) passes instead of the plain form's ten (RMSNorm: five
    instead of seven), in row blocks on the threads. Float rounding apart from the plain form
    (the sums' order).
    """
    if not seam.fast_enabled() or grad.ndim == 0 or not (grad.flags.c_contiguous and xhat.flags.c_contiguous):
        return None
    dx = np.empty_like(xhat)
    g_r, xhat_r, rstd_r, dx_r = _as_rows(grad), _as_rows(xhat), _as_rows(rstd), _as_rows(dx)
    d = xhat.shape[-1]

    def work(lo: int, hi: int) -> None:
        g, xh = dx_r[lo:hi], xhat_r[lo:hi]
        if weight is not None:
            np.multiply(g_r[lo:hi], weight, out=g)
        else:
            g[...] = g_r[lo:hi]
        mean_g_xhat = _dot_rows(g, xh) / d
        if centred:
            g -= _sum_rows(g) / d
        g -= xh * mean_g_xhat
        g *= rstd_r[lo:hi]

    in_row_blocks(g_r.shape[0], d * xhat.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return dx


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
              bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(softmax(q k^T scale + bias) v, the weights P), as ops.ScaledDotProductAttention, or None.

    bias: what the plain op adds to the scores (ops.transformer.attention_bias: 0 and -inf for a
    causal or boolean mask, or a float mask), broadcasting to (..., L, S), or None.
    Each block of the first (batch) axis goes through all the steps while its (..., L, S) scores
    are in cache: the product, the scale, the bias added (a masked write is a slow pass in numpy;
    adding -inf gives the same bits for finite scores), the softmax in place (its row sums by
    einsum, and one reciprocal per row), and the product with v, on the threads. One
    (..., L, S) array is made (P, kept for the backward) where the plain form makes four. Float
    rounding apart from the plain form (the sums' order, and x * (1/s) for x / s). A row masked
    everywhere gets weights 0, as in the plain form.
    With attention_grads, forward and backward at (16, 4, 64, 32) take 3.7 ms on one core
    instead of 4.2; on two threads each half of the batch runs on its own core.
    """
    if not seam.fast_enabled() or q.ndim < 3:
        return None
    S = k.shape[-2]
    p = np.empty((*q.shape[:-1], S), q.dtype)
    out = np.empty((*q.shape[:-1], v.shape[-1]), q.dtype)
    bias = None if bias is None else np.broadcast_to(bias, p.shape)
    scale_ = np.asarray(scale, q.dtype)

    def work(lo: int, hi: int) -> None:
        s = p[lo:hi]
        np.matmul(q[lo:hi], k[lo:hi].swapaxes(-1, -2), out=s)
        s *= scale_
        if bias is not None:
            s += bias[lo:hi]
        top = s.max(axis=-1, keepdims=True)
        if bias is not None:
            top[np.isneginf(top)] = 0  # a row masked everywhere: every e is 0
        s -= top
        np.exp(s, out=s)
        total = np.einsum("...ij->...i", s)[..., None]  # einsum: 4x numpy's sum over short rows
        if bias is not None:
            total[total == 0] = np.inf  # that row's weights stay 0 (1/inf), not 0/0
        s *= 1 / total
        np.matmul(s, v[lo:hi], out=out[lo:hi])

    in_row_blocks(q.shape[0], p[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, p


def attention_grads(grad: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, p: np.ndarray,
                    scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(dq, dk, dv) of the attention above, by blocks of the batch axis on the threads, or None.

    dV = P^T G, dP = G V^T, dS = P (dP - sum(dP P)), dq = dS k scale, dk = dS^T q scale: the
    plain form's operations in its order, with dP made in one buffer and turned into dS in
    place (one (..., L, S) array instead of four), and sum(dP P) as one einsum per row (summed
    in another order than the plain form's sum of products: float rounding apart).
    """
    if not seam.fast_enabled() or q.ndim < 3:
        return None
    dq, dk, dv, ds_all = np.empty_like(q), np.empty_like(k), np.empty_like(v), np.empty_like(p)
    scale_ = np.asarray(scale, q.dtype)

    def work(lo: int, hi: int) -> None:
        g, pb, ds = grad[lo:hi], p[lo:hi], ds_all[lo:hi]
        np.matmul(pb.swapaxes(-1, -2), g, out=dv[lo:hi])
        np.matmul(g, v[lo:hi].swapaxes(-1, -2), out=ds)  # dP
        ds -= np.einsum("...ij,...ij->...i", ds, pb)[..., None]
        ds *= pb
        ds *= scale_
        np.matmul(ds, k[lo:hi], out=dq[lo:hi])
        np.matmul(ds.swapaxes(-1, -2), q[lo:hi], out=dk[lo:hi])

    in_row_blocks(q.shape[0], p[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return dq, dk, dv


# ---- the Llama-style model: SiLU in few passes -----------------------------------------------------
# (its RMSNorm is layer_norm and layer_norm_dx above, uncentred). The plain forms are in
# ops/elementwise.py (SiLU) and ops/transformer.py (RMSNorm); tests/fast/test_twins.py and
# tests/nn/test_llama_ops.py compare both ways. The rotary embedding has no fast form: writing
# its two halves into place with out= measured slower than the plain form's temporaries (0.73
# against 0.50 ms at (16, 4, 64, 32)).

def silu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(a s(a), s(a)) with s = 1 / (1 + e^-a) in place, or None.

    Four passes in row blocks on the threads, where the plain form's overflow-free sigmoid
    (exp of -|a|, two branches, a select) takes eight. e^-a overflows to inf for a below about
    -88 in float32, and 1 / (1 + inf) is the right limit, 0: the warning is silenced, not the
    value changed. Float rounding apart from the plain form.
    """
    if not seam.fast_enabled() or a.ndim == 0 or not a.flags.c_contiguous or a.dtype.kind != "f":
        return None
    out, s = np.empty_like(a), np.empty_like(a)
    a_r, out_r, s_r = _as_rows(a), _as_rows(out), _as_rows(s)

    def work(lo: int, hi: int) -> None:
        sb = s_r[lo:hi]
        np.negative(a_r[lo:hi], out=sb)
        with np.errstate(over="ignore"):
            np.exp(sb, out=sb)
        sb += 1
        np.reciprocal(sb, out=sb)
        np.multiply(a_r[lo:hi], sb, out=out_r[lo:hi])

    in_row_blocks(a_r.shape[0], a_r.shape[1] * a.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, s


def silu_slope(grad: np.ndarray, a: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """G s (1 + a (1 - s)), SiLU's backward, in one buffer in row blocks on the threads, or None."""
    if (not seam.fast_enabled() or a.ndim == 0 or grad.shape != a.shape
            or not all(x.flags.c_contiguous for x in (grad, a, s))):
        return None
    slope = np.empty_like(a)
    g_r, a_r, s_r, out_r = (_as_rows(x) for x in (grad, a, s, slope))

    def work(lo: int, hi: int) -> None:
        t = out_r[lo:hi]
        np.subtract(1, s_r[lo:hi], out=t)
        t *= a_r[lo:hi]
        t += 1
        t *= s_r[lo:hi]
        t *= g_r[lo:hi]

    in_row_blocks(a_r.shape[0], a_r.shape[1] * a.itemsize, work, ROWWISE_PARALLEL_MIN_BYTES)
    return slope


# ---- keeping freed memory for the next step ----------------------------------------------------

KEEP_FREED_BYTES = 256 * 1024 * 1024  # free memory glibc may keep at the top of its heap
HEAP_ALLOCATIONS_BELOW = 32 * 1024 * 1024  # arrays below this come from the heap, not mmap


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse instead of returning it; False if not glibc.

    Why: a training step frees its activations and the next step allocates the same sizes again.
    By default glibc returns large freed blocks to the kernel (munmap, or trimming the heap), and
    the next step's first touch of each page is a page fault: at TinyGPT's 4-layer shape about
    4,600 faults (18 MiB) per step, 10-20% of the step on this virtual machine. With these two
    settings the faults are gone (docs/performance.md). The cost: up to KEEP_FREED_BYTES stay
    with the process after a large computation ends (they are reused, not leaked). Opt-in and
    process-wide: `train()` and the benchmarks call it (it changes no result); nothing undoes it.
    """
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, HEAP_ALLOCATIONS_BELOW)) and bool(
        mallopt(m_trim_threshold, KEEP_FREED_BYTES))

