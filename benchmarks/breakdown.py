"""Where a training step's time goes, by kind of work, in minigrad and in PyTorch eager side by side.

minigrad: every op's forward and backward, every kernel, the optimizer's step and the walk are
timed (CPU time of this thread, exclusive of what they call that is timed too) and summed by kind:

    matmuls            Linear, MatMul, the classifier's products (kernels.linear, LinearCrossEntropy's
                       backward)
    softmax / CE       the cross-entropy and softmax ops and kernels.cross_entropy_rows
    norms              LayerNorm, RMSNorm and their kernels
    activations        GELU, SiLU, tanh and their kernels
    attention          scaled dot-product attention, the rotary turn, and their kernels
    embedding          the lookup and its backward's segment sums
    optimizer          optimizer.step (Adam's update, its rows, weight decay)
    elementwise/shape  every other op (+, *, reshape, indexing, ...)
    engine (Python)    what is left: building tensors and nodes, the walk, zero_grad, the loss call

PyTorch: torch.profiler's self CPU time per aten op, in the same kinds by name, scaled to the
step's time without the profiler; what the aten ops do not take (Python, the autograd engine) is
"engine (Python)". The matmul floor is the
step's matrix products alone, timed in numpy on the same shapes.

    python benchmarks/breakdown.py --bench tinygpt --threads 1
    python benchmarks/breakdown.py --bench llama --threads 2 --steps 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from real_kernel import kernel, use_real_kernel  # noqa: E402

KINDS = ("matmuls", "softmax / CE", "norms", "activations", "attention", "embedding", "optimizer",
         "elementwise/shape", "engine (Python)")
OP_KIND = {
    "Linear": "matmuls", "MatMul": "matmuls",
    "CrossEntropy": "softmax / CE", "LinearCrossEntropy": "softmax / CE", "Softmax": "softmax / CE",
    "LogSoftmax": "softmax / CE", "SoftTargetCrossEntropy": "softmax / CE", "NLLLoss": "softmax / CE",
    "LayerNorm": "norms", "RMSNorm": "norms",
    "GELU": "activations", "SiLU": "activations", "Tanh": "activations", "Sigmoid": "activations",
    "ScaledDotProductAttention": "attention", "Rotary": "attention",
    "Embedding": "embedding",
}
KERNEL_KIND = {
    "linear": "matmuls", "cross_entropy_rows": "softmax / CE", "buffer": "softmax / CE",
    "layer_norm": "norms", "layer_norm_backward": "norms",
    "gelu": "activations", "gelu_backward": "activations", "silu": "activations",
    "silu_backward": "activations", "tanh": "activations", "sigmoid": "activations", "erf": "activations",
    "attention": "attention", "attention_backward": "attention", "segment_sums": "embedding",
    "rowwise": "optimizer",
}
TORCH_KIND = [  # (substring of an aten op's name, kind), first match wins
    ("mm", "matmuls"), ("linear", "matmuls"), ("matmul", "matmuls"), ("softmax", "softmax / CE"),
    ("nll", "softmax / CE"), ("cross_entropy", "softmax / CE"), ("layer_norm", "norms"),
    ("rms_norm", "norms"), ("gelu", "activations"), ("silu", "activations"), ("tanh", "activations"),
    ("attention", "attention"), ("embedding", "embedding"), ("adam", "optimizer"), ("_foreach", "optimizer"),
]


class ExclusiveTimer:
    """CPU time per kind, each timed call's own time (its timed callees' time goes to theirs)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.stack: list[list[Any]] = []  # [kind, start, time spent in timed callees]

    @contextmanager
    def timing(self, kind: str) -> Iterator[None]:
        frame = [kind, time.thread_time(), 0.0]
        self.stack.append(frame)
        try:
            yield
        finally:
            self.stack.pop()
            elapsed = time.thread_time() - frame[1]
            self.totals[kind] += elapsed - frame[2]
            if self.stack:
                self.stack[-1][2] += elapsed

    def wrap(self, function: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timing(kind):
                return function(*args, **kwargs)

        return timed


@contextmanager
def minigrad_timed(timer: ExclusiveTimer) -> Iterator[None]:
    """Wrap every op's forward and backward, every kernel and the optimizers' step in the timer."""
    from minigrad import optim
    from minigrad.engine import kernels, ops

    undo: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, kind: str, static: bool) -> None:
        original = vars(owner)[name]
        function = original.__func__ if static else original
        wrapped = timer.wrap(function, kind)
        undo.append((owner, name, original))
        setattr(owner, name, staticmethod(wrapped) if static else wrapped)

    for name, op in vars(ops).items():
        if isinstance(op, type) and issubclass(op, ops.Function) and op is not ops.Function:
            kind = OP_KIND.get(name, "elementwise/shape")
            patch(op, "forward", kind, static=True)
            patch(op, "backward", "matmuls" if name == "LinearCrossEntropy" else kind, static=True)
    for name in kernels.INTERFACE:
        patch(kernels, name, KERNEL_KIND[name], static=False)
    patch(optim.Optimizer, "step", "optimizer", static=False)
    try:
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def minigrad_breakdown(step: Callable[[], float], steps: int) -> dict[str, float]:
    timer = ExclusiveTimer()
    with minigrad_timed(timer):
        step()
        timer.totals.clear()
        with timer.timing("engine (Python)"):
            for _ in range(steps):
                step()
    return {kind: timer.totals.get(kind, 0.0) / steps for kind in KINDS}


def torch_breakdown(step: Callable[[], float], steps: int) -> dict[str, float]:
    """PyTorch's step by kind: each aten op's self CPU time under torch.profiler, scaled by the
    step's time without the profiler over its time with it (the profiler's own cost per op would
    otherwise swell every kind); what is left of the unprofiled step is "engine (Python)"."""
    from torch.profiler import ProfilerActivity, profile

    step()
    start = time.thread_time()
    for _ in range(steps):
        step()
    plain = (time.thread_time() - start) / steps
    start = time.thread_time()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    scale = plain / ((time.thread_time() - start) / steps)
    totals: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        if event.key.startswith("aten::"):
            kind = next((k for pattern, k in TORCH_KIND if pattern in event.key.lower()), "elementwise/shape")
            totals[kind] += event.self_cpu_time_total / 1e6 / steps * scale
    totals["engine (Python)"] = max(0.0, plain - sum(totals.values()))
    return {kind: totals.get(kind, 0.0) for kind in KINDS}


def matmul_floor(products: list[tuple[tuple[int, ...], tuple[int, ...]]], repeats: int = 5) -> float:
    """CPU seconds of the step's matrix products alone in numpy (median of repeats)."""
    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32))
             for a, b in products]
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        for a, b in pairs:
            np.matmul(a, b)
        times.append(time.thread_time() - start)
    return statistics.median(times)


Shape = tuple[int, ...]


def forward_and_backward(a: Shape, b: Shape) -> list[tuple[Shape, Shape]]:
    """A @ B and the two products of its backward, G B^T and A^T G (batch axes kept)."""
    *batch, m, k = a
    p = b[-1]
    return [(a, b), ((*batch, m, p), (*batch, p, k)), ((*batch, k, m), (*batch, m, p))]


def transformer_products(V: int, T: int, d: int, heads: int, layers: int, B: int, ffn: int
                         ) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The matrix products of one forward and backward of a GPT-style step with a tied head:
    per layer the q, k, v map, the two attention products, the output map, the feed-forward's two
    maps (Llama's SwiGLU has three: pass ffn as 1.5 times its hidden size), and the head."""
    n, e, heads_batch = B * T, d // heads, B * heads
    layer = [((n, d), (d, 3 * d)), ((heads_batch, T, e), (heads_batch, e, T)),
             ((heads_batch, T, T), (heads_batch, T, e)), ((n, d), (d, d)), ((n, d), (d, ffn)),
             ((n, ffn), (ffn, d))]
    return [p for a, b in layer * layers + [((n, d), (d, V))] for p in forward_and_backward(a, b)]


def llama_hidden(module: Any, shape: dict[str, int]) -> int:
    """The Llama-style model's feed-forward width, read off the model the benchmark builds."""
    model = module.build_model(*module.model_args(shape))
    return int(model.model.layers[0].mlp.gate_proj.weight.shape[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", choices=["tinygpt", "llama"], default="tinygpt")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    use_real_kernel()
    from threadpoolctl import threadpool_limits

    import minigrad

    threadpool_limits(args.threads, user_api="blas")
    minigrad.kernels.set_threads(args.threads)
    module = __import__(args.bench)
    shape = getattr(module, "SHAPE", None) or module.SHAPES["base"]
    columns = {"minigrad": minigrad_breakdown(module.minigrad_step(shape), args.steps)}
    if not args.no_torch:
        import torch

        torch.set_num_threads(args.threads)
        columns["torch eager"] = torch_breakdown(module.torch_step(shape), args.steps)
    ffn = 4 * shape["d"] if args.bench == "tinygpt" else 3 * llama_hidden(module, shape) // 2
    sizes = {k: shape[k] for k in ("V", "T", "d", "heads", "layers", "B")}
    floor = matmul_floor(transformer_products(**sizes, ffn=ffn))
    lines = [f"### {args.bench} step by kind of work, {args.threads} thread(s), ms per step (CPU time)",
             f"shape {shape}; BLAS {kernel()}", "",
             "| kind | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for kind in KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{c[kind] * 1e3:.2f}" for c in columns.values()) + " |")
    lines.append("| total | " + " | ".join(f"{sum(c.values()) * 1e3:.2f}" for c in columns.values()) + " |")
    lines += ["", f"matmul floor (the step's products alone in numpy): {floor * 1e3:.2f} ms"]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
