"""Where the tied-LM step's time goes, part by part: minigrad's ops, the floor's matmuls, and the
elementwise work any step must do, timed apart (docs/performance.md, "Where the time goes").

    python benchmarks/step_parts.py [--shape small|large] [--steps 5]

Three tables: (1) wall time per minigrad op (forward and backward, summed over a step) and the
step's phases; (2) each of the floor's nine products alone; (3) the elementwise work, in CPU
time on one thread (thread_time, so other processes on the machine count less), with what it
costs split over two cores and what a fresh array costs over a kept one (page faults).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.run import SHAPES
from benchmarks.step import initial_state, minigrad_step, softmax_dz_rows


def median_ms(call: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter,
              before: Callable[[], object] | None = None) -> float:
    call()
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = clock()
        call()
        times.append(clock() - start)
    return statistics.median(times) * 1e3


def op_times(shape: dict[str, int], steps: int) -> None:
    """Wall time of every Function's forward and backward inside real steps (ms per step)."""
    from minigrad.engine import ops
    from minigrad.engine.function import Function

    spent: collections.Counter[str] = collections.Counter()

    def timed(cls: type, name: str) -> None:
        inner = getattr(cls, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[f"{cls.__name__}.{name}"] += time.perf_counter() - start

        setattr(cls, name, staticmethod(wrapper))

    for cls in vars(ops).values():
        if isinstance(cls, type) and issubclass(cls, Function) and cls is not Function:
            for name in ("forward", "backward"):
                if name in vars(cls):
                    timed(cls, name)
    step = minigrad_step(initial_state(**shape))
    step()
    spent.clear()
    median = median_ms(step, steps)  # steps + 1 calls: one untimed, then `steps` timed
    print(f"minigrad step: median {median:.1f} ms; its ops, ms per step (mean over {steps + 1}):\n")
    print("| op | ms |\n|---|---:|")
    for name, seconds in spent.most_common():
        print(f"| {name} | {seconds * 1e3 / (steps + 1):.1f} |")
    print()


def matmul_times(shape: dict[str, int], repeats: int) -> None:
    rng = np.random.default_rng(0)
    V, d, H, N = shape["V"], shape["d"], shape["H"], shape["N"]
    E, W1, W2 = (rng.standard_normal(s).astype(np.float32) for s in ((V, d), (H, d), (d, H)))
    x, h, o = (rng.standard_normal(s).astype(np.float32) for s in ((N, d), (N, H), (N, d)))
    dz = np.full((N, V), 1e-4, np.float32)
    z = np.empty((N, V), np.float32)
    products = {"z = o E^T": lambda: np.matmul(o, E.T, out=z), "dE = dz^T o": lambda: dz.T @ o,
                "do = dz E": lambda: dz @ E, "h = x W1^T": lambda: x @ W1.T, "o = h W2^T": lambda: h @ W2.T,
                "dW2 = do^T h": lambda: o.T @ h, "dh = do W2": lambda: o @ W2,
                "dW1 = dh^T x": lambda: h.T @ x, "dx = dh W1": lambda: h @ W1}
    print("| product (BLAS threads as configured) | ms |\n|---|---:|")
    times = {name: median_ms(call, repeats) for name, call in products.items()}
    for name, ms in times.items():
        print(f"| {name} | {ms:.1f} |")
    print(f"| sum: the floor | {sum(times.values()):.1f} |\n")


def elementwise_times(shape: dict[str, int], repeats: int) -> None:
    from minigrad.engine.kernels import fast

    rng = np.random.default_rng(0)
    V, d, H, N = shape["V"], shape["d"], shape["H"], shape["N"]
    z0 = rng.standard_normal((N, V)).astype(np.float32)
    z, y = z0.copy(), rng.integers(0, V, (N, 1))
    total, picked = np.empty((N, 1), np.float32), np.empty((N, 1), np.float32)

    def dz_rows(lo: int, hi: int) -> None:  # the linear cross-entropy's per-row work
        softmax_dz_rows(z, y, total, picked, N, lo, hi)

    block_rows = max(1, fast.ROW_BLOCK_BYTES // (V * 4))

    def all_rows_one_thread() -> None:
        for start in range(0, N, block_rows):
            dz_rows(start, min(start + block_rows, N))

    def refill() -> None:
        np.copyto(z, z0)

    p = rng.standard_normal((V, d)).astype(np.float32)
    g, m, v = p * 0.1, np.zeros_like(p), np.zeros_like(p)

    def adamw(lo: int | None = None, hi: int | None = None) -> None:  # the ten passes and the decay
        m_, v_, g_, p_ = m[lo:hi], v[lo:hi], g[lo:hi], p[lo:hi]
        p_ *= 0.99999
        s = g_ - m_
        s *= 0.1
        m_ += s
        np.multiply(g_, g_, out=s)
        s *= 0.001
        v_ *= 0.999
        v_ += s
        np.sqrt(v_, out=s)
        s /= 0.03
        s += 1e-8
        np.divide(m_, s, out=s)
        s *= 1e-3
        p_ -= s

    table_rows = max(1, fast.ROW_BLOCK_BYTES // (d * 4))

    def adamw_blocks() -> None:
        for start in range(0, V, table_rows):
            adamw(start, min(start + table_rows, V))

    a, out = rng.standard_normal((N, H)).astype(np.float32), np.empty((N, H), np.float32)
    ids, rows = rng.integers(0, V, N), rng.standard_normal((N, d)).astype(np.float32)
    dE = np.zeros((V, d), np.float32)
    cpu = time.thread_time
    parts = {
        f"softmax and dz over ({N}, {V}) in 1 MiB row blocks":
            median_ms(all_rows_one_thread, repeats, cpu, refill),
        "  of which exp alone": median_ms(lambda: np.exp(z, out=z), repeats, cpu, refill),
        f"AdamW on the ({V}, {d}) table, row blocks": median_ms(adamw_blocks, repeats, cpu),
        f"tanh over ({N}, {H})": median_ms(lambda: np.tanh(a, out=out), repeats, cpu),
        f"scatter-add of ({N}, {d}) rows (np.add.at)":
            median_ms(lambda: np.add.at(dE, ids, rows), repeats, cpu),
    }
    print("| elementwise work | CPU ms, 1 thread | split over 2 cores |\n|---|---:|---:|")
    for name, ms in parts.items():
        print(f"| {name} | {ms:.1f} | {ms / 2:.1f} |")
    needed = sum(ms for name, ms in parts.items() if not name.startswith("  "))
    print(f"| sum | {needed:.1f} | {needed / 2:.1f} |\n")
    kept = np.empty((N, V), np.float32)
    fresh = median_ms(lambda: np.empty((N, V), np.float32).fill(1.0), repeats)
    reused = median_ms(lambda: kept.fill(1.0), repeats)
    print(f"writing a fresh ({N}, {V}) float32 array: {fresh:.1f} ms; the same writes into a kept "
          f"one: {reused:.1f} ms (page faults: {fresh - reused:.1f} ms)\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# step parts, {args.shape}: {shape}; load average {load}\n")
    op_times(shape, args.steps)
    matmul_times(shape, args.steps)
    elementwise_times(shape, args.steps)


if __name__ == "__main__":
    main()
