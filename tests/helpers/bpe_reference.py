"""Byte-pair encoding by its definitions, written the slow and obvious way: what the tests hold
minigrad.learn.bpe's trainer and tokenizers to."""

from __future__ import annotations

from collections import Counter

from minigrad.learn.bpe import merge_pair


def merges_by_recounting(counts: dict[tuple, int], merges: int) -> list[tuple]:
    """Training with nothing kept between merges: recount every pair of every pre-token (a tuple of
    pieces, with how often it occurs), merge the most frequent (a tie to the greater pair), repeat."""
    split = Counter(counts)
    learned = []
    for _ in range(merges):
        pairs: Counter = Counter()
        for pieces, n in split.items():
            for pair in zip(pieces, pieces[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        learned.append(best)
        merged: Counter = Counter()
        for pieces, n in split.items():
            merged[merge_pair(pieces, best)] += n
        split = merged
    return learned


def pieces_by_merging_in_order(pieces: tuple, merges: list[tuple]) -> tuple:
    """Encoding one pre-token: every merge, in the order learned, applied all along it."""
    for pair in merges:
        pieces = merge_pair(pieces, pair)
    return pieces
