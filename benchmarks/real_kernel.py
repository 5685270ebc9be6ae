"""Benchmarks run numpy's BLAS on the kernel it picks for this processor.

This environment may set OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE), which force OpenBLAS onto an
old kernel: numpy's matmuls then run at about half speed and every ratio against PyTorch (which
brings its own BLAS) misleads. A benchmark calls `use_real_kernel()` first thing: when either is
set, it runs itself again without them (its worker processes inherit that), and says so. Tests
and CI leave the variables alone; only the benchmarks' own processes drop them.
"""

from __future__ import annotations

import os
import sys

FORCING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def use_real_kernel() -> None:
    """Re-run this script without the variables that force a BLAS kernel (a no-op when unset)."""
    forced = {name: os.environ[name] for name in FORCING if name in os.environ}
    if not forced:
        return
    print("note: running without " + ", ".join(f"{k}={v}" for k, v in forced.items())
          + " (they force an old BLAS kernel; see docs/performance.md)", flush=True)
    env = {k: v for k, v in os.environ.items() if k not in FORCING}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def kernel() -> str:
    """Which BLAS numpy uses here and the kernel it picked, e.g. 'openblas SkylakeX, 2 threads'."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            return f"{pool['internal_api']} {pool.get('architecture', '?')}, {pool['num_threads']} threads"
    return "no BLAS pool found"
