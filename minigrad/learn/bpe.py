"""A byte-pair vocabulary (BPE, Sennrich et al. 2016, as GPT-2 and CS336 assignment 1 use it),
small enough to read: learned from a list of words, lossless on any text written in its alphabet.

Training. Each word becomes a pre-token with a leading space (" the"), written as a sequence of
characters; merges never cross a pre-token. Count every adjacent pair of pieces, weighted by how
often its pre-token occurs; merge the most frequent pair into one new piece (a tie goes to the
lexicographically greater pair, as in CS336); repeat. Only the pre-tokens that contain the merged
pair change, so only their pairs are recounted.

Encoding. A word is split into characters and the learned merges are applied in the order they
were learned (always the earliest-learned pair present first), which reproduces the training
text's segmentation exactly.

With 0 merges the vocabulary is the alphabet: a character-level tokenizer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

import numpy as np

from minigrad.engine import check_in_range

SPACE = " "  # starts every pre-token, so a piece can say "this begins a word"


def merge_pair(pieces: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """`pieces` with every non-overlapping occurrence of `pair`, left to right, joined into one."""
    merged, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == pair:
            merged.append(pieces[i] + pieces[i + 1])
            i += 2
        else:
            merged.append(pieces[i])
            i += 1
    return tuple(merged)


def _pairs(pieces: tuple[str, ...]) -> list[tuple[str, str]]:
    return list(zip(pieces, pieces[1:]))


class BytePairs:
    """A learned sub-word vocabulary: `pieces[i]` is the string of token id i (the alphabet first,
    sorted, then one piece per merge in the order learned); `merges` lists the merged pairs."""

    def __init__(self, alphabet: Iterable[str], merges: Iterable[tuple[str, str]]):
        self.alphabet = sorted(set(alphabet))
        if any(len(ch) != 1 for ch in self.alphabet):
            raise ValueError(f"BytePairs: the alphabet must be single characters, got "
                             f"{[ch for ch in self.alphabet if len(ch) != 1][:5]}")
        self.merges = [tuple(pair) for pair in merges]
        self.pieces = self.alphabet + [a + b for a, b in self.merges]
        self.index = {piece: i for i, piece in enumerate(self.pieces)}
        self.rank = {pair: r for r, pair in enumerate(self.merges)}
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def train(cls, words: list[str], merges: int) -> BytePairs:
        """Learn up to `merges` merges from `words` (fewer if every pre-token becomes one piece)."""
        if not isinstance(merges, int) or merges < 0:
            raise ValueError(f"BytePairs.train: merges={merges!r} must be an int >= 0")
        if not words:
            raise ValueError("BytePairs.train: words is empty; there is nothing to learn from")
        counts = Counter(SPACE + w for w in words)
        split = {token: tuple(token) for token in counts}  # each pre-token as its current pieces
        pairs = _PairIndex()
        for token, n in counts.items():
            pairs.add(token, split[token], n)
        learned = []
        while len(learned) < merges and pairs.counts:
            best = max(pairs.counts, key=lambda pair: (pairs.counts[pair], pair))
            learned.append(best)
            for token in pairs.containing.pop(best):
                pairs.remove(token, split[token], counts[token])  # take the old pairs out ...
                split[token] = merge_pair(split[token], best)
                pairs.add(token, split[token], counts[token])  # ... and the new ones in
        return cls(set("".join(counts)), learned)

    def __len__(self) -> int:
        return len(self.pieces)

    def split_word(self, word: str) -> list[int]:
        """The ids of one word's pieces (the word gets its leading space), merges applied in
        the order they were learned."""
        if word not in self._cache:
            token = SPACE + word
            unknown = sorted(set(token) - set(self.alphabet))
            if unknown:
                raise ValueError(f"BytePairs.encode: the word {word!r} has characters {unknown} outside "
                                 f"the alphabet the pairs were learned on ({''.join(self.alphabet)!r})")
            pieces = tuple(token)
            while len(pieces) > 1:
                first = min(_pairs(pieces), key=lambda pair: self.rank.get(pair, len(self.rank)))
                if first not in self.rank:
                    break
                pieces = merge_pair(pieces, first)
            self._cache[word] = [self.index[p] for p in pieces]
        return self._cache[word]

    def encode(self, words: list[str]) -> np.ndarray:
        """(n,) int64 ids of the pieces of `words`, in order."""
        return np.array([i for word in words for i in self.split_word(word)], dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> str:
        """The text the ids spell: the words, each after one space (so it starts with a space)."""
        ids = np.array([int(i) for i in ids], dtype=np.int64)
        check_in_range(ids, len(self.pieces), who="BytePairs.decode", item="id", name="ids",
                       range_of=f"{len(self.pieces)} pieces")
        return "".join(self.pieces[i] for i in ids.tolist())


class _PairIndex:
    """While BytePairs.train merges: how often each adjacent pair occurs over the pre-tokens
    (`counts`) and which pre-tokens hold it (`containing`), so a merge revisits only those."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.containing: dict[tuple[str, str], set[str]] = defaultdict(set)

    def add(self, token: str, pieces: tuple[str, ...], n: int) -> None:
        """Count the pairs of `token`, split into `pieces`, which occurs n times."""
        for pair in _pairs(pieces):
            self.counts[pair] += n
            self.containing[pair].add(token)

    def remove(self, token: str, pieces: tuple[str, ...], n: int) -> None:
        """Take back what add(token, pieces, n) counted."""
        for pair in _pairs(pieces):
            self.counts[pair] -= n
            if self.counts[pair] == 0:
                del self.counts[pair]
            if pair in self.containing:
                self.containing[pair].discard(token)
