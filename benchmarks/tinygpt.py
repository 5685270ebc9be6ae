"""One TinyGPT training step (forward, backward, AdamW), minigrad against PyTorch eager.

Both start from the same weights (minigrad's TinyGPT(rng=0), copied into a nanoGPT-style
PyTorch twin by name) and train on the same batch, so their losses must agree. Each runs in
its own process; the processes take turns (benchmarks/run.py's `run_shape`), so a busy moment
on the machine lands on both. The table gives median step times, the median of the per-round
ratios, tokens per second and peak memory; --profile adds where minigrad's time goes.

    python benchmarks/tinygpt.py                    # the three shapes, both threads settings
    python benchmarks/tinygpt.py --shapes base --threads 1 --profile
    python benchmarks/tinygpt.py --quick            # a smoke run
    python benchmarks/tinygpt.py --ops              # each fast form against the plain form
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's minigrad
sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # the PyTorch twin the tests check TinyGPT against
sys.path.insert(0, str(ROOT / "benchmarks"))

from real_kernel import kernel, use_real_kernel  # noqa: E402
from run import paired_ratio, quartiles, run_shape  # noqa: E402
from step import HYPER, Worker, serve, training_step  # noqa: E402

SHAPES = {
    "base": {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 2, "B": 16},
    "batch64": {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 2, "B": 64},
    "layers4": {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 4, "B": 16},
}
TARGET_VS_TORCH = 1.0


def build_model(V: int, T: int, d: int, heads: int, layers: int) -> Any:
    from minigrad.models import TinyGPT

    return TinyGPT(V, T, d, heads, layers, tied=True, dtype=np.float32, rng=0)


def batch(V: int, T: int, B: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    tokens = np.random.default_rng(seed).integers(0, V, (B, T + 1))
    return tokens[:, :-1], tokens[:, 1:]


def minigrad_step(shape: dict[str, int]) -> Callable[[], float]:
    from minigrad.engine import kernels
    from minigrad.optim import AdamW

    kernels.keep_freed_memory()  # opt-in (import does not change the allocator), as train() does

    model = build_model(*(shape[k] for k in ("V", "T", "d", "heads", "layers")))
    ids, targets = batch(shape["V"], shape["T"], shape["B"])
    return training_step(model, AdamW(model.parameters(), **HYPER), ids, targets)


def torch_step(shape: dict[str, int]) -> Callable[[], float]:
    from nanogpt_torch import torch_twin

    model = build_model(*(shape[k] for k in ("V", "T", "d", "heads", "layers")))
    return torch_training_step(torch_twin(model), shape)


def torch_training_step(twin: Any, shape: dict[str, int]) -> Callable[[], float]:
    """One PyTorch eager step of `twin` (ids (B, T) -> logits (B, T, V)) on the batch minigrad
    trains on: zero_grad, cross-entropy, backward, AdamW with minigrad's hyperparameters."""
    import torch

    lr, betas, eps, wd = HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]
    optimizer = torch.optim.AdamW(twin.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=wd)
    ids, targets = (torch.from_numpy(a) for a in batch(shape["V"], shape["T"], shape["B"]))

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        logits = twin(ids)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


BUILDERS = {"minigrad": minigrad_step, "torch": torch_step}


def table(name: str, shape: dict[str, int], results: dict[str, dict[str, Any]]) -> list[str]:
    tokens = shape["B"] * shape["T"]
    lines = [f"### {name}: " + ", ".join(f"{k}={v}" for k, v in shape.items()) + f", float32, tied; "
             f"{results['minigrad']['threads']} threads",
             "", "| implementation | median step (ms) | quartiles (ms) | steps | x torch | tokens/s "
             "| peak RSS growth (MiB) | tracemalloc peak (MiB) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for impl, r in results.items():
        q1, median, q3 = quartiles(r["times"])
        vs = f"{paired_ratio(results, impl, 'torch'):.2f}" if "torch" in results else "-"
        traced = f"{r['traced_peak_mib']:.0f}" if "traced_peak_mib" in r else "-"
        lines.append(f"| {impl} | {median:.1f} | {q1:.1f}-{q3:.1f} | {len(r['times'])} | {vs} "
                     f"| {tokens / (median / 1e3):,.0f} | {r['peak_mib']:.0f} | {traced} |")
    if "torch" in results:
        ratio = paired_ratio(results, "minigrad", "torch")
        verdict = "met" if ratio <= TARGET_VS_TORCH else f"NOT met (by {ratio / TARGET_VS_TORCH - 1:.0%})"
        lines += ["", f"- target minigrad <= {TARGET_VS_TORCH:.1f} x torch eager: {ratio:.2f}, {verdict}"]
    return lines + [""]


def qualified_names() -> dict[tuple[str, int], str]:
    """(file, first line) -> 'LayerNorm.backward' or 'fast.gelu_float32.work' for every function
    of minigrad's modules and the functions nested in them: the profiler names a function by
    file, line and bare name, and every op has a `forward` and many fast forms a `work`."""
    names = {}

    def add(code: Any, qualified: str) -> None:
        names[(code.co_filename, code.co_firstlineno)] = qualified
        for const in code.co_consts:
            if hasattr(const, "co_firstlineno"):  # a nested function (a row-block `work`)
                add(const, f"{qualified}.{const.co_name}")

    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("minigrad"):
            continue
        short = module_name.rsplit(".", 1)[-1]
        for name, value in vars(module).items():
            members = vars(value).items() if isinstance(value, type) else [(None, value)]
            for attr, member in members:
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if code is not None and code.co_filename == getattr(module, "__file__", None):
                    add(code, f"{name}.{code.co_name}" if attr else f"{short}.{code.co_name}")
    return names


def profile(shape: dict[str, int], steps: int, threads: int | None,
            build: Callable[[dict[str, int]], Callable[[], float]] | None = None) -> list[str]:
    """Where a minigrad step's time goes: the ops' forwards and backwards, the optimizer, the engine.
    build: makes the step (default: this file's TinyGPT step; benchmarks/llama.py passes its own)."""
    if threads is not None:
        from threadpoolctl import threadpool_limits

        from minigrad.engine import kernels
        threadpool_limits(threads, user_api="blas")
        kernels.set_threads(threads)  # as the timed worker does
    step = (build or minigrad_step)(shape)
    step()
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        step()
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before) / steps
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = sum(t for (_, _, t, _, _) in stats.stats.values())  # type: ignore[attr-defined]
    names = qualified_names()
    rows = []
    for (file, line, func), (_, calls, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((own, calls, names.get((file, line), f"{Path(file).name}:{func}")))
    rows.sort(reverse=True)
    lines = [f"### Profile of {steps} minigrad steps, {threads or 'all'} threads (own time per function)",
             "", "| function | calls/step | ms/step | share |", "|---|---:|---:|---:|"]
    for own, calls, where in rows[:15]:
        lines.append(f"| {where} | {calls / steps:.0f} | {1e3 * own / steps:.2f} | {own / total:.0%} |")
    # memory the kernel maps in again each step (freed and re-touched): kernels.keep_freed_memory
    return lines + ["", f"page faults per step (unprofiled): {faults:,.0f}", ""]


def op_costs(repeats: int = 20) -> list[str]:
    """Each TinyGPT fast form against its plain form (kernels.plain_only()): one op's forward and
    backward at the base shape, on one core (BLAS and row blocks), CPU time, best of `repeats`."""
    import time

    from threadpoolctl import threadpool_limits

    from minigrad.engine import Tensor, kernels
    from minigrad.nn import functional as F
    threadpool_limits(1, user_api="blas")
    kernels.set_threads(1)
    g = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return g.standard_normal(shape, dtype=np.float32)

    heads = [np.ascontiguousarray(normal(16, 4, 64, 32)) for _ in range(3)]
    cases = {
        "Linear (16, 64, 128) -> 512": (F.linear, (normal(16, 64, 128), normal(512, 128), normal(512))),
        "GELU (16, 64, 512)": (F.gelu, (normal(16, 64, 512),)),
        "LayerNorm (16, 64, 128)": (lambda x, w, b: F.layer_norm(x, 128, w, b),
                                    (normal(16, 64, 128), normal(128), normal(128))),
        "attention (16, 4, 64, 32), causal": (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), heads),
    }

    def best_ms(op: Callable[..., Any], arrays: Any, n: int) -> float:
        times = []
        for _ in range(n + 1):
            leaves = [Tensor(a, requires_grad=True) for a in arrays]
            start = time.thread_time()
            out = op(*leaves)
            out.backward(np.ones(out.shape, np.float32))
            times.append(time.thread_time() - start)
        return 1e3 * min(times[1:])

    lines = ["### Each fast form against the plain form (forward + backward, one core, best CPU time)",
             "", "| op | fast (ms) | plain (ms) | plain / fast |", "|---|---:|---:|---:|"]
    for name, (op, arrays) in cases.items():
        fast_ms = best_ms(op, arrays, repeats)
        with kernels.plain_only():
            plain_ms = best_ms(op, arrays, 3 if name.startswith("GELU") else repeats)  # math.erf: slow
        lines.append(f"| {name} | {fast_ms:.2f} | {plain_ms:.2f} | {plain_ms / fast_ms:.1f} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=list(BUILDERS), help="(internal) run one worker")
    parser.add_argument("--serve", action="store_true", help="(internal) take step/finish commands")
    for key, value in SHAPES["base"].items():
        parser.add_argument(f"--{key}", type=int, default=value)
    parser.add_argument("--shapes", default="base,batch64,layers4")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per turn (after one untimed)")
    parser.add_argument("--threads", type=int, default=None, help="BLAS and torch threads (default: all)")
    parser.add_argument("--profile", action="store_true", help="also profile minigrad on the first shape")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 steps")
    parser.add_argument("--ops", action="store_true", help="only: each fast form against the plain form")
    args = parser.parse_args(argv)
    if not args.impl:
        use_real_kernel()  # the workers inherit the environment; a worker is already without them
    if args.ops:
        print("\n".join(op_costs()))
        return
    if args.impl:
        shape = {k: getattr(args, k) for k in SHAPES["base"]}
        import minigrad  # noqa: F401  (both build the weights with it: imported before the baseline)
        serve(Worker(args.impl, lambda: BUILDERS[args.impl](shape), warmup=2, threads=args.threads))
        return
    if args.quick:
        args.rounds, args.steps = 2, 2
    impls = ["minigrad"] + (["torch"] if importlib.util.find_spec("torch") else [])
    print(f"# TinyGPT training step: python benchmarks/tinygpt.py {' '.join(argv or sys.argv[1:])}".rstrip())
    print(f"\nBLAS (this process): {kernel()}\n")
    names = args.shapes.split(",")
    for name in names:
        load_before = os.getloadavg()[0]
        results = run_shape(SHAPES[name], impls, args.rounds, args.steps, args.threads, script="tinygpt.py")
        print("\n".join(table(name, SHAPES[name], results)))
        print(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores\n", flush=True)
    if args.profile:
        print("\n".join(profile(SHAPES[names[0]], 5, args.threads)))


if __name__ == "__main__":
    main()
