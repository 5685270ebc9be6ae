"""What the fast kernels buy: the same work with the fast kernels and the plain ones, side by side.

  cross-entropy     F.cross_entropy forward + backward on (N, V) float32 logits (the recycled
                    softmax buffer, dz written over it, row blocks on two threads)
  linear cross-entropy  F.linear_cross_entropy forward + backward, (N, d) rows against a (V, d)
                    table (logits recycled and turned into dz in place in row blocks on two threads)
  tanh              tanh's forward on an (N, H) float32 array (row blocks on two threads)
  AdamW             one AdamW step on a dense (V, d) float32 table (the ten passes and the
                    decay in cache-sized row blocks on two threads, against one pass of each over
                    the whole table)
  coalesce          RowSparse.coalesce() of n Zipf ids with (n, d) float32 rows (vectorised
                    run sums against the plain np.add.at)
  training step     the tied-embedding step of benchmarks/step.py (every fast path, including
                    gradients stored and summed without copies)

On and off take turns, one call each per round, so a busy moment on a shared machine lands on
both; the ratio is the median over rounds of (off time / on time) measured in the same round.

    python benchmarks/fast_paths.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.coalesce import zipf_ids
from benchmarks.step import initial_state, minigrad_step


def cross_entropy_call(N: int, V: int) -> Callable[[], None]:
    import minigrad as mg
    from minigrad.nn import functional as F

    rng = np.random.default_rng(0)
    logits = mg.tensor(rng.standard_normal((N, V)).astype(np.float32), requires_grad=True)
    targets = rng.integers(0, V, N)

    def call() -> None:
        logits.grad = None
        F.cross_entropy(logits, targets).backward()

    return call


def linear_cross_entropy_call(N: int, d: int, V: int) -> Callable[[], None]:
    import minigrad as mg
    from minigrad.nn import functional as F

    rng = np.random.default_rng(0)
    h = mg.tensor(rng.standard_normal((N, d)).astype(np.float32), requires_grad=True)
    table = mg.tensor((0.02 * rng.standard_normal((V, d))).astype(np.float32), requires_grad=True)
    targets = rng.integers(0, V, N)

    def call() -> None:
        h.grad = table.grad = None
        F.linear_cross_entropy(h, table, targets).backward()

    return call


def tanh_call(N: int, H: int) -> Callable[[], None]:
    import minigrad as mg
    from minigrad.nn import functional as F

    a = mg.tensor(np.random.default_rng(0).standard_normal((N, H)).astype(np.float32))
    return lambda: F.tanh(a)


def adamw_call(V: int, d: int) -> Callable[[], None]:
    import minigrad as mg

    rng = np.random.default_rng(0)
    table = mg.tensor(rng.standard_normal((V, d)).astype(np.float32), requires_grad=True)
    gradient = rng.standard_normal((V, d)).astype(np.float32)
    optimizer = mg.optim.AdamW([table], lr=1e-3, weight_decay=0.1)

    def call() -> None:
        table.grad = gradient
        optimizer.step()

    return call


def coalesce_call(n: int, d: int, V: int) -> Callable[[], None]:
    from minigrad.engine import RowSparse

    rng = np.random.default_rng(0)
    ids, rows = zipf_ids(n, V, rng), rng.standard_normal((n, d)).astype(np.float32)
    return lambda: RowSparse(ids, rows, (V, d)).coalesce()


def step_call(V: int, d: int, H: int, N: int) -> Callable[[], None]:
    step = minigrad_step(initial_state(V, d, H, N))
    return lambda: step()


def compare(name: str, call: Callable[[], None], rounds: int) -> None:
    from minigrad.engine import kernels

    times: dict[str, list[float]] = {"on": [], "off": []}
    call()  # warm up: first-touch pages, the recycled buffer
    for _ in range(rounds):
        for mode in ("on", "off"):
            start = time.perf_counter()
            if mode == "on":
                call()
            else:
                with kernels.plain_only():
                    call()
            times[mode].append(time.perf_counter() - start)
    ratio = statistics.median(off / on for on, off in zip(times["on"], times["off"]))
    on, off = (statistics.median(times[m]) * 1e3 for m in ("on", "off"))
    print(f"| {name} | {on:.1f} | {off:.1f} | {ratio:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small shapes, 3 rounds")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    scale = 4 if args.quick else 1
    load = os.getloadavg()[0]
    print(f"# fast paths on vs off, median of {rounds} interleaved rounds\n")
    print("| work | fast on (ms) | fast off (ms) | off / on |")
    print("|---|---:|---:|---:|")
    compare(f"cross-entropy (N={1024 // scale}, V=50257)", cross_entropy_call(1024 // scale, 50257), rounds)
    compare(f"linear cross-entropy (N={1024 // scale}, d=256, V=50257)",
            linear_cross_entropy_call(1024 // scale, 256, 50257), rounds)
    compare(f"tanh forward ({2048 // scale}, 512)", tanh_call(2048 // scale, 512), rounds)
    compare(f"AdamW step (V=50257, d={256 // scale})", adamw_call(50257, 256 // scale), rounds)
    compare(f"coalesce (n={100_000 // scale}, d=128, V=50000, Zipf)",
            coalesce_call(100_000 // scale, 128, 50_000), rounds)
    compare("training step (V=8192, d=128, H=512, N=2048)", step_call(8192, 128, 512, 2048), rounds)
    print(f"\nload average (1 min) before/after: {load:.2f} / {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
