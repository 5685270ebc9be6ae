"""Byte-pair vocabularies (BPE, Sennrich et al. 2016, as GPT-2 and CS336 assignment 1 use it),
small enough to read. Two front doors share one trainer:

- `BytePairs`: learned from a list of words, each a pre-token with a leading space (" the") written
  as characters; lossless on any text in its alphabet. Lesson 11's byte-pair ladder.
- `ByteTokenizer` (and `train_byte_pairs`): GPT-2's byte-level form. Text is cut at the special
  tokens, then into pre-tokens by GPT-2's pattern (contractions, letters, numbers, punctuation and
  spaces, a word keeping the space before it); a pre-token starts as its UTF-8 bytes, so any text
  encodes and the 256 bytes are the first 256 ids. Special tokens are never split and never learned
  from. Its vocab and merges have CS336's layout (id -> bytes; pairs of bytes in the order learned).

Training (`learn_merges`). Count every adjacent pair of pieces, weighted by how often its
pre-token occurs; merge the most frequent pair into one new piece (a tie goes to the
lexicographically greater pair, as in CS336); repeat. Merges never cross a pre-token. Only the
pre-tokens that contain the merged pair change, so only their pairs are recounted.

Encoding. A pre-token starts as its characters (bytes) and the learned merges are applied in the
order they were learned (always the earliest-learned pair present first), which reproduces the
training text's segmentation exactly.

With 0 merges the vocabulary is the alphabet (the bytes): a character-level (byte-level) tokenizer.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

import numpy as np

from minigrad.engine import check_in_range, positive_int

SPACE = " "  # starts every pre-token, so a piece can say "this begins a word"


def merge_pair(pieces: tuple, pair: tuple) -> tuple:
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


def _pairs(pieces: tuple) -> list[tuple]:
    return list(zip(pieces, pieces[1:]))


class _Greater:
    """A pair that sorts before the pairs it is greater than, so a min-heap of (-count, _Greater)
    pops the most frequent pair first and, among equal counts, the lexicographically greatest."""

    __slots__ = ("pair",)

    def __init__(self, pair: tuple):
        self.pair = pair

    def __lt__(self, other: _Greater) -> bool:
        return self.pair > other.pair


class _PairIndex:
    """While merges are learned: how often each adjacent pair occurs over the pre-tokens
    (`counts`), which pre-tokens hold it (`containing`), so a merge revisits only those, and which
    pairs' counts moved since `moved()` was last asked."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.containing: dict[tuple, set[tuple]] = defaultdict(set)
        self._moved: set[tuple] = set()

    def add(self, token: tuple, pieces: tuple, n: int) -> None:
        """Count the pairs of `token`, split into `pieces`, which occurs n times."""
        for pair in _pairs(pieces):
            self.counts[pair] += n
            self.containing[pair].add(token)
            self._moved.add(pair)

    def remove(self, token: tuple, pieces: tuple, n: int) -> None:
        """Take back what add(token, pieces, n) counted."""
        for pair in _pairs(pieces):
            self.counts[pair] -= n
            if self.counts[pair] == 0:
                del self.counts[pair]
            if pair in self.containing:
                self.containing[pair].discard(token)
            self._moved.add(pair)

    def moved(self) -> set[tuple]:
        moved, self._moved = self._moved, set()
        return moved


def learn_merges(counts: Mapping[tuple, int], merges: int) -> list[tuple]:
    """Up to `merges` merges learned from pre-tokens: `counts` maps each pre-token, written as the
    tuple of its first pieces (characters, or single bytes), to how often it occurs. Returns the
    merged pairs in the order learned (fewer if every pre-token becomes one piece).

    The best pair comes off a heap of (-count, pair) with stale entries left in it: a count that
    moves is pushed again, and an entry whose count is no longer the pair's is skipped."""
    split = {token: token for token in counts}  # each pre-token as its current pieces
    pairs = _PairIndex()
    for token, n in counts.items():
        pairs.add(token, token, n)
    heap = [(-n, _Greater(pair)) for pair, n in pairs.counts.items()]
    heapq.heapify(heap)
    pairs.moved()
    learned: list[tuple] = []
    while len(learned) < merges and heap:
        minus_n, entry = heapq.heappop(heap)
        if pairs.counts.get(entry.pair) != -minus_n:
            continue  # stale: the pair's count moved (or it is gone) since this entry was pushed
        best = entry.pair
        learned.append(best)
        for token in pairs.containing.pop(best):
            pairs.remove(token, split[token], counts[token])  # take the old pairs out ...
            split[token] = merge_pair(split[token], best)
            pairs.add(token, split[token], counts[token])  # ... and the new ones in
        for pair in pairs.moved() & pairs.counts.keys():
            heapq.heappush(heap, (-pairs.counts[pair], _Greater(pair)))
    return learned


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
        counts = Counter(tuple(SPACE + w) for w in words)
        return cls(set(SPACE + "".join(words)), learn_merges(counts, merges))

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


# ---- GPT-2's byte-level form ------------------------------------------------------------------

# GPT-2's pre-tokenisation (Radford et al. 2019, the pattern tiktoken's "gpt2" encoding uses): a
# contraction, or letters, or digits, or other symbols (each with at most one space before it), or
# a run of spaces (leaving the last one to the word after it).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Unicode's White_Space property, which \s means in the pattern (Python's own \s also takes the
# separators U+001C to U+001F)
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _ranges(codes: list[int]) -> str:
    """The code points as the inside of a character class: runs written first-last."""
    out, i = [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        out.append(re.escape(chr(codes[i])) + ("-" + re.escape(chr(codes[j])) if j > i else ""))
        i = j + 1
    return "".join(out)


# Unicode puts every letter and number below U+40000 (planes 0-3; 4-13 are unassigned, 14 holds tags
# and selectors, 15-16 private use): tests/learn/test_byte_pairs.py checks it for this Python
LAST_LETTER_OR_NUMBER = 0x3FFFF


@lru_cache(maxsize=1)
def gpt2_splitter() -> re.Pattern:
    """GPT2_PATTERN compiled with Python's re, which has no \\p{...}: the letters (\\p{L}) and the
    numbers (\\p{N}) are listed from unicodedata (built once, in about 0.1 s)."""
    letters, numbers = [], []
    for code in range(LAST_LETTER_OR_NUMBER + 1):
        ch = chr(code)
        if ch.isalpha():  # exactly the categories Lu, Ll, Lt, Lm, Lo
            letters.append(code)
        elif ch.isnumeric() and unicodedata.category(ch).startswith("N"):
            numbers.append(code)
    L, N = _ranges(letters), _ranges(numbers)
    pattern = (GPT2_PATTERN.replace(r"[^\s\p{L}\p{N}]", f"[^{WHITE_SPACE}{L}{N}]")
               .replace(r"\p{L}", f"[{L}]").replace(r"\p{N}", f"[{N}]")
               .replace(r"\S", f"[^{WHITE_SPACE}]").replace(r"\s", f"[{WHITE_SPACE}]"))
    return re.compile(pattern)


def pretokenize(text: str) -> list[str]:
    """The pre-tokens of `text` under GPT-2's pattern (no special tokens: see split_special)."""
    return gpt2_splitter().findall(text)


def split_special(text: str, special_tokens: Iterable[str]) -> list[tuple[str, bool]]:
    """`text` cut at the special tokens, as [(piece, is it a special token)]; where two special
    tokens start at one place, the longer wins ("<|a|><|a|>" before "<|a|>")."""
    special = sorted(set(special_tokens), key=len, reverse=True)
    if not special:
        return [(text, False)] if text else []
    pieces = re.split("(" + "|".join(map(re.escape, special)) + ")", text)
    return [(piece, i % 2 == 1) for i, piece in enumerate(pieces) if piece]


def _special_tokens(who: str, special_tokens: Iterable[str] | None) -> list[str]:
    if special_tokens is None:
        return []
    if isinstance(special_tokens, str) or not all(isinstance(t, str) and t for t in special_tokens):
        raise TypeError(f"{who}: special_tokens must be a list of non-empty strings, got {special_tokens!r}")
    return list(dict.fromkeys(special_tokens))


def train_byte_pairs(text: str, vocab_size: int, special_tokens: Iterable[str] | None = None
                     ) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Byte-level BPE on `text` until the vocabulary has `vocab_size` entries (or no pair is left):
    returns (vocab, merges). vocab maps ids to bytes: the 256 single bytes as ids 0-255, then one
    entry per merge in the order learned, then the special tokens (which cut the text and are never
    learned from). merges lists the merged pairs of bytes in the order learned."""
    if not isinstance(text, str):
        raise TypeError(f"train_byte_pairs: text must be a str, got {type(text).__name__}")
    special = _special_tokens("train_byte_pairs", special_tokens)
    vocab_size = positive_int("train_byte_pairs", "vocab_size", vocab_size)
    if vocab_size < 256 + len(special):
        raise ValueError(f"train_byte_pairs: vocab_size={vocab_size} leaves no room for the 256 bytes and "
                         f"the {len(special)} special tokens (at least {256 + len(special)})")
    counts: Counter = Counter()
    for piece, is_special in split_special(text, special):
        if not is_special:
            counts.update(pretokenize(piece))
    singles = [bytes([b]) for b in range(256)]
    by_bytes = Counter({tuple(singles[b] for b in token.encode("utf-8")): n for token, n in counts.items()})
    merges = learn_merges(by_bytes, vocab_size - 256 - len(special))
    vocab = dict(enumerate(singles + [a + b for a, b in merges] + [t.encode("utf-8") for t in special]))
    return vocab, merges


class ByteTokenizer:
    """GPT-2's byte-level tokenizer for a vocab (id -> bytes), the merges learned (pairs of bytes,
    in order) and special tokens (strings never split; one missing from the vocab is added to it
    with the next free id). `train` learns one from a text; GPT-2's own vocab and merges work as
    well. encode gives a list of ids, decode the text back (invalid UTF-8 shown as U+FFFD)."""

    CACHE_SIZE = 4096  # pre-tokens whose ids are kept (bounded, so encode_iterable stays small)

    def __init__(self, vocab: Mapping[int, bytes], merges: Iterable[tuple[bytes, bytes]],
                 special_tokens: Iterable[str] | None = None):
        self.vocab = {int(i): bytes(b) for i, b in vocab.items()}
        self.ids = {b: i for i, b in self.vocab.items()}
        self.merges = [(bytes(a), bytes(b)) for a, b in merges]
        self._check_vocab_and_merges()
        self.rank = {pair: r for r, pair in enumerate(self.merges)}
        self.special_tokens = _special_tokens("ByteTokenizer", special_tokens)
        for token in map(str.encode, self.special_tokens):  # one missing gets the next free id
            if token not in self.ids:
                self.ids[token] = max(self.vocab) + 1
                self.vocab[self.ids[token]] = token
        self.id_limit = max(self.vocab) + 1  # ids are in [0, id_limit)
        self._cache: dict[str, list[int]] = {}

    def _check_vocab_and_merges(self) -> None:
        """Refuse a vocab that cannot encode every text, or merges of pieces it does not have."""
        if len(self.ids) != len(self.vocab):
            raise ValueError("ByteTokenizer: vocab maps two ids to the same bytes")
        missing = [b for b in range(256) if bytes([b]) not in self.ids]
        if missing:
            raise ValueError(f"ByteTokenizer: vocab has no id for the single bytes {missing[:5]}, so some "
                             "text could not be encoded")
        for r, (a, b) in enumerate(self.merges):
            if not {a, b, a + b} <= self.ids.keys():
                raise ValueError(f"ByteTokenizer: merges[{r}] = {(a, b)!r} joins pieces the vocab does not "
                                 "have (each side and the joined piece must be in it)")

    @classmethod
    def train(cls, text: str, vocab_size: int, special_tokens: Iterable[str] | None = None) -> ByteTokenizer:
        """The tokenizer train_byte_pairs learns on `text`."""
        return cls(*train_byte_pairs(text, vocab_size, special_tokens), special_tokens)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode_pretoken(self, token: str) -> list[int]:
        """The ids of one pre-token: its UTF-8 bytes, merged in the order the merges were learned."""
        if token not in self._cache:
            pieces = tuple(bytes([b]) for b in token.encode("utf-8"))
            while len(pieces) > 1:
                first = min(_pairs(pieces), key=lambda pair: self.rank.get(pair, len(self.rank)))
                if first not in self.rank:
                    break
                pieces = merge_pair(pieces, first)
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            self._cache[token] = [self.ids[p] for p in pieces]
        return self._cache[token]

    def encode(self, text: str) -> list[int]:
        """The ids of `text`: special tokens as their own ids, everything else pre-token by pre-token."""
        if not isinstance(text, str):
            raise TypeError(f"ByteTokenizer.encode: text must be a str, got {type(text).__name__}")
        ids = []
        for piece, is_special in split_special(text, self.special_tokens):
            if is_special:
                ids.append(self.ids[piece.encode("utf-8")])
            else:
                for token in pretokenize(piece):
                    ids.extend(self.encode_pretoken(token))
        return ids

    def encode_iterable(self, texts: Iterable[str]) -> Iterator[int]:
        """The ids of the texts joined, one at a time, holding little more than one text at once (a
        file, read line by line, works). What ends one text may belong to what starts the next (a
        space before a word, "'l" + "l", half a special token), so that tail waits for the next text."""
        held = ""
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"ByteTokenizer.encode_iterable: each text must be a str, got "
                                f"{type(text).__name__}")
            ids, held = self._encode_all_but_the_tail(held + text)
            yield from ids
        yield from self.encode(held)

    def _encode_all_but_the_tail(self, text: str) -> tuple[list[int], str]:
        """(the ids of text up to a place after which nothing that follows can change them, the rest).
        The rest is a tail that could begin a special token, and before it the last two pre-tokens:
        the last may grow, and the one before it may still become a contraction or give up a space."""
        cut = len(text)
        for token in self.special_tokens:
            for size in range(min(len(token) - 1, len(text)), 0, -1):
                if text.endswith(token[:size]):
                    cut = min(cut, len(text) - size)
                    break
        pieces = split_special(text[:cut], self.special_tokens)
        if not pieces or pieces[-1][1]:
            return self.encode(text[:cut]), text[cut:]
        tokens = pretokenize(pieces[-1][0])
        ids = self.encode("".join(piece for piece, _ in pieces[:-1])) if len(pieces) > 1 else []
        for token in tokens[:-2]:
            ids.extend(self.encode_pretoken(token))
        return ids, "".join(tokens[-2:]) + text[cut:]

    def decode(self, ids: Iterable[int]) -> str:
        """The text the ids spell (bytes that are not valid UTF-8 become U+FFFD)."""
        ids = np.array([int(i) for i in ids], dtype=np.int64)
        check_in_range(ids, self.id_limit, who="ByteTokenizer.decode", item="id", name="ids",
                       range_of=f"{self.id_limit} ids")
        try:
            return b"".join(self.vocab[i] for i in ids.tolist()).decode("utf-8", errors="replace")
        except KeyError as gap:
            raise IndexError(f"ByteTokenizer.decode: id {gap.args[0]} is not in the vocab") from None

