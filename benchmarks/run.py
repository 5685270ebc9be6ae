"""The benchmark `make bench` runs: a tied-embedding training step and the per-op overhead.

For each shape, minigrad, the hand-written numpy step, PyTorch eager, torch.compile and jax.jit
(each when importable; `pip install -e ".[bench]"`) and the floor (the step's own matmuls) each
run in their own subprocess, and take turns of a few steps, so that a busy moment on the machine
lands on every implementation alike. The table shows median step times, the ratios the targets
are stated in (medians of the per-round ratios), the first (compiling) step apart from the warm
ones, and the peak memory. See docs/performance.md.

    python benchmarks/run.py             # both shapes and the per-op chain (a few minutes)
    python benchmarks/run.py --quick     # 2 rounds of 2 steps: a smoke run
    python benchmarks/run.py --per-op-only  # the per-op chain alone, 5 interleaved turns
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_kernel import use_real_kernel

HERE = Path(__file__).resolve().parent
SHAPES = {
    "small": {"V": 8192, "d": 128, "H": 512, "N": 2048},
    "large": {"V": 50257, "d": 256, "H": 1024, "N": 1024},
}
# Targets (issue 16): minigrad's step against the fastest peer, and against the floor.
TARGET_VS_FASTEST = 0.85
TARGET_VS_FLOOR = 1.3
PEERS = ("numpy", "torch", "torch.compile", "jax.jit")  # the implementations minigrad must beat
FLOOR = "matmuls"  # not a peer: the step's nine matmuls alone, the least any numpy step costs
# not a peer either: the numpy step with every large elementwise pass on both cores and no fresh
# arrays, what a step on numpy costs at least here; it says whether a target can be met at all
BOUND = "bound"
OPTIONAL = {"torch": "torch", "torch.compile": "torch", "jax.jit": "jax"}  # impl -> module it needs
# Seconds between two implementations' turns. BLAS and OpenMP worker threads spin for a while
# after their last call (about 0.1 s of CPU was measured here), which would slow the next turn.
PAUSE_S = 0.25
LOSS_RTOL = 1e-3  # float32 sums in different orders; a wrong gradient is off by far more


def worker(script: str, *args: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return the JSON line it prints."""
    command = [sys.executable, str(HERE / script), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class StepProcess:
    """A `step.py --serve` subprocess (or another script's, such as tinygpt.py): one
    implementation, built once, stepped on request. `checkout`: run that checkout's script and
    minigrad instead of this one's (benchmarks/ab.py)."""

    def __init__(self, impl: str, args: list[str], script: str = "step.py", checkout: Path | None = None):
        folder = HERE if checkout is None else checkout / "benchmarks"
        command = [sys.executable, str(folder / script), f"--impl={impl}", "--serve", *args]
        env = None if checkout is None else {**os.environ, "PYTHONPATH": str(checkout)}
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=None if checkout is None else checkout, env=env)
        self.impl = impl

    def ask(self, command: str | None = None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.impl} step process stopped (exit code {self.process.wait()})")
        return json.loads(line)

    def finish(self) -> dict[str, Any]:
        memory = self.ask("finish")
        self.process.wait()
        return memory


def run_shape(shape: dict[str, int], impls: list[str], rounds: int, steps: int,
              threads: int | None, script: str = "step.py") -> dict[str, dict[str, Any]]:
    """Time every implementation on one shape, in interleaved turns.

    Each implementation lives in its own process (only its own libraries, its own memory
    figures). The processes take turns in a rotating order; a turn is one untimed step, then
    `steps` timed steps back to back, as in a training loop. The untimed step matters on a
    virtual machine: memory a process freed while it waited for its turn may have gone back to
    the host, and touching it again is slow once. A busy moment on the machine lands on all
    implementations alike, and each round gives one paired ratio (of the turns' medians).
    """
    args = [f"--{k}={v}" for k, v in shape.items()]
    if threads is not None:
        args.append(f"--threads={threads}")
    processes = [StepProcess(impl, args, script) for impl in impls]
    results = {p.impl: {**p.ask(), "times": [], "turns": []} for p in processes}
    for r in range(rounds):
        for p in processes[r % len(processes):] + processes[:r % len(processes)]:
            # a pause first: BLAS and OpenMP threads spin for a while after their last call
            time.sleep(PAUSE_S)
            turn = [p.ask("step") for _ in range(steps + 1)]
            result = results[p.impl]
            result["losses"] += [s["loss"] for s in turn]
            result["times"] += [s["time"] for s in turn[1:]]
            result["turns"].append(statistics.median(s["time"] for s in turn[1:]))
    for p in processes:
        results[p.impl].update(p.finish())
    check_losses_agree(results)
    return results


def check_losses_agree(results: dict[str, dict[str, Any]]) -> None:
    """Same parameters, same batch, same optimizer: every implementation must print the same losses."""
    reference_impl, reference = next(iter(results.items()))
    for impl, result in results.items():
        if impl == FLOOR:
            continue
        for step, (a, b) in enumerate(zip(reference["losses"], result["losses"])):
            if abs(a - b) > LOSS_RTOL * abs(a):
                raise SystemExit(f"loss mismatch at step {step}: {reference_impl} {a:.6f}, "
                                 f"{impl} {b:.6f}: the implementations do not compute the same step")


def quartiles(times: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (times[0],) * 3
    return q1 * 1e3, median * 1e3, q3 * 1e3


def paired_ratio(results: dict[str, dict[str, Any]], impl: str, other: str) -> float:
    """Median over rounds of impl's step time / other's step time in the same round."""
    return statistics.median(a / b for a, b in zip(results[impl]["turns"], results[other]["turns"]))


def step_table(name: str, shape: dict[str, int], results: dict[str, dict[str, Any]],
               skipped: frozenset[str] = frozenset()) -> list[str]:
    any_result = next(iter(results.values()))
    lines = [
        f"### {name}: V={shape['V']}, d={shape['d']}, H={shape['H']}, N={shape['N']}, float32",
        "",
        f"BLAS: {results.get('numpy', any_result)['kernel']}, {any_result['threads']} threads"
        + "".join(f"; {results[i]['kernel']}" for i in ("torch", "jax.jit") if i in results),
        "",
        "| implementation | median step (ms) | quartiles (ms) | steps | first step (s) | x minigrad "
        "| peak RSS growth (MiB) | tracemalloc peak (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for impl, r in results.items():
        q1, median, q3 = quartiles(r["times"])
        vs = f"{paired_ratio(results, impl, 'minigrad'):.2f}" if "minigrad" in results else "-"
        traced = f"{r['traced_peak_mib']:.0f}" if "traced_peak_mib" in r else "-"
        lines.append(f"| {impl} | {median:.1f} | {q1:.1f}-{q3:.1f} | {len(r['times'])} "
                     f"| {r['first_step_s']:.2f} | {vs} | {r['peak_mib']:.0f} | {traced} |")
    lines.append("")
    return lines + target_lines(results, skipped) + [""]


def target_lines(results: dict[str, dict[str, Any]],
                 skipped: frozenset[str] = frozenset()) -> list[str]:
    """The two targets, each as the median over rounds of the paired ratio; a peer left out
    with --skip is named as skipped, one that is not installed as not installed."""
    if "minigrad" not in results:
        return []
    lines = []
    peers = [p for p in PEERS if p in results]
    missing = [p for p in PEERS if p not in results and p not in skipped]
    left_out = [p for p in PEERS if p not in results and p in skipped]
    if peers:
        fastest = min(peers, key=lambda p: statistics.median(results[p]["times"]))
        lines.append(_verdict(f"minigrad <= {TARGET_VS_FASTEST:.2f} x the fastest peer ({fastest})",
                              paired_ratio(results, "minigrad", fastest), TARGET_VS_FASTEST))
        for peer in peers:
            if peer != fastest:
                lines.append(f"  - minigrad / {peer}: {paired_ratio(results, 'minigrad', peer):.2f}")
    if missing:
        lines.append(f"  - not measured (not installed): {', '.join(missing)}")
    if left_out:
        lines.append(f"  - not measured (skipped with --skip): {', '.join(left_out)}")
    if FLOOR in results:
        lines.append(_verdict(f"minigrad <= {TARGET_VS_FLOOR:.2f} x the floor (its nine matmuls alone)",
                              paired_ratio(results, "minigrad", FLOOR), TARGET_VS_FLOOR))
    if BOUND in results:
        against = [(FLOOR, "the floor")] if FLOOR in results else []
        against += [(fastest, f"the fastest peer ({fastest})")] if peers else []
        lines.append(f"- the bound (numpy step, every large pass on both cores): minigrad / bound "
                     f"{paired_ratio(results, 'minigrad', BOUND):.2f}"
                     + "".join(f"; bound / {name} {paired_ratio(results, BOUND, impl):.2f}"
                               for impl, name in against))
    return lines


def _verdict(target: str, ratio: float, limit: float) -> str:
    verdict = "met" if ratio <= limit else f"NOT met (over by {ratio / limit - 1:.0%})"
    return f"- target {target}: {ratio:.2f}, {verdict}"


def overhead_table(impls: list[str], n_ops: int, turns: int = 5) -> list[str]:
    """Per-op cost of building and backpropagating a chain, the implementations taking turns
    (a fresh process each turn), medians over turns; the target is minigrad <= torch eager, as
    the median over turns of the paired ratio (minigrad's total / torch's in the same turn)."""
    lines = [
        f"### Per-op overhead: a chain of {n_ops:,} ops on 8-element float32 tensors",
        "",
        "| implementation | build (us/op) | backward (us/op) | total (us/op) |",
        "|---|---:|---:|---:|",
    ]
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, Any]]] = {impl: [] for impl in impls}
    for turn in range(turns):
        for impl in impls[turn % len(impls):] + impls[:turn % len(impls)]:
            time.sleep(PAUSE_S)
            runs[impl].append(worker("overhead.py", f"--impl={impl}", f"--ops={n_ops}"))
    totals = {impl: [r["build_us"] + r["backward_us"] for r in rs] for impl, rs in runs.items()}
    for impl, rs in runs.items():
        build = statistics.median(r["build_us"] for r in rs)
        backward = statistics.median(r["backward_us"] for r in rs)
        lines.append(f"| {impl} | {build:.1f} | {backward:.1f} | {statistics.median(totals[impl]):.1f} |")
    lines.append("")
    if "minigrad" in totals and "torch" in totals:
        ratios = [a / b for a, b in zip(totals["minigrad"], totals["torch"])]
        lines.append(_verdict("per-op overhead minigrad <= torch eager (build + backward)",
                              statistics.median(ratios), 1.0))
        lines.append(f"  - per-turn ratios: {', '.join(f'{r:.2f}' for r in ratios)}")
    lines.append(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} "
                 f"on {os.cpu_count()} cores")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="small,large", help="comma-separated: small, large")
    parser.add_argument("--rounds", type=int, default=7, help="turns per implementation")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per turn (after one untimed)")
    parser.add_argument("--threads", type=int, default=None, help="limit BLAS and torch threads")
    parser.add_argument("--skip", default="", help="comma-separated implementations to leave out "
                        "(e.g. torch.compile,jax.jit: compiling takes a minute)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 steps: a smoke run")
    parser.add_argument("--per-op-only", action="store_true", help="only the per-op chain (a minute)")
    args = parser.parse_args(argv)
    use_real_kernel()  # before any worker starts: they inherit the environment
    if args.quick:
        args.rounds, args.steps = 2, 2

    skipped = frozenset(name for name in args.skip.split(",") if name)
    impls = [impl for impl in ("minigrad", *PEERS, FLOOR, BOUND) if impl not in skipped
             and (impl not in OPTIONAL or importlib.util.find_spec(OPTIONAL[impl]) is not None)]
    print(f"# minigrad benchmark: python benchmarks/run.py {' '.join(argv or sys.argv[1:])}".rstrip())
    print()
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            print(f"note: {variable}={os.environ[variable]} is set and may make numpy's BLAS pick a "
                  "slower kernel; see docs/performance.md")
    for name in ([] if args.per_op_only else args.shapes.split(",")):
        load_before = os.getloadavg()[0]
        results = run_shape(SHAPES[name], impls, args.rounds, args.steps, args.threads)
        print("\n".join(step_table(name, SHAPES[name], results, skipped)), flush=True)
        # other processes on the machine slow every implementation, threaded ones most
        print(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} cores\n")
    print("\n".join(overhead_table([i for i in impls if i in ("minigrad", "torch")], 10_000)))


if __name__ == "__main__":
    main()
