"""Lesson 14's check: byte-pair training's next pair; the usual slips are named."""

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from minigrad.learn import course as runner

check = runner.load_check(runner.get_lesson(14, Path(__file__).resolve().parents[2] / "lessons"))


def best(counts: Counter, first: bool = False):
    """The pair with the highest count; a tie to the pair that sorts last (or first)."""
    if first:
        return min(counts, key=lambda pair: (-counts[pair], pair))
    return max(counts, key=lambda pair: (counts[pair], pair))


def weighted(split_counts, once=False, per_word=False):
    counts = Counter()
    for pieces, n in split_counts.items():
        pairs = list(zip(pieces, pieces[1:]))
        for pair in set(pairs) if per_word else pairs:
            counts[pair] += 1 if once else n
    return counts


def across_words(split_counts):
    stream = [piece for pieces, n in split_counts.items() for _ in range(n) for piece in pieces]
    return Counter(zip(stream, stream[1:]))


def answers(fn):
    return SimpleNamespace(best_pair=fn)


def test_the_reference_passes():
    check(answers(lambda split_counts: best(weighted(split_counts))))


@pytest.mark.parametrize("wrong, message", [
    (lambda s: best(weighted(s, once=True)), r"each word's pairs were counted once"),
    (lambda s: best(weighted(s, per_word=True)), r"a pair that comes twice in one word was counted once"),
    (lambda s: best(weighted(s), first=True), r"a tie went to the pair that sorts first"),
    (lambda s: best(across_words(s)), r"pairs were counted across two words"),
    (lambda s: "".join(best(weighted(s))), r"return a pair of pieces, a tuple of two strings"),
    (lambda s: best(weighted(s))[::-1], r"gave \('.', '.'\), expected .*the most frequent pair"),
])
def test_typical_mistakes_are_named(wrong, message):
    with pytest.raises(AssertionError, match=message):
        check(answers(wrong))


def test_a_missing_function_is_named():
    with pytest.raises(AssertionError, match=r"no function named best_pair\(\)"):
        check(SimpleNamespace())
