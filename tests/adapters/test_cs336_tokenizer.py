"""CS336 assignment 1's tokenizer checks, made here on data this repository has: the adapters in
cs336.py train the merges the definition gives, fast enough for CS336's limit, and tokenize as
GPT-2 does (tiktoken's encoding, built from the GPT-2 merges in tests/helpers/data), streaming
included. CS336's own test files run on the same adapters (docs/bpe.md)."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from bpe_reference import merges_by_recounting
from cs336 import get_tokenizer, run_train_bpe
from gpt2_bpe import END_OF_TEXT, gpt2_vocab_and_merges, tiktoken_gpt2, tiktoken_or_fail

from minigrad.learn.bpe import pretokenize, split_special

KJV = Path(__file__).resolve().parents[1] / "helpers" / "data" / "kjv_sample.jsonl"


def python_docs(size: int) -> str:
    """About `size` characters of Python's own help topics (pydoc_data, shipped with Python), one
    topic per document, the documents joined by <|endoftext|>: CS336's corpus.en is 130 kB."""
    from pydoc_data.topics import topics

    text = END_OF_TEXT.join(topics[name] for name in sorted(topics))
    return text[:size]


def bible() -> str:
    return "\n".join(json.loads(line)["text"] for line in KJV.read_text(encoding="utf-8").splitlines())


GERMAN = ("Die Straße war nass, und über den Dächern lag früh am Morgen noch Nebel. "
          "„Größer als gedacht“, sagte sie – und lächelte.")
TEXTS = {
    "empty": "",
    "one character": "s",
    "one emoji": "🙃",
    "ascii": "Hello, how are you?",
    "unicode": "Héllò hôw are ü? 🙃",
    "unicode with special tokens": f"Héllò hôw {END_OF_TEXT} are ü? 🙃{END_OF_TEXT}",
    "contractions and spaces": "I'll   say it's   \n\n  don't\tyou've  we'd 42 1,000.5 ²³ Ⅻ",
    "german": GERMAN,
    "bible": bible(),
    "python docs": python_docs(20_000),
}


@pytest.fixture(scope="module")
def gpt2():
    vocab, merges = gpt2_vocab_and_merges()
    return get_tokenizer(vocab, merges, [END_OF_TEXT])


@pytest.fixture(scope="module")
def reference():
    tiktoken_or_fail()
    return tiktoken_gpt2()


# ---- run_train_bpe ----------------------------------------------------------------------------

def corpus_file(tmp_path, size=130_000) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(python_docs(size), encoding="utf-8")
    return path


def test_run_train_bpe_learns_the_merges_the_definition_gives(tmp_path):
    path = corpus_file(tmp_path, 40_000)  # smaller than CS336's, for the slow definition's sake
    vocab, merges = run_train_bpe(path, vocab_size=500, special_tokens=[END_OF_TEXT])
    counts: Counter = Counter()
    for piece, special in split_special(path.read_text(encoding="utf-8"), [END_OF_TEXT]):
        if not special:
            for token in pretokenize(piece):
                counts[tuple(bytes([b]) for b in token.encode("utf-8"))] += 1
    assert merges == merges_by_recounting(counts, 500 - 257)
    assert sorted(vocab) == list(range(500))
    assert set(vocab.values()) == ({bytes([b]) for b in range(256)} | {a + b for a, b in merges}
                                   | {END_OF_TEXT.encode()})
    assert all(END_OF_TEXT.encode()[:2] not in a + b for a, b in merges)  # never learned from


def test_run_train_bpe_is_within_cs336s_time_limit(tmp_path):
    path = corpus_file(tmp_path)
    start = time.process_time()  # CPU time: the machine may be shared; CS336 allows 1.5 s
    run_train_bpe(path, vocab_size=500, special_tokens=[END_OF_TEXT])
    assert time.process_time() - start < 1.5


# ---- get_tokenizer: GPT-2's ids, as tiktoken gives them ---------------------------------------------

@pytest.mark.parametrize("name", list(TEXTS))
def test_encode_matches_tiktoken_and_decodes_back(name, gpt2, reference):
    text = TEXTS[name]
    ids = gpt2.encode(text)
    assert ids == reference.encode(text, allowed_special={END_OF_TEXT})
    assert gpt2.decode(ids) == text
    if name == "one character":
        assert [gpt2.decode([i]) for i in ids] == ["s"]


def test_overlapping_special_tokens_keep_the_longer(gpt2):
    vocab, merges = gpt2_vocab_and_merges()
    double = END_OF_TEXT * 2
    tokenizer = get_tokenizer(vocab, merges, [END_OF_TEXT, double])
    text = f"Hello, how {double} are you?{END_OF_TEXT}"
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    pieces = [tokenizer.decode([i]) for i in ids]
    assert pieces.count(double) == 1 and pieces.count(END_OF_TEXT) == 1
    assert len(tokenizer) == 50258  # the double token was added to the vocab


def test_encode_iterable_over_a_file_matches_tiktoken(tmp_path, gpt2, reference):
    text = END_OF_TEXT.join([bible(), "  indented\n   lines\n\n\n  and spaces  \n", python_docs(30_000)])
    path = tmp_path / "text.txt"
    path.write_text(text, encoding="utf-8")
    with open(path, encoding="utf-8") as lines:
        ids = list(gpt2.encode_iterable(lines))
    assert ids == reference.encode(text, allowed_special={END_OF_TEXT})
    assert gpt2.decode(ids) == text


def test_encode_iterable_holds_little_while_it_streams_a_file(tmp_path, gpt2):
    """What streaming 300 kB holds at its peak (its cache of pre-tokens, a line, the ids of a line):
    bounded, so CS336's 5 MB file streams in the same (its test allows 1 MB more than before)."""
    path = tmp_path / "big.txt"
    path.write_text(python_docs(300_000), encoding="utf-8")
    count = 0
    with open(path, encoding="utf-8") as lines:
        tracemalloc.start()
        for _ in gpt2.encode_iterable(lines):
            count += 1
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert count > 50_000
    assert peak < 1_500_000, f"{peak:,} bytes at the peak while streaming"
