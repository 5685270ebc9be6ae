"""One training step of a tied-embedding model, written in minigrad, hand-written numpy, PyTorch
(eager and torch.compile) and JAX (jax.jit), plus the floor: the step's own matmuls alone.

The model: ids (N,) -> embedding E (V, d) -> tanh MLP d -> H -> d -> logits = h E^T (the tied
table read a second time, as the unembedding) -> mean cross-entropy -> AdamW on every parameter.
E's gradient is the sum of a row-sparse part (the lookup) and a dense part (the classifier).

Each implementation starts from the same seeded parameters and the same batch, so the losses
they print must agree; `benchmarks/run.py` checks that before it reports any time.

Run one implementation directly (run.py starts one such process per implementation, with --serve):
    python benchmarks/step.py --impl minigrad --V 8192 --d 128 --H 512 --N 2048 --steps 5
It prints one JSON line: step times, losses, and memory figures.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# Measure the minigrad of this checkout, not whichever one the environment has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HYPER = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
IMPLEMENTATIONS = ("minigrad", "numpy", "torch", "torch.compile", "jax.jit", "matmuls", "bound")


# ---- the shared starting point ------------------------------------------------------------------

def initial_state(V: int, d: int, H: int, N: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Float32 parameters (PyTorch's layout: Linear weight is (out, in)) and one batch."""
    rng = np.random.default_rng(seed)

    def uniform(fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
        bound = 1.0 / math.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        # small init: with N(0, 1) a tied head gives logits of size ~d and a saturated softmax
        "E": (0.02 * rng.standard_normal((V, d))).astype(np.float32),
        "W1": uniform(d, (H, d)), "b1": uniform(d, (H,)),
        "W2": uniform(H, (d, H)), "b2": uniform(H, (d,)),
        "ids": rng.integers(0, V, N), "targets": rng.integers(0, V, N),
    }


# ---- minigrad ---------------------------------------------------------------------------------

def minigrad_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The model written as a learner would write it: Modules, the tied head and its loss as
    F.linear_cross_entropy (F.linear then F.cross_entropy compute the same numbers)."""
    import minigrad as mg
    from minigrad.engine import kernels
    from minigrad.nn import Embedding, Linear, Module
    from minigrad.nn import functional as F
    from minigrad.optim import AdamW

    kernels.keep_freed_memory()  # opt-in (import does not change the allocator), as train() does
    V, d = state["E"].shape
    H = state["W1"].shape[0]

    class TiedMLP(Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = Embedding(V, d, sparse=True)
            self.fc1 = Linear(d, H)
            self.fc2 = Linear(H, d)

        def forward(self, ids: np.ndarray) -> mg.Tensor:
            return F.linear(self.features(ids), self.emb.weight)  # the tied unembedding's logits

        def features(self, ids: np.ndarray) -> mg.Tensor:
            return self.fc2(F.tanh(self.fc1(self.emb(ids))))

        def loss(self, ids: np.ndarray, targets: np.ndarray) -> mg.Tensor:
            # the tied head and its loss as one op: the same numbers as
            # F.cross_entropy(self(ids), targets), with the logits turned into dz in place
            return F.linear_cross_entropy(self.features(ids), self.emb.weight, targets)

    model = TiedMLP()
    model.load_state_dict({
        "emb.weight": state["E"], "fc1.weight": state["W1"], "fc1.bias": state["b1"],
        "fc2.weight": state["W2"], "fc2.bias": state["b2"],
    })
    return training_step(model, AdamW(model.parameters(), **HYPER), state["ids"], state["targets"])


def training_step(model: Any, optimizer: Any, ids: np.ndarray, targets: np.ndarray) -> Callable[[], float]:
    """One minigrad step as a learner writes it: zero_grad, the model's loss, backward, step."""

    def step() -> float:
        optimizer.zero_grad()
        loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


# ---- hand-written numpy: the floor for an engine built on numpy ---------------------------------

class AdamWState:
    """PyTorch's AdamW, in place, with one scratch buffer per parameter (no temporaries).

    p <- p (1 - lr wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
    p <- p - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
    """

    def __init__(self, p: np.ndarray) -> None:
        self.m, self.v, self.scratch = np.zeros_like(p), np.zeros_like(p), np.empty_like(p)
        self.t = 0

    def update(self, p: np.ndarray, g: np.ndarray, lo: int | None = None, hi: int | None = None) -> None:
        """One step on rows lo:hi (every row by default); the caller counts the steps (t)."""
        lr, (b1, b2), eps, wd = HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]
        t = self.t + 1
        m, v, s, p, g = self.m[lo:hi], self.v[lo:hi], self.scratch[lo:hi], p[lo:hi], g[lo:hi]
        p *= 1 - lr * wd
        m *= b1
        np.multiply(g, 1 - b1, out=s)
        m += s
        v *= b2
        np.multiply(g, g, out=s)
        s *= 1 - b2
        v += s
        np.sqrt(v, out=s)
        s *= 1 / math.sqrt(1 - b2**t)
        s += eps
        np.divide(m, s, out=s)
        s *= lr / (1 - b1**t)
        p -= s


def numpy_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """Forward and backward derived by hand, every large array reused in place."""
    E, W1, b1, W2, b2 = (state[k].copy() for k in ("E", "W1", "b1", "W2", "b2"))
    params = [E, W1, b1, W2, b2]
    optimizer = [AdamWState(p) for p in params]
    ids, targets = state["ids"], state["targets"]
    N = ids.size
    rows = np.arange(N)

    def step() -> float:
        x = E[ids]                                   # (N, d)
        h = x @ W1.T
        h += b1
        np.tanh(h, out=h)                            # (N, H)
        o = h @ W2.T
        o += b2                                      # (N, d)
        z = o @ E.T                                  # (N, V) logits
        z -= z.max(axis=1, keepdims=True)            # stable softmax, in place
        picked = z[rows, targets]
        np.exp(z, out=z)
        total = z.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) - picked))
        z *= 1.0 / (N * total)                       # dz = (p - y) / N, still in place
        z[rows, targets] -= 1.0 / N
        dE = z.T @ o                                 # classifier part of E's gradient
        do = z @ E
        dW2, db2 = do.T @ h, do.sum(axis=0)
        dh = do @ W2
        h *= h
        np.subtract(1, h, out=h)
        dh *= h                                      # tanh' = 1 - tanh^2
        dW1, db1 = dh.T @ x, dh.sum(axis=0)
        np.add.at(dE, ids, dh @ W1)                  # lookup part: repeated ids add up
        for p, g, opt in zip(params, (dE, dW1, db1, dW2, db2), optimizer):
            opt.update(p, g)
            opt.t += 1
        return loss

    return step


# ---- the bound: the numpy step with every large elementwise pass on both cores ------------------

def softmax_dz_rows(z: np.ndarray, targets: np.ndarray, total: np.ndarray, picked: np.ndarray,
                    n: int, lo: int, hi: int) -> None:
    """Rows lo:hi of the logits z become dz = (softmax - onehot) / n, in place.

    Keeps each row's shifted target logit in `picked` and its sum of exponentials in `total`
    (the loss is log(total) - picked). Shared by the bound step and step_parts.py.
    """
    block, y = z[lo:hi], targets[lo:hi]
    np.subtract(block, block.max(axis=1, keepdims=True), out=block)
    picked[lo:hi] = np.take_along_axis(block, y, axis=1)
    np.exp(block, out=block)
    np.sum(block, axis=1, keepdims=True, out=total[lo:hi])
    block *= 1.0 / (n * total[lo:hi])
    np.put_along_axis(block, y, np.take_along_axis(block, y, axis=1) - 1.0 / n, axis=1)


def bound_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The hand-written numpy step, with every array preallocated (no page faults) and every large
    elementwise pass (the softmax and dz over the (N, V) logits, tanh, AdamW) in cache-sized row
    blocks on two threads (minigrad's fast kernels' `in_row_blocks`). Not a peer: what a step on numpy's
    BLAS and ufuncs costs at least on this machine, against which the targets can be judged."""
    from minigrad.engine.kernels import fast

    E, W1, b1, W2, b2 = (state[k].copy() for k in ("E", "W1", "b1", "W2", "b2"))
    params = [E, W1, b1, W2, b2]
    optimizer = [AdamWState(p) for p in params]
    ids, targets = state["ids"], state["targets"][:, None]
    N, V, H = ids.size, E.shape[0], W1.shape[0]
    h, z, slope = (np.empty(shape, np.float32) for shape in ((N, H), (N, V), (N, H)))
    total, picked = np.empty((N, 1), np.float32), np.empty((N, 1), np.float32)

    def dz_rows(lo: int, hi: int) -> None:
        softmax_dz_rows(z, targets, total, picked, N, lo, hi)

    def tanh_rows(lo: int, hi: int) -> None:
        np.tanh(h[lo:hi], out=h[lo:hi])

    def step() -> float:
        x = E[ids]
        np.matmul(x, W1.T, out=h)
        np.add(h, b1, out=h)
        fast.in_row_blocks(N, H * 4, tanh_rows)
        o = h @ W2.T
        o += b2
        np.matmul(o, E.T, out=z)
        fast.in_row_blocks(N, V * 4, dz_rows)
        loss = float(np.mean(np.log(total[:, 0]) - picked[:, 0]))
        dE = z.T @ o
        do = z @ E
        dW2, db2 = do.T @ h, do.sum(axis=0)
        dh = do @ W2
        np.multiply(h, h, out=slope)
        np.subtract(1, slope, out=slope)
        dh *= slope
        dW1, db1 = dh.T @ x, dh.sum(axis=0)
        np.add.at(dE, ids, dh @ W1)
        for p, g, opt in zip(params, (dE, dW1, db1, dW2, db2), optimizer):
            fast.in_row_blocks(len(p), p[:1].nbytes, functools.partial(opt.update, p, g))
            opt.t += 1
        return loss

    return step


# ---- PyTorch eager ----------------------------------------------------------------------------

def torch_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The same model in PyTorch: nn.Embedding(sparse=True) tied to F.linear, default AdamW."""
    import torch
    import torch.nn.functional as TF
    from torch import nn

    V, d = state["E"].shape
    H = state["W1"].shape[0]
    emb, fc1, fc2 = nn.Embedding(V, d, sparse=True), nn.Linear(d, H), nn.Linear(H, d)
    with torch.no_grad():
        for tensor, key in ((emb.weight, "E"), (fc1.weight, "W1"), (fc1.bias, "b1"),
                            (fc2.weight, "W2"), (fc2.bias, "b2")):
            tensor.copy_(torch.from_numpy(state[key]))
    params = [*emb.parameters(), *fc1.parameters(), *fc2.parameters()]
    lr, betas, eps, wd = HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]
    optimizer = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=wd)
    ids, targets = torch.from_numpy(state["ids"]), torch.from_numpy(state["targets"])

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        logits = TF.linear(fc2(torch.tanh(fc1(emb(ids)))), emb.weight)
        loss = TF.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


# ---- PyTorch with torch.compile ------------------------------------------------------------------

def torch_compile_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The same model, forward and loss compiled by torch.compile (Inductor; AOTAutograd
    compiles the backward too); the optimizer is PyTorch's foreach AdamW. The embedding is dense here:
    compiled graphs do not take sparse gradients, and a dense (V, d) gradient is what they fuse."""
    import torch
    import torch.nn.functional as TF

    params = [torch.from_numpy(state[k].copy()).requires_grad_() for k in ("E", "W1", "b1", "W2", "b2")]
    E, W1, b1, W2, b2 = params
    lr, betas, eps, wd = HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]
    optimizer = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=wd)
    ids, targets = torch.from_numpy(state["ids"]), torch.from_numpy(state["targets"])

    @torch.compile
    def loss_of(ids: Any, targets: Any) -> Any:
        h = torch.tanh(TF.linear(TF.embedding(ids, E), W1, b1))
        return TF.cross_entropy(TF.linear(TF.linear(h, W2, b2), E), targets)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(ids, targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


# ---- JAX with jax.jit -----------------------------------------------------------------------------

def jax_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The same model and PyTorch's AdamW written in JAX, the whole step in one jax.jit."""
    import jax
    import jax.numpy as jnp

    lr, (beta1, beta2), eps, wd = HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]
    keys = ("E", "W1", "b1", "W2", "b2")
    params = {k: jnp.asarray(state[k]) for k in keys}
    moments = {k: (jnp.zeros_like(v), jnp.zeros_like(v)) for k, v in params.items()}
    ids, targets = jnp.asarray(state["ids"]), jnp.asarray(state["targets"])

    def loss_of(p: dict, ids: Any, targets: Any) -> Any:
        h = jnp.tanh(p["E"][ids] @ p["W1"].T + p["b1"])
        logits = (h @ p["W2"].T + p["b2"]) @ p["E"].T
        log_p = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(log_p, targets[:, None], axis=-1))

    @jax.jit
    def train_step(p: dict, moments: dict, t: Any, ids: Any, targets: Any) -> tuple:
        loss, grads = jax.value_and_grad(loss_of)(p, ids, targets)
        new_p, new_moments = {}, {}
        for k in keys:
            m, v = moments[k]
            g = grads[k]
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            denom = jnp.sqrt(v) / jnp.sqrt(1 - beta2**t) + eps
            new_p[k] = p[k] * (1 - lr * wd) - (lr / (1 - beta1**t)) * m / denom
            new_moments[k] = (m, v)
        return loss, new_p, new_moments

    box = {"p": params, "moments": moments, "t": 0}

    def step() -> float:
        box["t"] += 1
        loss, box["p"], box["moments"] = train_step(box["p"], box["moments"], float(box["t"]),
                                                    ids, targets)
        return float(loss)

    return step


# ---- the floor: the step's own matmuls, nothing else ---------------------------------------------

def matmuls_step(state: dict[str, np.ndarray]) -> Callable[[], float]:
    """The nine matrix products one step needs (three forward, six backward), into preallocated
    arrays: no engine, no softmax, no optimizer. No step built on numpy's BLAS can be faster."""
    E, W1, W2 = state["E"], state["W1"], state["W2"]
    N, (V, d), H = state["ids"].size, E.shape, W1.shape[0]
    x = E[state["ids"]]
    out = {name: np.empty(shape, np.float32) for name, shape in (
        ("h", (N, H)), ("o", (N, d)), ("z", (N, V)), ("dE", (V, d)), ("do", (N, d)),
        ("dW2", (d, H)), ("dh", (N, H)), ("dW1", (H, d)), ("dx", (N, d)))}
    z_grad = np.full((N, V), 1e-4, np.float32)  # stands in for dz (values do not change the time)

    def step() -> float:
        np.matmul(x, W1.T, out=out["h"])
        np.matmul(out["h"], W2.T, out=out["o"])
        np.matmul(out["o"], E.T, out=out["z"])
        np.matmul(z_grad.T, out["o"], out=out["dE"])
        np.matmul(z_grad, E, out=out["do"])
        np.matmul(out["do"].T, out["h"], out=out["dW2"])
        np.matmul(out["do"], W2, out=out["dh"])
        np.matmul(out["dh"].T, x, out=out["dW1"])
        np.matmul(out["dh"], W1, out=out["dx"])
        return float("nan")  # no loss: run.py leaves the floor out of the loss comparison

    return step


BUILDERS = {"minigrad": minigrad_step, "numpy": numpy_step, "torch": torch_step,
            "torch.compile": torch_compile_step, "jax.jit": jax_step, "matmuls": matmuls_step,
            "bound": bound_step}
TORCH_IMPLS = ("torch", "torch.compile")


# ---- measuring ----------------------------------------------------------------------------------

def blas_threads() -> tuple[int, str]:
    """How many threads numpy's BLAS uses, and which kernel it picked (via threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return os.cpu_count() or 1, "unknown (threadpoolctl not installed)"
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            return int(pool["num_threads"]), f"{pool['internal_api']} {pool.get('architecture', '?')}"
    return 1, "no BLAS pool found"


def _rss_kib(field: str) -> float:
    """VmRSS or VmHWM (peak) of this process in KiB, from /proc on Linux; elsewhere the peak
    from getrusage (in bytes on macOS), or NaN where neither exists (Windows)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        import resource
    except ImportError:
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else peak


def _reset_peak_rss() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak is this worker's own."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # elsewhere the peak includes the imports: a little high, never low


class Worker:
    """One implementation in its own process: built, warmed up, then timed a step at a time.

    build() makes the step function (after the memory baseline, so the peak is the step's own).
    """

    def __init__(self, impl: str, build: Callable[[], Callable[[], float]], warmup: int,
                 threads: int | None):
        if threads is not None:
            from threadpoolctl import threadpool_limits
            threadpool_limits(threads, user_api="blas")
        self.impl = impl
        self.threads, self.kernel = blas_threads()
        if impl in TORCH_IMPLS:
            import torch
            torch.set_num_threads(self.threads)  # the same number of threads as numpy's BLAS
            self.kernel = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        elif impl == "jax.jit":
            import jax
            self.kernel = f"jax {jax.__version__} (XLA CPU; thread count its own)"
        elif impl == "minigrad":
            from minigrad.engine import kernels  # imported before the memory baseline, like torch
            if threads is not None:
                kernels.set_threads(threads)  # its row blocks too: no second core at --threads 1
        _reset_peak_rss()
        self.baseline_kib = _rss_kib("VmRSS")
        self.step = build()
        start = time.perf_counter()
        self.losses = [self.step()]  # the first step compiles (torch.compile, jax.jit)
        self.first_step_s = time.perf_counter() - start
        self.losses += [self.step() for _ in range(warmup - 1)]

    def timed_step(self) -> dict[str, float]:
        start = time.perf_counter()
        loss = self.step()
        return {"time": time.perf_counter() - start, "loss": loss}

    def memory(self) -> dict[str, float]:
        """Peak resident growth over everything so far, then one more step under tracemalloc."""
        result = {"peak_mib": (_rss_kib("VmHWM") - self.baseline_kib) / 1024}
        if self.impl in ("minigrad", "numpy", "matmuls", "bound"):  # tracemalloc sees numpy's arrays only
            tracemalloc.start()
            self.step()
            result["traced_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        return result

    def describe(self) -> dict[str, Any]:
        return {"impl": self.impl, "threads": self.threads, "kernel": self.kernel, "losses": self.losses,
                "first_step_s": self.first_step_s}


def serve(worker: Worker) -> None:
    """The protocol run.py speaks, one JSON line per answer: `step` times one step, `finish`
    reports memory and exits. Between steps this process sleeps on stdin, using no CPU."""
    _send_line(worker.describe())
    for command in sys.stdin:
        if command.strip() == "step":
            _send_line(worker.timed_step())
        elif command.strip() == "finish":
            _send_line(worker.memory())
            return


def _send_line(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=IMPLEMENTATIONS, required=True)
    for name, default in (("V", 8192), ("d", 128), ("H", 512), ("N", 2048)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--steps", type=int, default=5, help="steps to time (without --serve)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (at least 1)")
    parser.add_argument("--threads", type=int, default=None, help="limit numpy's BLAS (and torch) threads")
    parser.add_argument("--serve", action="store_true", help="take `step`/`finish` commands on stdin")
    args = parser.parse_args(argv)
    shape = (args.V, args.d, args.H, args.N)
    worker = Worker(args.impl, lambda: BUILDERS[args.impl](initial_state(*shape)), args.warmup, args.threads)
    if args.serve:
        serve(worker)
        return
    steps = [worker.timed_step() for _ in range(args.steps)]
    _send_line({**worker.describe(), "times": [s["time"] for s in steps],
                "losses": worker.losses + [s["loss"] for s in steps], **worker.memory()})


if __name__ == "__main__":
    main()
