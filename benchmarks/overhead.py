"""Per-op overhead: build and backpropagate a chain of small ops, microseconds per op.

With 8-element tensors the arithmetic costs nothing, so what is timed is the engine itself:
making a Tensor and a graph node per op in the forward, visiting each node in the backward.
Ops alternate `x * 1.0001` and `x + 0.5`. One worker per implementation, as for the step:
    python benchmarks/overhead.py --impl minigrad --ops 10000 [--dtype float64]
prints one JSON line with the medians over repeats and the BLAS kernel numpy got (like every
benchmark, it re-runs itself without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: benchmarks/real_kernel.py).

Timings on a shared machine move with its load; instruction counts do not. `--marks` builds and
backpropagates one chain between calls of `os.getppid()`, so that callgrind can count each phase
apart (docs/performance.md, "Per-op overhead"):
    valgrind --tool=callgrind --dump-before='os_getppid*' --callgrind-out-file=cg \
        python benchmarks/overhead.py --impl minigrad --ops 4000 --marks
    grep summary cg.2 cg.3    # instructions of the build, then of the backward
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_kernel import kernel, use_real_kernel


def chain(leaf: Any, n_ops: int) -> tuple[float, float]:
    """CPU seconds to build a chain of n_ops ops on `leaf`, and to backpropagate through it.

    CPU time of this thread, not wall time: all of this work runs on the calling thread (PyTorch
    too runs a CPU graph's backward there), and a busy machine then delays it without inflating it.
    """
    start = time.thread_time()
    x = leaf
    for i in range(n_ops):
        x = x * 1.0001 if i % 2 else x + 0.5
    built = time.thread_time()
    x.sum().backward()
    return built - start, time.thread_time() - built


def marked_chain(leaf: Any, n_ops: int) -> None:
    """One chain, its build and its backward each between two calls of os.getppid()."""
    os.getppid()
    x = leaf
    for i in range(n_ops):
        x = x * 1.0001 if i % 2 else x + 0.5
    os.getppid()
    x.sum().backward()
    os.getppid()


def measure(impl: str, n_ops: int, repeats: int, marks: bool = False,
            dtype: str = "float32") -> dict[str, Any]:
    if impl == "torch":
        import torch

        torch.set_num_threads(1)  # 8-element ops never use a second thread anyway

        def make_leaf() -> Any:
            return torch.ones(8, dtype=getattr(torch, dtype), requires_grad=True)
    else:
        import minigrad as mg

        def make_leaf() -> Any:
            return mg.tensor(np.ones(8, dtype=dtype), requires_grad=True)

    chain(make_leaf(), n_ops)  # warm up
    if marks:
        marked_chain(make_leaf(), n_ops)
        return {"impl": impl, "ops": n_ops, "dtype": dtype, "marks": True}
    builds, backwards = zip(*(chain(make_leaf(), n_ops) for _ in range(repeats)))
    return {
        "impl": impl, "ops": n_ops, "dtype": dtype,
        "build_us": statistics.median(builds) / n_ops * 1e6,
        "backward_us": statistics.median(backwards) / n_ops * 1e6,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("minigrad", "torch"), required=True)
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--marks", action="store_true", help="one chain between os.getppid() "
                        "calls, for callgrind's --dump-before (no timing)")
    args = parser.parse_args(argv)
    use_real_kernel()  # 8-element ops never reach BLAS, but every benchmark runs on the real kernel
    result = measure(args.impl, args.ops, args.repeats, args.marks, args.dtype)
    result["blas"] = kernel()
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
