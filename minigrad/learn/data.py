"""Text for the lessons: a word-level tokenizer and a default corpus that ships with Python.

The default corpus is `pydoc_data.topics`: the help texts of the Python language reference
(about half a megabyte of English prose and code). It is real text with a heavy Zipf tail,
which is exactly what makes embedding rows learn at very different rates. `FUNCTION_WORDS` and
`token_categories` name groups of its tokens that its two languages, English and Python, define.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from minigrad.engine import check_in_range

UNK = "<unk>"
# a word (with an inner apostrophe), a number, or one punctuation mark
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+|[^\sa-z0-9]")
# reST rules and underlines such as "*******" or "-----", and table borders such as
# "+------+-----+" or "|=====|": layout, not language
_RULE = re.compile(r"^\s*(([-=*~^\"'_+#.])\2{2,}|[+|][-=+| ]{2,})\s*$")


# English function words: determiners, prepositions, conjunctions, pronouns, auxiliary verbs
# (lesson 9 compares them with content words; lesson 12 counts them as one group)
FUNCTION_WORDS = frozenset("""
a an the this that these those some any each every no all both either neither such
of in to for from with by at on into onto over under about after before between through during
without within among against upon than as like
and or but nor so if then else when while because although though unless whether
is are was were be been being am has have had do does did will would can could may might must
shall should it its they them their there here which who whom whose what where how not also
only very too we you he she i me my our your his her us one""".split())


def _named_groups() -> dict[str, set[str]]:
    """The groups token_categories names by their members: English function words, Python's
    keywords, its built-in functions and types, its exception classes, the methods of str."""
    import builtins
    import keyword

    python_names = [name for name in dir(builtins) if not name.startswith("_")]
    exceptions = [name for name in python_names if name.endswith(("Error", "Warning", "Exception"))]
    return {
        "function words": set(FUNCTION_WORDS),
        "keywords": {name.lower() for name in keyword.kwlist},
        "built-ins": {name for name in python_names if name.islower()},
        "exceptions": {name.lower() for name in exceptions},
        "str methods": {name for name in dir(str) if not name.startswith("_")},
    }


def token_categories(words: Sequence[str]) -> dict[str, np.ndarray]:
    """Groups of tokens that the manual's own languages define, as (V,) bool masks over `words` (a
    vocabulary's words, in id order); a token belongs to the first group that claims it: English
    function words, Python's keywords, its built-in functions and types, its exception classes,
    the methods of str, numbers, and single punctuation marks."""
    claimed = np.zeros(len(words), dtype=bool)
    masks = {}
    for name, members in _named_groups().items():
        masks[name] = np.array([w in members for w in words]) & ~claimed
        claimed |= masks[name]
    masks["numbers"] = np.array([w.isdigit() for w in words]) & ~claimed
    masks["punctuation"] = np.array([len(w) == 1 and not w.isalnum() for w in words]) & ~claimed
    return masks


def default_corpus() -> str:
    """The text of pydoc_data.topics, topics in sorted order, layout lines removed."""
    from pydoc_data.topics import topics

    lines = []
    for name in sorted(topics):
        lines += [line for line in topics[name].splitlines() if not _RULE.match(line)]
    return "\n".join(lines)


def load_text(path: str | Path | None = None) -> str:
    """The default corpus, or the text of `path` (UTF-8)."""
    if path is None:
        return default_corpus()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load_text: no text file at {str(path)!r}")
    return path.read_text(encoding="utf-8", errors="replace")


def tokenize(text: str) -> list[str]:
    """Lower-cased words, numbers and single punctuation marks, in order."""
    return _TOKEN.findall(text.lower())


class Vocabulary:
    """Words <-> ids, most frequent first; id 0 is `<unk>` for words outside the vocabulary.

    `counts[i]` is how often word i occurred in the text the vocabulary was built from.
    """

    def __init__(self, words: list[str], counts: Iterable[int]):
        if not words or words[0] != UNK:
            raise ValueError(f"Vocabulary: the first word must be {UNK!r}")
        self.words = list(words)
        self.counts = np.asarray(list(counts), dtype=np.int64)
        if self.counts.shape != (len(self.words),):
            raise ValueError(
                f"Vocabulary: got {len(self.words)} words but {self.counts.size} counts"
            )
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, tokens: list[str], max_size: int | None = None, min_count: int = 1) -> Vocabulary:
        """The `max_size` most frequent tokens seen at least `min_count` times (ties by first use)."""
        if max_size is not None and max_size < 2:
            raise ValueError(f"Vocabulary.build: max_size={max_size} leaves no room beside {UNK!r}")
        frequency = Counter(tokens)
        kept = [(w, n) for w, n in frequency.most_common() if n >= min_count]
        if max_size is not None:
            kept = kept[: max_size - 1]
        unknown = len(tokens) - sum(n for _, n in kept)
        return cls([UNK] + [w for w, _ in kept], [unknown] + [n for _, n in kept])

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: list[str]) -> np.ndarray:
        """(n,) int64 ids; unknown words map to 0."""
        return np.fromiter((self.index.get(t, 0) for t in tokens), dtype=np.int64, count=len(tokens))

    def decode(self, ids: Iterable[int]) -> list[str]:
        ids = np.array([int(i) for i in ids], dtype=np.int64)
        check_in_range(ids, len(self.words), who="Vocabulary.decode", item="id", name="ids",
                       range_of=f"{len(self.words)} words")
        return [self.words[i] for i in ids.tolist()]
