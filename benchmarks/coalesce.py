"""Coalescing a lookup's gradient: sort + segmented sum vs np.add.at vs the naive `grad[idx] += g`.

A batch of n token ids reads n rows of a (V, d) table; backward must add the n gradient rows
into the rows they came from, summing repeated ids. Measured side by side in one run:

  sort + run sums        RowSparse.coalesce(): stable argsort, run starts, run sums (sparse out)
  sort + np.add.at       the same with the fast paths off: coalesce()'s plain form (sparse out)
  sort + np.add.reduceat the same sort, with numpy's one-call segmented sum (sparse out)
  unique + np.add.at     np.unique(return_inverse) then np.add.at into (k, d) (sparse out)
  dense np.add.at        np.add.at into a fresh (V, d) zeros (dense out)
  naive dense +=         grad[idx] += g into a fresh (V, d) zeros: fast, and WRONG on repeats

The machine may be shared, so the methods run round-robin and each ratio is the median over
rounds of (method time / sort + run sums time) measured in the same round.

Run:  python -m benchmarks.coalesce [--n 100000 --d 128 --vocab 50000 --ids zipf|uniform]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from minigrad.engine import RowSparse, kernels


def zipf_ids(n: int, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """Token ids with a Zipf-like frequency (rank r drawn with weight 1/r), as in real text."""
    weights = 1.0 / np.arange(1, vocab + 1)
    return rng.choice(vocab, size=n, p=weights / weights.sum())


def sort_segment_sum(ids: np.ndarray, grads: np.ndarray, vocab: int) -> RowSparse:
    return RowSparse(ids, grads, (vocab, grads.shape[1])).coalesce()


def sort_add_at(ids: np.ndarray, grads: np.ndarray, vocab: int) -> RowSparse:
    with kernels.plain_only():
        return RowSparse(ids, grads, (vocab, grads.shape[1])).coalesce()


def sort_reduceat(ids: np.ndarray, grads: np.ndarray, vocab: int) -> RowSparse:
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    values = np.add.reduceat(grads[order], starts, axis=0)
    return RowSparse(sorted_ids[starts], values, (vocab, grads.shape[1]), coalesced=True)


def unique_add_at(ids: np.ndarray, grads: np.ndarray, vocab: int) -> RowSparse:
    rows, slot = np.unique(ids, return_inverse=True)
    values = np.zeros((rows.size, grads.shape[1]), grads.dtype)
    np.add.at(values, slot, grads)
    return RowSparse(rows, values, (vocab, grads.shape[1]), coalesced=True)


def dense_add_at(ids: np.ndarray, grads: np.ndarray, vocab: int) -> np.ndarray:
    out = np.zeros((vocab, grads.shape[1]), grads.dtype)
    np.add.at(out, ids, grads)
    return out


def naive_dense(ids: np.ndarray, grads: np.ndarray, vocab: int) -> np.ndarray:
    out = np.zeros((vocab, grads.shape[1]), grads.dtype)
    out[ids] += grads  # buffered: for a repeated id only one of its rows lands
    return out


METHODS: dict[str, Callable] = {
    "sort + run sums": sort_segment_sum,
    "sort + np.add.at": sort_add_at,
    "sort + np.add.reduceat": sort_reduceat,
    "unique + np.add.at": unique_add_at,
    "dense np.add.at": dense_add_at,
    "naive dense +=": naive_dense,
}


def time_round_robin(calls: dict[str, Callable], rounds: int) -> dict[str, np.ndarray]:
    """Seconds per call, per round; every method runs once in each round, in turn."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: np.array(t) for name, t in times.items()}


def as_dense(result: RowSparse | np.ndarray) -> np.ndarray:
    return result.to_dense() if isinstance(result, RowSparse) else result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="ids in the batch")
    parser.add_argument("--d", type=int, default=128, help="embedding width")
    parser.add_argument("--vocab", type=int, default=50_000, help="rows in the table")
    parser.add_argument("--ids", choices=["zipf", "uniform"], default="zipf", help="id frequencies")
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds (medians are shown)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    if args.ids == "zipf":
        ids = zipf_ids(args.n, args.vocab, rng)
    else:
        ids = rng.integers(0, args.vocab, args.n)
    grads = rng.standard_normal((args.n, args.d)).astype(np.float32)
    counts = np.bincount(ids, minlength=args.vocab)
    distinct, repeated = int((counts > 0).sum()), int((counts > 1).sum())
    print(f"n={args.n} ids ({args.ids}), d={args.d}, V={args.vocab}: {distinct} distinct rows, "
          f"{repeated} of them repeated, the most frequent id {counts.max()} times; float32, "
          f"median of {args.rounds} round-robin rounds")

    # float64 reference, to judge every float32 method
    reference = np.zeros((args.vocab, args.d))
    np.add.at(reference, ids, grads.astype(np.float64))

    calls = {name: (lambda m=method: m(ids, grads, args.vocab)) for name, method in METHODS.items()}
    times = time_round_robin(calls, args.rounds)
    ours = times["sort + run sums"]

    print(f"{'method':<23} {'median':>9} {'ratio':>7} {'result bytes':>13} {'max error':>10} "
          f"{'wrong rows':>11}")
    for name, call in calls.items():
        result = call()
        error = np.abs(as_dense(result) - reference).max(axis=1)
        wrong_rows = int((error > 1e-3).sum())
        ratio = float(np.median(times[name] / ours))
        print(f"{name:<23} {np.median(times[name]) * 1e3:>7.1f}ms {ratio:>6.2f}x "
              f"{result.nbytes / 1e6:>11.1f}MB {error.max():>10.2e} {wrong_rows:>11}")
    print("\nratio: this method's time / sort + run sums' time in the same round (median over rounds)")
    print("wrong rows: rows off by more than 1e-3 from the float64 sum; the naive += keeps one "
          "gradient row per repeated id and drops the others")


if __name__ == "__main__":
    main()
