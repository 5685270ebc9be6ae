"""A/B: this checkout's minigrad against another checkout's, on one benchmark, in one interleaved run.

Each checkout's worker runs in its own process from that checkout's own benchmark script (so it
imports that checkout's minigrad), and the workers take turns, as in benchmarks/run.py: a busy
moment on the machine lands on both. Prints the median of the per-round ratios (this / other)
with its quartiles, each side's median step, the load average before and after, and the BLAS
kernel each worker got. With PyTorch installed, `--torch` adds PyTorch eager as a third worker.

    python benchmarks/ab.py --other ../base --bench step --shape small
    python benchmarks/ab.py --other ../base --bench tinygpt --shape base --threads 1 --torch
    python benchmarks/ab.py --other ../base --bench llama --threads 2
    python benchmarks/ab.py --other ../base --bench overhead --ops 10000 [--dtype float64]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from real_kernel import use_real_kernel  # noqa: E402
from run import StepProcess  # noqa: E402

SHAPES = {
    "step": {"small": {"V": 8192, "d": 128, "H": 512, "N": 2048},
             "large": {"V": 50257, "d": 256, "H": 1024, "N": 1024}},
    "tinygpt": {"base": {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 2, "B": 16}},
    "llama": {"base": {}},
}
PAUSE_S = 0.25  # BLAS and OpenMP threads spin for a while after their last call


class Worker(StepProcess):
    """One `--serve` process of a checkout's benchmark script (run.py's StepProcess), labelled."""

    def __init__(self, label: str, checkout: Path, bench: str, impl: str, args: list[str]):
        super().__init__(impl, args, script=f"{bench}.py", checkout=checkout)
        self.label = label
        self.first = self.ask()


def interleaved(workers: list[Worker], rounds: int, steps: int) -> dict[str, list[float]]:
    """Per worker, the median step time of each of its turns (one untimed step, then `steps`)."""
    turns: dict[str, list[float]] = {w.label: [] for w in workers}
    for r in range(rounds):
        for w in workers[r % len(workers):] + workers[:r % len(workers)]:
            time.sleep(PAUSE_S)
            times = [w.ask("step")["time"] for _ in range(steps + 1)][1:]
            turns[w.label].append(statistics.median(times))
    return turns


def overhead_turns(checkouts: dict[str, Path], rounds: int, ops: int, dtype: str) -> dict[str, list[float]]:
    """Per checkout, per round, microseconds per op (build + backward) of the 10,000-op chain."""
    turns: dict[str, list[float]] = {label: [] for label in checkouts}
    for r in range(rounds):
        order = list(checkouts.items())
        for label, checkout in order[r % len(order):] + order[:r % len(order)]:
            impl = "torch" if label == "torch" else "minigrad"
            command = [sys.executable, str(checkout / "benchmarks" / "overhead.py"), f"--impl={impl}",
                       f"--ops={ops}", "--repeats=5"]
            command += [f"--dtype={dtype}"] if dtype != "float32" else []  # older checkouts: float32 only
            env = {**os.environ, "PYTHONPATH": str(checkout)}
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=checkout)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            turns[label].append(result["build_us"] + result["backward_us"])
    return turns


def summary(turns: dict[str, list[float]], unit: str, scale: float) -> list[str]:
    labels = list(turns)
    lines = [f"| worker | median ({unit}) | quartiles |", "|---|---:|---:|"]
    for label in labels:
        q = statistics.quantiles(turns[label], n=4)
        lines.append(f"| {label} | {statistics.median(turns[label]) * scale:.2f} | "
                     f"{q[0] * scale:.2f}-{q[2] * scale:.2f} |")
    lines.append("")
    for other in labels[1:]:
        ratios = [a / b for a, b in zip(turns[labels[0]], turns[other])]
        q = statistics.quantiles(ratios, n=4)
        lines.append(f"- {labels[0]} / {other}: median of per-round ratios {statistics.median(ratios):.3f} "
                     f"(quartiles {q[0]:.3f}-{q[2]:.3f}, {len(ratios)} rounds)")
    return lines


def processor() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, type=Path, help="the other checkout (its root folder)")
    parser.add_argument("--bench", choices=["step", "tinygpt", "llama", "overhead"], required=True)
    parser.add_argument("--shape", default=None, help="step: small or large; tinygpt: base")
    parser.add_argument("--threads", type=int, default=None, help="BLAS, torch and row-block threads")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per turn (after one untimed)")
    parser.add_argument("--ops", type=int, default=10000, help="overhead: the chain's length")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="overhead: the tensors' dtype")
    parser.add_argument("--torch", action="store_true", help="add PyTorch eager as a third worker")
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error(f"--rounds must be at least 2, got {args.rounds}")
    other = args.other.resolve()
    if not (other / "benchmarks" / f"{args.bench}.py").is_file():
        parser.error(f"--other {args.other}: no benchmarks/{args.bench}.py there")
    use_real_kernel()
    checkouts = {"this": HERE.parent, "other": other}
    load_before = os.getloadavg()
    if args.bench == "overhead":
        if args.torch:
            checkouts["torch"] = HERE.parent
        turns, unit, scale = overhead_turns(checkouts, args.rounds, args.ops, args.dtype), "us per op", 1.0
    else:
        shape = SHAPES[args.bench].get(args.shape or next(iter(SHAPES[args.bench])), {})
        extra = [f"--{k}={v}" for k, v in shape.items()]
        extra += [f"--threads={args.threads}"] if args.threads else []
        workers = [Worker(label, path, args.bench, "minigrad", extra) for label, path in checkouts.items()]
        if args.torch:
            workers.append(Worker("torch", HERE.parent, args.bench, "torch", extra))
        try:
            turns = interleaved(workers, args.rounds, args.steps)
        finally:
            for w in workers:
                w.finish()
        unit, scale = "ms per step", 1e3
    print(f"# A/B {args.bench} {args.shape or ''} threads={args.threads or 'all'}: this={HERE.parent} "
          f"other={other}")
    print(f"# {processor()}, {os.cpu_count()} cores, load average {load_before[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after\n")
    print("\n".join(summary(turns, unit, scale)))


if __name__ == "__main__":
    main()
