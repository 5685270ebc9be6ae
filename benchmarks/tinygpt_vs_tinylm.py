"""TinyGPT against TinyLM on the lessons' corpus: held-out loss after the same training time.

Both read the default corpus (pydoc_data.topics) with lesson 8's vocabulary (the 2,000 most
frequent words), hold out the same text (the last tenth of each twentieth), train with AdamW
under a warmup-then-cosine schedule, and get the same wall-clock budget of training (evaluation
excluded): each model's step is timed first to plan the schedule's length, and training stops
when the budget is spent (train(max_seconds=)), whichever comes first.

    python benchmarks/tinygpt_vs_tinylm.py --seconds 120 --threads 1

Losses are nats per predicted token on held-out text. TinyLM predicts each token from the 3
before it; TinyGPT predicts every position of its window, the first ones from less context,
so its mean is if anything the harder figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minigrad.learn.data import Vocabulary, load_text, tokenize
from minigrad.learn.train import split_windows, train
from minigrad.models import TinyGPT, TinyLM
from minigrad.nn import functional as F
from minigrad.optim import AdamW
from minigrad.optim import lr_scheduler as S


def schedule(optimizer: AdamW, steps: int) -> S.SequentialLR:
    warmup = max(1, steps // 20)
    return S.SequentialLR(optimizer, [S.LinearLR(optimizer, 0.05, total_iters=warmup),
                                      S.CosineAnnealingLR(optimizer, T_max=max(1, steps - warmup))],
                          milestones=[warmup])


def step_seconds(model, data, batch_size: int, lr: float, probe: int = 10) -> float:
    """Median time of a training step (a throwaway copy of the optimizer; the model is rebuilt after)."""
    optimizer = AdamW(model.parameters(), lr=lr)
    times = []
    for i in range(probe):
        rows = np.arange(i * batch_size, (i + 1) * batch_size) % len(data)
        start = time.perf_counter()
        logits = model(data.ids[rows])  # (B, V) or (B, T, V): one row per predicted token
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), data.targets[rows].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times[2:]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="training time per model")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.threads is not None:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    words = tokenize(load_text())
    vocab = Vocabulary.build(words, max_size=2000)
    tokens = vocab.encode(words)
    V = len(vocab)
    runs = {
        "TinyLM (d=64, hidden 128, context 3, tied)": dict(
            build=lambda: TinyLM(V, 64, 128, 3, tied=True, rng=0),
            context=3, every=False, batch=128, lr=3e-3),
        "TinyGPT (d=64, 4 heads, 2 layers, context 32, tied)": dict(
            build=lambda: TinyGPT(V, 32, 64, 4, 2, tied=True, rng=0),
            context=32, every=True, batch=16, lr=3e-3),
    }
    print(f"# python benchmarks/tinygpt_vs_tinylm.py {' '.join(argv or sys.argv[1:])}".rstrip())
    print(f"corpus: {len(tokens):,} tokens, V = {V}; budget {args.seconds:.0f} s of training per model\n")
    print("| model | parameters | steps | tokens trained | train seconds | held-out loss start -> end |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, run in runs.items():
        train_data, valid_data = split_windows(tokens, run["context"], valid_fraction=0.1, pieces=20,
                                               every_position=run["every"])
        seconds = step_seconds(run["build"](), train_data, run["batch"], run["lr"])
        steps = max(10, int(args.seconds / seconds))
        model = run["build"]()
        optimizer = AdamW(model.parameters(), lr=run["lr"], weight_decay=0.01)
        history = train(model, optimizer, train_data, valid_data, steps=steps, batch_size=run["batch"],
                        scheduler=schedule(optimizer, steps), label=label.split()[0],
                        max_seconds=args.seconds)
        start, end = history.valid_loss[0], history.valid_loss[-1]
        print(f"| {label} | {model.num_parameters():,} | {history.steps:,} | {history.tokens:,} | "
              f"{history.train_seconds:.0f} | {start:.3f} -> {end:.3f} |", flush=True)


if __name__ == "__main__":
    main()
