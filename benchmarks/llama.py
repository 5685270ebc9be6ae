"""One training step of the tied Llama-style model (forward, backward, AdamW), minigrad against
PyTorch eager.

Both start from the same weights (minigrad's Llama(rng=0), copied by name into the PyTorch twin
the tests check it against, tests/helpers/llama_torch.py) and train on the same batch, so their
losses must agree. Each runs in its own process; the processes take turns (benchmarks/run.py's
`run_shape`), so a busy moment on the machine lands on both. The table gives median step times,
the median of the per-round ratios, tokens per second and peak memory; --profile adds where
minigrad's time goes. Without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (benchmarks/real_kernel.py:
they would force numpy's OpenBLAS onto a slower kernel); the kernel each worker got is printed.

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

import tinygpt  # noqa: E402  (its table and profile)
from real_kernel import kernel, use_real_kernel  # noqa: E402
from run import run_shape  # noqa: E402
from step import HYPER, Worker, serve, training_step  # noqa: E402
from tinygpt import batch, torch_training_step  # noqa: E402  (the same batch and PyTorch step)

SHAPE = {"V": 2048, "T": 64, "d": 128, "heads": 4, "layers": 2, "B": 16}  # TinyGPT's base shape


def build_model(V: int, T: int, d: int, heads: int, layers: int) -> Any:
    from minigrad.models import Llama, LlamaConfig

    config = LlamaConfig(vocab_size=V, hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                         max_position_embeddings=T, tie_word_embeddings=True)
    return Llama(config, dtype=np.float32, rng=0)


def model_args(shape: dict[str, int]) -> tuple[int, ...]:
    return tuple(shape[k] for k in ("V", "T", "d", "heads", "layers"))


def minigrad_step(shape: dict[str, int]) -> Callable[[], float]:
    from minigrad.engine import kernels
    from minigrad.optim import AdamW

    kernels.keep_freed_memory()  # opt-in (import does not change the allocator), as train() does
    model = build_model(*model_args(shape))
    ids, targets = batch(shape["V"], shape["T"], shape["B"])
    return training_step(model, AdamW(model.parameters(), **HYPER), ids, targets)


def torch_step(shape: dict[str, int]) -> Callable[[], float]:
    from llama_torch import torch_twin

    return torch_training_step(torch_twin(build_model(*model_args(shape))), shape)


BUILDERS = {"minigrad": minigrad_step, "torch": torch_step}


def table(shape: dict[str, int], results: dict[str, dict[str, Any]]) -> list[str]:
    """benchmarks/tinygpt.py's table, titled for this model, with the kernel each worker got."""
    lines = tinygpt.table("Llama-style", shape, results)
    kernels = "; ".join(f"{impl}: {r['kernel']}" for impl, r in results.items())
    return lines[:1] + ["", f"kernels: {kernels}"] + lines[1:]


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
    use_real_kernel()  # before any worker starts: they inherit the environment
    if args.quick:
        args.rounds, args.steps = 2, 2
    command = f"python benchmarks/llama.py {' '.join(argv or sys.argv[1:])}".rstrip()
    print(f"# Llama-style training step: {command}")
    print(f"\nBLAS (this process): {kernel()}\n")
    impls = ["minigrad"] + (["torch"] if importlib.util.find_spec("torch") else [])
    thread_counts = [int(t) for t in args.threads.split(",")]
    for threads in thread_counts:
        load_before = os.getloadavg()[0]
        results = run_shape(shape, impls, args.rounds, args.steps, threads, script="llama.py")
        print("\n".join(table(shape, results)))
        print(f"load average (1 min) before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores\n", flush=True)
    if args.profile:
        print("\n".join(tinygpt.profile(shape, 5, thread_counts[0], build=minigrad_step)))


if __name__ == "__main__":
    main()
