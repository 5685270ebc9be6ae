"""The kernel interface: the array work the ops name, and the one place that chooses who does it.

An op calls a kernel by name (`kernels.segment_sums(ids, rows)` in the lookup's backward,
`kernels.cross_entropy_rows(z, y, scale)` in the loss); the op never knows which implementation
ran. Two implement every name of `INTERFACE`, with the same arguments and results:

    plain.py   the math as it reads, on numpy: the reference, and what a learner reads
    fast.py    the same results (bit for bit, or within float32 rounding where it says so),
               faster: row blocks on two threads, recycled buffers, fewer passes

The names below are the plain kernels until `choose` runs, which it does once at import: the fast
ones unless the environment says MINIGRAD_FAST_KERNELS=0 (MINIGRAD_FAST_PATHS=0, its old name,
still works). `with kernels.plain_only():` runs the plain ones for a while. The choice is
process-wide, not per thread: it changes how fast a result comes and its last float32 bits,
never what it means.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from minigrad.engine.kernels import fast, plain
from minigrad.engine.kernels.plain import (
    attention,
    attention_backward,
    buffer,
    cross_entropy_rows,
    erf,
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    linear,
    rowwise,
    segment_sums,
    sigmoid,
    silu,
    silu_backward,
    tanh,
)

INTERFACE = (
    "attention", "attention_backward", "buffer", "cross_entropy_rows", "erf", "gelu", "gelu_backward",
    "layer_norm", "layer_norm_backward", "linear", "rowwise", "segment_sums", "sigmoid", "silu",
    "silu_backward", "tanh",
)

_fast_by_default = os.environ.get("MINIGRAD_FAST_KERNELS", os.environ.get("MINIGRAD_FAST_PATHS", "1")) != "0"
_plain_requests = 0  # open `plain_only()` blocks, in every thread
_lock = threading.Lock()


def choose(use_fast: bool) -> None:
    """The one place that decides: every name of INTERFACE becomes fast.py's or plain.py's."""
    source = fast if use_fast else plain
    globals().update({name: getattr(source, name) for name in INTERFACE})


def fast_enabled() -> bool:
    """Whether the fast kernels run now."""
    return globals()["segment_sums"] is fast.segment_sums


def use_fast(on: bool) -> None:
    """Run the fast kernels (True, the default) or the plain ones from now on."""
    global _fast_by_default
    if not isinstance(on, bool):
        raise TypeError(f"use_fast(on): expected True or False, got {on!r}")
    with _lock:
        _fast_by_default = on
        choose(on and _plain_requests == 0)


@contextlib.contextmanager
def plain_only() -> Iterator[None]:
    """Run the plain kernels inside the block: the same results, more slowly. Blocks may nest and
    end in any order (in any thread): the fast kernels come back once every block has ended."""
    global _plain_requests
    with _lock:
        _plain_requests += 1
        choose(False)
    try:
        yield
    finally:
        with _lock:
            _plain_requests -= 1
            choose(_fast_by_default and _plain_requests == 0)


def set_threads(n: int) -> None:
    """Let the fast kernels' row blocks use up to `n` threads (1 or 2; default: min(2, cores)).

    A benchmark at `--threads 1` sets 1, so minigrad uses one core as PyTorch does with
    torch.set_num_threads(1); numpy's BLAS is capped separately (threadpoolctl).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_threads(n): n must be an int of at least 1, got {n!r}")
    fast.threads = min(2, n, os.cpu_count() or 1)


def get_threads() -> int:
    """How many threads the fast kernels' row blocks may use."""
    return fast.threads


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for the next step (see fast.keep_freed_memory)."""
    return fast.keep_freed_memory()


choose(_fast_by_default)

__all__ = [
    "attention", "attention_backward", "buffer", "cross_entropy_rows", "erf", "gelu", "gelu_backward",
    "layer_norm", "layer_norm_backward", "linear", "rowwise", "segment_sums", "sigmoid", "silu",
    "silu_backward", "tanh",  # INTERFACE
    "choose", "fast_enabled", "get_threads", "keep_freed_memory", "plain_only", "set_threads", "use_fast",
]
