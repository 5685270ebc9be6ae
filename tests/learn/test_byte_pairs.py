"""minigrad.learn.bpe's byte-level form: GPT-2's pre-tokens, a trainer that learns what the
definition learns (special tokens cut the text and are never learned from), and a tokenizer whose
encode, decode and encode_iterable agree with each other and with merging in the order learned."""

from __future__ import annotations

import itertools
import time
import unicodedata
from collections import Counter

import pytest
from bpe_reference import merges_by_recounting, pieces_by_merging_in_order
from gpt2_bpe import tiktoken_or_fail
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.learn.bpe import (
    GPT2_PATTERN,
    LAST_LETTER_OR_NUMBER,
    ByteTokenizer,
    pretokenize,
    split_special,
    train_byte_pairs,
)

EOT = "<|endoftext|>"
# characters where GPT-2's pattern needs care: letters with and without marks, numbers that are
# not digits (², Ⅻ, ٣), Unicode spaces and the separators \x1c-\x1f Python's \s takes but
# White_Space does not, contractions, emoji, CJK
TRICKY = "aZéß\u0301ü漢字²Ⅻ٣7 \t\n\r\u3000\u00a0\x1c\x1f'sltvmdre.,!?-_🙃—"
texts = st.text(alphabet=TRICKY, max_size=40)
words = st.lists(st.sampled_from(["the", " cat", "'ll", "don't", "  ", "\n", "42", "é", "🙃", "x"]),
                 max_size=25).map("".join)


def with_specials(draw_text, specials=(EOT,)):
    """Texts with special tokens (or pieces of them) put in anywhere."""
    parts = st.one_of(draw_text, st.sampled_from([*specials, "<|end", "text|>", "<|"]))
    return st.lists(parts, max_size=6).map("".join)


def byte_counts(text: str, specials=(EOT,)) -> Counter:
    counts: Counter = Counter()
    for piece, special in split_special(text, specials):
        if not special:
            for token in pretokenize(piece):
                counts[tuple(bytes([b]) for b in token.encode("utf-8"))] += 1
    return counts


def python_docs(size: int) -> str:
    from pydoc_data.topics import topics

    return EOT.join(topics[name] for name in sorted(topics))[:size]


# ---- GPT-2's pre-tokens ---------------------------------------------------------------------

def test_pretokens_split_words_numbers_symbols_and_spaces_as_gpt2():
    assert pretokenize("Hello, world! It's  42 apples\n\n  don't") == [
        "Hello", ",", " world", "!", " It", "'s", " ", " 42", " apples", "\n\n ", " don", "'t"]
    assert pretokenize("naïve café²") == ["naïve", " café", "²"]
    assert pretokenize("") == []


@settings(max_examples=60, deadline=None)
@given(st.one_of(texts, words))
def test_pretokens_are_what_the_regex_module_finds_with_gpt2s_pattern(text):
    tiktoken_or_fail()  # brings the `regex` module, which has \p{L} and \p{N}
    import regex

    assert pretokenize(text) == regex.findall(GPT2_PATTERN, text)


def test_no_letter_or_number_lives_beyond_plane_3():
    beyond = (chr(c) for c in range(LAST_LETTER_OR_NUMBER + 1, 0x110000))
    assert not [ch for ch in beyond if ch.isalpha() or unicodedata.category(ch)[0] == "N"]


def test_special_tokens_cut_the_text_and_the_longer_wins():
    assert split_special("a<|x|><|x|>b<|x|>", ["<|x|>", "<|x|><|x|>"]) == [
        ("a", False), ("<|x|><|x|>", True), ("b", False), ("<|x|>", True)]
    assert split_special("plain", []) == [("plain", False)] and split_special("", [EOT]) == []


# ---- training ---------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(with_specials(st.one_of(texts, words)), st.integers(0, 30))
def test_training_learns_the_merges_recounting_learns(text, merges):
    vocab, learned = train_byte_pairs(text, 257 + merges, [EOT])
    assert learned == merges_by_recounting(byte_counts(text), merges)
    assert len(vocab) == 257 + len(learned)


def test_the_vocab_is_the_bytes_then_the_merges_then_the_special_tokens():
    vocab, merges = train_byte_pairs("low lower lowest newest widest " * 5, 262, ["<|a|>", "<|b|>"])
    assert [vocab[i] for i in range(256)] == [bytes([b]) for b in range(256)]
    assert [vocab[256 + i] for i in range(len(merges))] == [a + b for a, b in merges]
    assert [vocab[260], vocab[261]] == [b"<|a|>", b"<|b|>"] and len(merges) == 4
    assert merges[0] == (b"w", b"e")  # 15 times, as "lo", "ow", "es", "st": a tie goes to the greatest


def test_a_special_token_is_never_learned_from():
    text = (EOT * 50).join(["xy"] * 3)
    _, merges = train_byte_pairs(text, 300, [EOT])
    assert merges == [(b"x", b"y")]  # without the special token, "<|" and "|>" would come first
    _, merges = train_byte_pairs(text, 260, [])
    assert merges[0] == (b"|", b">")


def test_training_stops_when_no_pair_is_left():
    vocab, merges = train_byte_pairs("ab ab", 1000)
    assert merges == [(b"a", b"b"), (b" ", b"ab")] and len(vocab) == 258


def test_training_a_python_docs_sized_corpus_is_within_cs336s_time():
    text = python_docs(130_000)  # CS336 times 1.5 s on its corpus.en, 130 kB
    start = time.process_time()
    vocab, merges = train_byte_pairs(text, 500, [EOT])
    assert time.process_time() - start < 1.5
    assert len(vocab) == 500 and len(merges) == 243


# ---- the tokenizer ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tokenizer():
    return ByteTokenizer.train(python_docs(60_000), 600, [EOT])


@settings(max_examples=60, deadline=None)
@given(with_specials(st.one_of(st.text(), texts, words)))
def test_decode_gives_back_any_text(tokenizer, text):
    ids = tokenizer.encode(text)
    assert all(isinstance(i, int) for i in ids)
    assert tokenizer.decode(ids) == text


@settings(max_examples=60, deadline=None)
@given(with_specials(st.one_of(texts, words)), st.data())
def test_encode_iterable_gives_the_ids_of_the_whole_however_the_text_is_cut(tokenizer, text, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text)


@settings(max_examples=40, deadline=None)
@given(st.one_of(texts, words))
def test_each_pre_token_is_merged_in_the_order_the_merges_were_learned(tokenizer, text):
    for token in pretokenize(text):
        first = tuple(bytes([b]) for b in token.encode("utf-8"))
        pieces = pieces_by_merging_in_order(first, tokenizer.merges)
        assert tokenizer.encode(token) == [tokenizer.ids[p] for p in pieces]


def test_a_special_token_is_one_id_and_half_of_one_is_text(tokenizer):
    ids = tokenizer.encode(f"a{EOT}b<|endof")
    assert ids.count(tokenizer.ids[EOT.encode()]) == 1 and tokenizer.decode(ids) == f"a{EOT}b<|endof"
    assert ByteTokenizer.train("abc", 300).encode(EOT) == list(EOT.encode())  # not special there


def test_a_special_token_missing_from_the_vocab_gets_the_next_id():
    vocab, merges = train_byte_pairs("abab", 257)
    tok = ByteTokenizer(vocab, merges, ["<|pad|>"])
    assert tok.encode("ab<|pad|>") == [256, 257] and tok.vocab[257] == b"<|pad|>" and len(tok) == 258


def test_bytes_that_are_not_utf8_decode_to_the_replacement_character(tokenizer):
    assert tokenizer.decode([0xFF, ord("a"), 0xC3]) == "\ufffda\ufffd"
    cut = tokenizer.encode("é")  # two bytes, so one id each unless merged
    assert tokenizer.decode(cut) == "é"


def test_encode_iterable_streams_and_its_cache_stays_bounded(tokenizer):
    endless = itertools.cycle(["the quick brown fox\n", "jumps over  the lazy dog\n"])
    first = list(itertools.islice(tokenizer.encode_iterable(endless), 1000))  # it never reads it all
    assert tokenizer.decode(first).startswith("the quick brown fox\njumps over  the lazy dog\nthe")
    distinct = " ".join(f"w{i}" for i in range(3 * ByteTokenizer.CACHE_SIZE))
    assert tokenizer.decode(tokenizer.encode(distinct)) == distinct
    assert len(tokenizer._cache) <= ByteTokenizer.CACHE_SIZE


def test_gpt2s_vocab_and_merges_make_gpt2s_tokenizer():
    from gpt2_bpe import gpt2_vocab_and_merges

    tok = ByteTokenizer(*gpt2_vocab_and_merges(), [EOT])
    assert tok.encode("Hello world") == [15496, 995]  # GPT-2's ids for these words
    assert tok.encode(EOT) == [50256] and len(tok) == 50257


# ---- errors that name the argument --------------------------------------------------------------

def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"train_byte_pairs: vocab_size=200 leaves no room for the 256 bytes "
                                         r"and the 1 special tokens \(at least 257\)"):
        train_byte_pairs("abc", 200, [EOT])
    with pytest.raises(ValueError, match="train_byte_pairs: vocab_size must be a positive int, got 2.5"):
        train_byte_pairs("abc", 2.5)
    with pytest.raises(TypeError, match="train_byte_pairs: text must be a str, got bytes"):
        train_byte_pairs(b"abc", 300)
    with pytest.raises(TypeError, match=r"train_byte_pairs: special_tokens must be a list of non-empty "
                                        r"strings, got '<\|endoftext\|>'"):
        train_byte_pairs("abc", 300, EOT)
    vocab, merges = train_byte_pairs("abab", 258)
    tok = ByteTokenizer(vocab, merges)
    with pytest.raises(TypeError, match="ByteTokenizer.encode: text must be a str, got list"):
        tok.encode(["ab"])
    with pytest.raises(TypeError, match="ByteTokenizer.encode_iterable: each text must be a str, got bytes"):
        list(tok.encode_iterable(["ab", b"cd"]))
    with pytest.raises(IndexError, match=r"ByteTokenizer.decode: id 258 at ids\[1\] is out of range for 258 "
                                         r"ids"):
        tok.decode([97, 258])
    with pytest.raises(ValueError, match=rf"ByteTokenizer: merges\[{len(merges)}\] = \(b'ab', b'c'\) joins "
                                         r"pieces the vocab does not have"):
        ByteTokenizer(vocab, [*merges, (b"ab", b"c")])
    with pytest.raises(ValueError, match=r"ByteTokenizer: vocab has no id for the single bytes \[0, 1, 2"):
        ByteTokenizer({0: b"a"}, [])
    with pytest.raises(ValueError, match="ByteTokenizer: vocab maps two ids to the same bytes"):
        ByteTokenizer({**vocab, 300: b"ab"}, merges)


def test_the_docs_page_prints_what_it_shows(capsys):
    from doc_pages import run_page

    assert run_page("bpe.md", capsys) == 1
