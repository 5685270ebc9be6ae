"""The lessons' corpus and tokenizer."""

from pydoc_data.topics import topics

import numpy as np
import pytest

from minigrad.learn import data


def test_default_corpus_is_real_text_without_layout_rules():
    text = data.default_corpus()
    assert len(text) > 100_000
    def rules(lines):
        return [line for line in lines if len(line.strip()) > 2 and set(line.strip()) <= set("*-=~^")]

    raw = "\n".join(topics.values()).splitlines()
    assert rules(raw), "the raw topics have reST rules, so this test can fail"
    assert rules(text.splitlines()) == []
    assert data.default_corpus() == text  # deterministic


def test_tokenize_words_numbers_punctuation():
    assert data.tokenize("The cat's 2 mats, sat.") == ["the", "cat's", "2", "mats", ",", "sat", "."]


def test_vocabulary_orders_by_frequency_and_round_trips():
    tokens = data.tokenize("the cat sat on the mat the end")
    vocab = data.Vocabulary.build(tokens)
    assert vocab.words[:2] == ["<unk>", "the"] and vocab.counts[1] == 3
    assert vocab.counts.sum() == len(tokens)
    ids = vocab.encode(tokens)
    assert ids.dtype == np.int64 and vocab.decode(ids) == tokens


def test_vocabulary_caps_size_and_maps_the_rest_to_unk():
    tokens = data.tokenize("a a a b b c d")
    vocab = data.Vocabulary.build(tokens, max_size=3)
    assert vocab.words == ["<unk>", "a", "b"]
    assert vocab.counts.tolist() == [2, 3, 2]  # c and d are unknown
    assert vocab.encode(["c", "a"]).tolist() == [0, 1]


def test_default_corpus_has_a_zipf_tail():
    vocab = data.Vocabulary.build(data.tokenize(data.default_corpus()))
    counts = vocab.counts[1:]
    assert counts[0] / counts[-1] > 1000  # busiest word vs a word seen once
    assert (counts == 1).sum() > 100


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no text file at"):
        data.load_text(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="max_size=1 leaves no room"):
        data.Vocabulary.build(["a"], max_size=1)
    with pytest.raises(IndexError, match=r"Vocabulary.decode: id 9 at ids\[0\] is out of range for 2 words "
                                         r"\(ids must be in \[0, 2\)\)"):
        data.Vocabulary.build(["a"]).decode([9])
    with pytest.raises(ValueError, match="first word must be"):
        data.Vocabulary(["a"], [1])


def test_load_text_reads_a_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("hello world", encoding="utf-8")
    assert data.load_text(path) == "hello world"
    assert data.load_text() == data.default_corpus()


def test_table_borders_are_dropped_but_table_text_is_kept(monkeypatch):
    import pydoc_data.topics

    fake = {"t": "+------+-----+\n| a    | b   |\n+======+=====+\n|====|\nx - y\n"}
    monkeypatch.setattr(pydoc_data.topics, "topics", fake)
    assert data.default_corpus().splitlines() == ["| a    | b   |", "x - y"]
