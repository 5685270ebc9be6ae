"""The fast kernels: the same interface as plain.py, faster.

Each function here takes the same arguments and returns what its plain twin returns: bit for bit
where it does the same operations in the same order on each row (segment_sums, linear's rows,
cross_entropy_rows, tanh, gelu_backward, rowwise), within float32 rounding where it sums in
another order or fits a function (gelu, layer_norm, attention, silu: each says why). The tricks:

    row blocks       numpy's ufuncs run on one core and release the GIL: a (rows, C) array is
                     cut into cache-sized blocks of rows, the two halves run on two threads, and
                     every pass over a block finds it still in cache (`in_row_blocks`)
    recycled buffers a fresh large array costs more than the arithmetic on it (page faults):
                     last step's array is handed out again once nothing holds it (`Recycled`)
    fewer passes     in-place updates in one buffer where the plain form makes temporaries

Where a fast form does not apply (a 0-d or non-contiguous array, another dtype), the function
calls its plain twin. Nothing here is called directly: ops name kernels through
kernels/__init__.py, which chooses this module or plain.py. What each buys: docs/performance.md.
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from minigrad.engine.arrays import Array
from minigrad.engine.kernels import plain

# ---- row blocks on two threads -------------------------------------------------------------------

ROW_BLOCK_BYTES = 1024 * 1024  # a block of input and one of output stay in cache between passes
PARALLEL_MIN_BYTES = 4 * 1024 * 1024  # below this, starting a second thread costs more than it buys
ROWWISE_PARALLEL_MIN_BYTES = 256 * 1024  # per-row work heavy enough (norms, attention) pays sooner
threads = min(2, os.cpu_count() or 1)  # how many threads the row blocks may use (set_threads)
_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _helper_thread() -> ThreadPoolExecutor:
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minigrad-rows")
        return _helper


def _forget_helper_after_fork() -> None:
    # a forked child has none of its parent's threads: a pool copied from the parent would
    # queue work for a thread that does not exist, so the child makes its own when it needs one
    global _helper, _helper_lock
    _helper, _helper_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper_after_fork)


def in_row_blocks(n_rows: int, row_bytes: int, work: Callable[[int, int], object],
                  parallel_min_bytes: int | None = None) -> None:
    """Run `work(start, stop)` over consecutive row blocks of ROW_BLOCK_BYTES, covering every row.

    The two halves of the rows run on two threads (this one and a helper) once the rows hold
    `parallel_min_bytes`. `work` must only touch its own rows: then every row gets exactly the
    operations, in the same order, that it gets from one call over all rows, and the bits are
    the same. `parallel_min_bytes`: PARALLEL_MIN_BYTES unless given.
    """
    block = max(1, ROW_BLOCK_BYTES // max(row_bytes, 1))

    def rows(lo: int, hi: int) -> None:
        for start in range(lo, hi, block):
            work(start, min(start + block, hi))

    least = PARALLEL_MIN_BYTES if parallel_min_bytes is None else parallel_min_bytes
    if threads < 2 or n_rows * row_bytes < least or n_rows < 2:
        rows(0, n_rows)
        return
    middle = n_rows // 2
    other_half = _helper_thread().submit(rows, middle, n_rows)
    try:
        rows(0, middle)
    finally:
        other_half.result()


def _as_rows(array: Array) -> Array:
    return array.reshape(-1, array.shape[-1])  # a view: callers pass C-contiguous arrays


def _contiguous(*arrays: Array) -> bool:
    """Whether row blocks apply: C-contiguous arrays with rows (an empty one goes to the plain form)."""
    return all(a.ndim > 0 and a.size > 0 and a.flags.c_contiguous for a in arrays)


def rowwise(table: Array, work: Callable[[int, int], None]) -> None:
    """`work(start, stop)` on row blocks of `table` on two threads (the same bits as one call)."""
    if table.ndim == 0 or table.nbytes < PARALLEL_MIN_BYTES:
        work(0, len(table) if table.ndim else 0)
        return
    in_row_blocks(table.shape[0], table[:1].nbytes, work)


# ---- recycled buffers ----------------------------------------------------------------------------

_HAS_REFERENCE_COUNTS = hasattr(sys, "getrefcount")  # False on PyPy: nothing counts as free


class Recycled:
    """An array kept from one call to the next, and handed out again once nothing holds it.

    Why: a fresh large array costs more than the arithmetic on it. The kernel maps and zeroes
    new pages on first touch (logits of shape (1024, 50257) in float32 are 200 MiB), far more
    slowly on a virtual machine whose host has taken freed memory back. A training loop asks for
    an array of the same shape every step, and last step's is free again. "Free" is read off the
    reference count, compared with the count of a probe held the same way: a saved graph, a
    `.grad`, a view, anything that still holds the old array makes this hand out a new one.
    """

    def __init__(self) -> None:
        self._array: Array | None = None
        self._lock = threading.Lock()  # two threads must not both see the array as free

    def get(self, shape: tuple[int, ...], dtype: Any) -> Array:
        """An uninitialised array of `shape` and `dtype` that nothing else references."""
        with self._lock:
            if not self._reusable(shape, dtype):
                self._array = np.empty(shape, dtype)
            assert self._array is not None
            return self._array

    def _reusable(self, shape: tuple[int, ...], dtype: Any) -> bool:
        # no local name for the array here: it would count as one more reference
        return (_HAS_REFERENCE_COUNTS and self._array is not None and self._array.shape == shape
                and self._array.dtype == dtype and sys.getrefcount(self._array) <= _probe_count())


def _probe_count() -> int:
    """The reference count of an array held exactly as Recycled holds its own (by an attribute)."""
    probe = Recycled()
    probe._array = np.empty(0)
    return sys.getrefcount(probe._array)


_buffers: dict[str, Recycled] = {}
_buffers_lock = threading.Lock()


def buffer(name: str, shape: tuple[int, ...], dtype: Any) -> Array:
    """Last call's array of this `name`, shape and dtype once nothing else holds it, else a new one."""
    with _buffers_lock:
        recycled = _buffers.setdefault(name, Recycled())
    return recycled.get(shape, dtype)


# ---- the vocabulary's kernels ---------------------------------------------------------------------

SHORT_RUN = 16  # runs up to this long are summed by vectorised steps, longer ones one by one


def segment_sums(ids: Array, rows: Array) -> tuple[Array, Array]:
    """As plain.segment_sums, with each run of an id summed by vectorised steps instead of np.add.at.

    Most ids in a batch occur a few times, so step j adds the j-th row of every run at least
    j+1 long, one vectorised add per step, at most SHORT_RUN - 1 steps; the few very frequent ids
    (long runs) are each summed as one contiguous block, row by row. The same additions in the
    same order as np.add.at: the same bits. Buys 3.5x to 10x on (2.5e4 to 1e5, 128) float32 rows
    of Zipf ids (benchmarks/coalesce.py). Rows of one element go to the plain form: numpy sums a
    long 1-D block pairwise, in another order.
    """
    if rows.ndim < 2 or len(rows) == 0 or rows[0].size < 2:
        return plain.segment_sums(ids, rows)
    order = np.argsort(ids, kind="stable")
    sorted_ids, sorted_rows = ids[order], rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    lengths = np.diff(np.r_[starts, len(sorted_rows)])
    sums = sorted_rows[starts]  # a copy holding each run's first row
    for k in np.flatnonzero(lengths > SHORT_RUN):
        sums[k] = sorted_rows[starts[k]:starts[k] + lengths[k]].sum(axis=0)  # row by row along axis 0
    runs = np.flatnonzero((lengths > 1) & (lengths <= SHORT_RUN))
    for j in range(1, SHORT_RUN):
        runs = runs[lengths[runs] > j]
        if runs.size == 0:
            break
        sums[runs] += sorted_rows[starts[runs] + j]  # `runs` are distinct rows of sums: += is exact
    return sorted_ids[starts], sums


def linear(x: Array, weight: Array, bias: Array | None, out: Array | None = None) -> Array:
    """x W^T + b with x's leading axes flattened into rows: one BLAS product (numpy's batched
    x @ W.T makes one per leading index; summed in another order, so float rounding apart), and
    the bias added in place instead of into a second (N, out) array."""
    if x.ndim < 2 or (bias is not None and bias.dtype != np.result_type(x, weight)):
        return plain.linear(x, weight, bias, out)
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # -1 cannot be read off 0 features
    y = np.matmul(rows, weight.T, out=None if out is None else out.reshape(len(rows), len(weight)))
    if bias is not None:
        y += bias  # y is a fresh array (or the caller's `out`): adding in place changes nothing else
    return y.reshape(*x.shape[:-1], weight.shape[0]) if out is None else out


def cross_entropy_rows(z: Array, targets: Array, scale: Any, out: Array) -> tuple[Array, Array]:
    """plain.cross_entropy_rows on cache-sized row blocks on two threads (the same bits)."""
    if not _contiguous(z, out) or z.shape[1] == 0:
        return plain.cross_entropy_rows(z, targets, scale, out)
    total, shifted_target = np.empty_like(z[:, :1]), np.empty_like(z[:, :1])

    def work(lo: int, hi: int) -> None:
        total[lo:hi], shifted_target[lo:hi] = plain.cross_entropy_rows(
            z[lo:hi], targets[lo:hi], scale, out[lo:hi])

    in_row_blocks(z.shape[0], z.shape[1] * z.itemsize, work)
    return total, shifted_target


# ---- elementwise ---------------------------------------------------------------------------------

def tanh(a: Array) -> Array:
    """tanh on row blocks on two threads: numpy's tanh costs about 3.4 ns an element on one core."""
    if not _contiguous(a) or a.nbytes < PARALLEL_MIN_BYTES:
        return plain.tanh(a)
    out = np.empty_like(a)
    a_r, out_r = _as_rows(a), _as_rows(out)
    in_row_blocks(a_r.shape[0], a_r[:1].nbytes, lambda lo, hi: np.tanh(a_r[lo:hi], out=out_r[lo:hi]))
    return out


sigmoid = plain.sigmoid  # no faster form: the plain ones run
erf = plain.erf

# Abramowitz & Stegun 7.1.26, for x >= 0: erf(x) = 1 - poly(t) exp(-x^2), t = 1 / (1 + 0.3275911 x),
# |error| < 1.5e-7. Written for Phi(a) = (1 + erf(a / sqrt 2)) / 2, with the sqrt 2 and the 1/2
# folded into the constants: 1 - Phi(|a|) = poly'(t) exp(-a^2/2), t = 1 / (1 + (0.3275911 / sqrt 2) |a|).
_PHI_T = np.float32(0.3275911 / math.sqrt(2))
_PHI_POLY = tuple(np.float32(0.5 * c)
                  for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_ONE_OVER_SQRT_2PI = np.float32(1 / math.sqrt(2 * math.pi))


def gelu(a: Array) -> tuple[Array, Array, Array]:
    """As plain.gelu, for float32, with Phi by the rational fit above (within 1.5e-7 of Phi, about
    one float32 step near 1), sharing exp(-a^2/2) with the density phi, in 22 in-place passes over
    row blocks on the threads. Buys: forward and backward at (16, 64, 512) in 4 ms on one core
    instead of 89 ms (math.erf one element at a time)."""
    if a.dtype != np.float32 or not _contiguous(a):
        return plain.gelu(a)
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

    in_row_blocks(a_r.shape[0], a_r[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, cdf, pdf


def gelu_backward(grad: Array, a: Array, cdf: Array, pdf: Array) -> Array:
    """G (Phi(a) + a phi(a)) in one buffer, in row blocks on the threads: the plain form's three
    operations in its order (the same bits)."""
    if grad.shape != a.shape or not _contiguous(grad, a, cdf, pdf):
        return plain.gelu_backward(grad, a, cdf, pdf)
    slope = np.empty_like(a)
    g_r, a_r, c_r, p_r, s_r = (_as_rows(x) for x in (grad, a, cdf, pdf, slope))

    def work(lo: int, hi: int) -> None:
        s = s_r[lo:hi]
        np.multiply(a_r[lo:hi], p_r[lo:hi], out=s)
        s += c_r[lo:hi]
        s *= g_r[lo:hi]

    in_row_blocks(a_r.shape[0], a_r[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return slope


def silu(a: Array) -> tuple[Array, Array]:
    """As plain.silu in four in-place passes in row blocks, where the overflow-free sigmoid takes
    eight. e^-a overflows to inf for a below about -88 in float32, and 1 / (1 + inf) is the right
    limit, 0: the warning is silenced, not the value changed. Float rounding apart."""
    if a.dtype.kind != "f" or not _contiguous(a):
        return plain.silu(a)
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

    in_row_blocks(a_r.shape[0], a_r[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, s


def silu_backward(grad: Array, a: Array, s: Array) -> Array:
    """G s (1 + a (1 - s)) in one buffer, in row blocks on the threads."""
    if grad.shape != a.shape or not _contiguous(grad, a, s):
        return plain.silu_backward(grad, a, s)
    slope = np.empty_like(a)
    g_r, a_r, s_r, out_r = (_as_rows(x) for x in (grad, a, s, slope))

    def work(lo: int, hi: int) -> None:
        t = out_r[lo:hi]
        np.subtract(1, s_r[lo:hi], out=t)
        t *= a_r[lo:hi]
        t += 1
        t *= s_r[lo:hi]
        t *= g_r[lo:hi]

    in_row_blocks(a_r.shape[0], a_r[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return slope


# ---- norms ----------------------------------------------------------------------------------------

def _dot_rows(a: Array, b: Array) -> Array:
    """sum(a * b) over the last axis of (n, d) arrays, kept as (n, 1): one pass, no product array."""
    sums: Array = np.einsum("ni,ni->n", a, b)
    return sums[:, None]


def _sum_rows(a: Array) -> Array:
    """sum(a) over the last axis of an (n, d) array, kept as (n, 1), by einsum: 2.5x faster than
    numpy's reduction over short rows (22 vs 54 us at (1024, 128) float32), row by row, so blocks
    give the same bits."""
    sums: Array = np.einsum("ni->n", a)
    return sums[:, None]


def layer_norm(x: Array, weight: Array | None, bias: Array | None, eps: float,
               centred: bool = True) -> tuple[Array, Array, Array]:
    """As plain.layer_norm in six (n, d) passes instead of nine (RMSNorm: three instead of five):
    the mean by einsum, the variance as one dot product per row of the centred x (both sum in
    another order than the plain form's means: float rounding apart), the centred x scaled in
    place into xhat, and the affine map in place, in row blocks on the threads."""
    if x.dtype.kind != "f" or not _contiguous(x):
        return plain.layer_norm(x, weight, bias, eps, centred)
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


def layer_norm_backward(grad: Array, xhat: Array, rstd: Array, weight: Array | None,
                        centred: bool = True) -> Array:
    """As plain.layer_norm_backward in six (n, d) passes instead of ten (RMSNorm: five instead of
    seven): both means as one pass each by einsum, then in-place updates, in row blocks. Float
    rounding apart (the sums' order)."""
    if grad.shape != xhat.shape or not _contiguous(grad, xhat):
        return plain.layer_norm_backward(grad, xhat, rstd, weight, centred)
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


# ---- attention --------------------------------------------------------------------------------------

def attention(q: Array, k: Array, v: Array, scale: float, bias: Array | None,
              keep: Array | None) -> tuple[Array, Array]:
    """As plain.attention, block by block of the first (batch) axis while its (..., L, S) scores
    are in cache: the product, the scale, the bias added, the softmax in place (row sums by
    einsum, one reciprocal per row), and the product with v, on the threads. One (..., L, S)
    array is made (P) where the plain form makes four. Float rounding apart (the sums' order, and
    x * (1/s) for x / s). Dropout (keep) goes to the plain form."""
    if keep is not None or q.ndim < 3 or k.shape[-2] == 0:  # dropout, no batch axis, no keys
        return plain.attention(q, k, v, scale, bias, keep)
    p = np.empty((*q.shape[:-1], k.shape[-2]), q.dtype)
    out = np.empty((*q.shape[:-1], v.shape[-1]), q.dtype)
    full_bias = None if bias is None else np.broadcast_to(bias, p.shape)
    scale_ = np.asarray(scale, q.dtype)

    def work(lo: int, hi: int) -> None:
        s = p[lo:hi]
        np.matmul(q[lo:hi], k[lo:hi].swapaxes(-1, -2), out=s)
        s *= scale_
        if full_bias is not None:
            s += full_bias[lo:hi]  # adding -inf gives the same bits as a masked write, faster
        top = s.max(axis=-1, keepdims=True)
        if full_bias is not None:
            top[np.isneginf(top)] = 0  # a row masked everywhere: every e is 0
        s -= top
        np.exp(s, out=s)
        total = np.einsum("...ij->...i", s)[..., None]  # einsum: 4x numpy's sum over short rows
        if full_bias is not None:
            total[total == 0] = np.inf  # that row's weights stay 0 (1/inf), not 0/0
        s *= 1 / total
        np.matmul(s, v[lo:hi], out=out[lo:hi])

    in_row_blocks(q.shape[0], p[:1].nbytes, work, ROWWISE_PARALLEL_MIN_BYTES)
    return out, p


def attention_backward(grad: Array, q: Array, k: Array, v: Array, p: Array, keep: Array | None,
                       scale: float, needs: tuple[bool, ...]
                       ) -> tuple[Array | None, Array | None, Array | None, Array | None]:
    """As plain.attention_backward, by blocks of the batch axis on the threads: the plain form's
    operations in its order, dP made in one buffer and turned into dS in place (one (..., L, S)
    array instead of four), sum(dP P) by einsum (another order: float rounding apart). Dropout
    and a mask that needs its gradient go to the plain form."""
    if keep is not None or needs[3] or q.ndim < 3:
        return plain.attention_backward(grad, q, k, v, p, keep, scale, needs)
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
    need_q, need_k, need_v, _ = needs
    return dq if need_q else None, dk if need_k else None, dv if need_v else None, None


# ---- memory kept for the next step ----------------------------------------------------------------

KEEP_FREED_BYTES = 256 * 1024 * 1024  # free memory glibc may keep at the top of its heap
HEAP_ALLOCATIONS_BELOW = 32 * 1024 * 1024  # arrays below this come from the heap, not mmap


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse instead of returning it; False if not glibc.

    Why: a training step frees its activations and the next step allocates the same sizes
    again. By default glibc returns large freed blocks to the kernel, and the next step's first
    touch of each page is a page fault: at TinyGPT's 4-layer shape about 4,600 faults (18 MiB)
    per step, 10-20% of the step on this virtual machine. The cost: up to KEEP_FREED_BYTES stay
    with the process after a large computation ends (reused, not leaked). Opt-in and process-wide:
    `train()` and the benchmarks call it (it changes no result); nothing undoes it.
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
