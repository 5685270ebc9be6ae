"""Check for lesson 14: best_pair(split_counts), the pair byte-pair training merges next.

The reference is minigrad's own trainer: one merge of `BytePairs.train` on the same words gives
the pair it merges first. The cases are written so that each usual slip picks another pair.
"""

from collections import Counter
from types import ModuleType

from minigrad.learn.bpe import SPACE, BytePairs

from . import _common as common

# Texts as lists of words, each chosen so that one slip changes the answer (see _mistakes)
CASES = {
    "one frequent word against many that begin alike": "zz zz zz zz zz ab ac ad".split(),
    "a word with the same pair twice": "aaaa ab ab".split(),
    "two pairs as frequent as each other": "ab ab cd cd".split(),
    "words that end alike": "xe ye ze we ve".split(),
}


def _split_counts(words: list[str]) -> dict[tuple[str, ...], int]:
    return {tuple(SPACE + word): n for word, n in Counter(words).items()}


def _mistakes(split_counts: dict[tuple[str, ...], int]) -> list[tuple[tuple[str, str], str]]:
    """(the pair a slip would give, what the slip is)."""
    once: Counter[tuple[str, str]] = Counter()
    per_word: Counter[tuple[str, str]] = Counter()
    joined: Counter[tuple[str, str]] = Counter()
    stream = [piece for pieces, n in split_counts.items() for _ in range(n) for piece in pieces]
    for pieces, n in split_counts.items():
        for pair in zip(pieces, pieces[1:]):
            once[pair] += 1
        for pair in set(zip(pieces, pieces[1:])):
            per_word[pair] += n
    for pair in zip(stream, stream[1:]):
        joined[pair] += 1
    highest = lambda counts, key: max(counts, key=key)  # noqa: E731
    return [
        (highest(once, lambda p: (once[p], p)),
         "each word's pairs were counted once; count them as often as the word occurs in the text"),
        (highest(per_word, lambda p: (per_word[p], p)),
         "a pair that comes twice in one word was counted once; count every occurrence"),
        (min((p for p in once), key=lambda p: (-_weighted(split_counts)[p], p)),
         "a tie went to the pair that sorts first; it goes to the pair that sorts last, max((count, pair))"),
        (highest(joined, lambda p: (joined[p], p)),
         "pairs were counted across two words (the last piece of one with the first of the next); a "
         "pair lies inside one word"),
    ]


def _weighted(split_counts: dict[tuple[str, ...], int]) -> Counter:
    counts: Counter = Counter()
    for pieces, n in split_counts.items():
        for pair in zip(pieces, pieces[1:]):
            counts[pair] += n
    return counts


def check(answers: ModuleType) -> None:
    best_pair = common.answer_function(answers, "best_pair")
    for name, words in CASES.items():
        split_counts = _split_counts(words)
        expected = BytePairs.train(words, 1).merges[0]
        got = common.call_answer(best_pair, dict(split_counts),
                                 hint="split_counts maps each word, a tuple of its pieces, to its count")
        what = f"best_pair on {name} ({' '.join(words)!r})"
        if not isinstance(got, tuple) or len(got) != 2 or not all(isinstance(p, str) for p in got):
            raise AssertionError(f"{what} returned {got!r}; return a pair of pieces, a tuple of two strings "
                                 f"such as {expected!r}")
        if tuple(got) == tuple(expected):
            continue
        for wrong, diagnosis in _mistakes(split_counts):
            if tuple(got) == tuple(wrong) and tuple(wrong) != tuple(expected):
                raise AssertionError(f"{what} gave {got!r}, expected {expected!r}: {diagnosis}")
        raise AssertionError(f"{what} gave {got!r}, expected {expected!r}, the most frequent pair of "
                             f"adjacent pieces inside the words, each word weighted by its count")
