"""Lesson 14 reference answer."""

from collections import Counter


def best_pair(split_counts: dict[tuple[str, ...], int]) -> tuple[str, str]:
    """The most frequent adjacent pair inside the words, each word weighted by its count; a tie
    goes to the pair that sorts last."""
    counts: Counter = Counter()
    for pieces, n in split_counts.items():
        for pair in zip(pieces, pieces[1:]):  # every adjacent pair, repeats included
            counts[pair] += n
    return max(counts, key=lambda pair: (counts[pair], pair))
