"""One training step of the tied Llama-style model (forward, backward, AdamW), minigrad against
PyTorch eager.

Both start from the same weights (minigrad's Llama(rng=0), copied by name into the PyTorch twin
the tests check it against, tests/helpers/llama_torch.py) and train on the same batch, so their
losses must agree. Each runs in its own process; the processes take turns (benchmarks/run.py's
`run_shape`), so a busy moment on the machine lands on both. The table gives median step times,
the median of the per-round ratios, tokens per second and peak memory; --profile adds where
minigrad's time goes. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for the worker processes
(they would make numpy's OpenBLAS pick a slower kernel); the kernel each got is printed.

    python benchmarks/llama.py                      # the base shape, 1 and 2 threads
    python benchmarks/llama.py --threads 1 --profile
    python benchmarks/llama.py --quick              # a smoke run
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's minigrad
sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # the PyTorch twin the tests check Llama against
sys.path.insert(0, str(ROOT / "benchmarks"))

from run import paired_ratio, quartiles, run_shape  # noqa: E402
from step import HYPER, Worker, serve, training_step  # noqa: E402

SHAPE = {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 2, "B": 16}  # TinyGPT's base shape
TARGET_VS_TORCH = 1.0
KERNEL_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def build_model(V: int, T: int, d: int, heads: int, layers: int) -> Any:
    from minigrad.models import Llama, LlamaConfig

    config = LlamaConfig(vocab_size=V, hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                         max_position_embeddings=T, tie_word_embeddings=True)
    return Llama(config, dtype=np.float32, rng=0)


def batch(V: int, T: int, B: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    tokens = np.random.default_rng(seed).integers(0, V, (B, T + 1))
    return tokens[:, :-1], tokens[:, 1:]


def model_args(shape: dict[str, int]) -> tuple[int, ...]:
    return tuple(shape[k] for k in ("V", "T", "d", "heads", "layers"))


def minigrad_step(shape: dict[str, int]) -> Callable[[], float]:
    from minigrad.engine import fast
    from minigrad.optim import AdamW

    fast.keep_freed_memory()  # opt-in (import does not change the allocator), as train() does
    model = build_model(*model_args(shape))
    ids, targets = batch(shape["V"], shape["T"], shape["B"])
    return training_step(model, AdamW(model.parameters(), **HYPER), ids, targets)


def torch_step(shape: dict[str, int]) -> Callable[[], float]:
    import torch
    from llama_torch import torch_twin

    twin = torch_twin(build_model(*model_args(shape)))
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


def table(shape: dict[str, int], results: dict[str, dict[str, Any]]) -> list[str]:
    tokens = shape["B"] * shape["T"]
    threads = results["minigrad"]["threads"]
    lines = ["### Llama-style, tied: " + ", ".join(f"{k}={v}" for k, v in shape.items())
             + f", float32; {threads} threads", "",
             "kernels: " + "; ".join(f"{impl}: {r['kernel']}" for impl, r in results.items()), "",
             "| implementation | median step (ms) | quartiles (ms) | steps | x torch | tokens/s "
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


def profile(shape: dict[str, int], steps: int, threads: int | None) -> list[str]:
    """Where a minigrad step's time goes (own time per function), as benchmarks/tinygpt.py shows it."""
    import cProfile
    import io
    import pstats

    from tinygpt import qualified_names

    if threads is not None:
        from threadpoolctl import threadpool_limits

        from minigrad.engine import fast
        threadpool_limits(threads, user_api="blas")
        fast.set_threads(threads)
    step = minigrad_step(shape)
    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = sum(t for (_, _, t, _, _) in stats.stats.values())  # type: ignore[attr-defined]
    names = qualified_names()
    rows = sorted(((own, calls, names.get((file, line), f"{Path(file).name}:{func}"))
                   for (file, line, func), (_, calls, own, _, _) in stats.stats.items()),  # type: ignore[attr-defined]
                  reverse=True)
    lines = [f"### Profile of {steps} minigrad steps, {threads or 'all'} threads (own time per function)",
             "", "| function | calls/step | ms/step | share |", "|---|---:|---:|---:|"]
    for own, calls, where in rows[:20]:
        lines.append(f"| {where} | {calls / steps:.0f} | {1e3 * own / steps:.2f} | {own / total:.0%} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=list(BUILDERS), help="(internal) run one worker")
    parser.add_argument("--serve", action="store_true", help="(internal) take step/finish commands")
    for key, value in SHAPE.items():
        parser.add_argument(f"--{key}", type=int, default=value)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per turn (after one untimed)")
    parser.add_argument("--threads", default="1,2", help="comma-separated BLAS and torch thread counts")
    parser.add_argument("--profile", action="store_true", help="also profile minigrad (first --threads)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 steps")
    args = parser.parse_args(argv)
    shape = {k: getattr(args, k) for k in SHAPE}
    if args.impl:
        import minigrad  # noqa: F401  (both build the weights with it: imported before the baseline)
        serve(Worker(args.impl, lambda: BUILDERS[args.impl](shape), warmup=2, threads=int(args.threads)))
        return
    if args.quick:
        args.rounds, args.steps = 2, 2
    command = f"python benchmarks/llama.py {' '.join(argv or sys.argv[1:])}".rstrip()
    print(f"# Llama-style training step: {command}")
    print()
    for variable in KERNEL_VARIABLES:  # for the workers started below: numpy's real BLAS kernel
        if os.environ.pop(variable, None) is not None:
            print(f"note: unset {variable} for the worker processes (it forces a slower BLAS kernel)")
    impls = ["minigrad"] + (["torch"] if importlib.util.find_spec("torch") else [])
    thread_counts = [int(t) for t in args.threads.split(",")]
    for threads in thread_counts:
        load_before = os.getloadavg()[0]
        results = run_shape(shape, impls, args.rounds, args.steps, threads, script="llama.py")
        print("\n".join(table(shape, results)))
        print(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores\n", flush=True)
    if args.profile:
        print("\n".join(profile(shape, 5, thread_counts[0])))


if __name__ == "__main__":
    main()
