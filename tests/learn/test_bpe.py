"""minigrad.learn.bpe: the byte-pair trainer learns the merges the definition gives, in order,
and the tokenizer it makes is lossless."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from bpe_reference import merges_by_recounting
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.learn.bpe import BytePairs, merge_pair

SENNRICH = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3


def merges_by_recounting_words(words: list[str], merges: int) -> list[tuple[str, str]]:
    """The definition (helpers/bpe_reference.py) on the words, each with its leading space."""
    return merges_by_recounting(Counter(tuple(" " + w) for w in words), merges)


def test_merges_take_the_most_frequent_pair_and_a_tie_goes_to_the_greater_pair():
    # counted by hand: (e, s) and (s, t) both occur 9 times and ("s", "t") is the greater pair;
    # then "est" (9), then the three 7s of " low" from the greatest: (o, w), (l, ow), (" ", low)
    bpe = BytePairs.train(SENNRICH, 5)
    assert bpe.merges == [("s", "t"), ("e", "st"), ("o", "w"), ("l", "ow"), (" ", "low")]
    assert bpe.pieces[-5:] == ["st", "est", "ow", "low", " low"]
    assert [bpe.pieces[i] for i in bpe.encode(["low", "newest"])] == [" low", " ", "n", "e", "w", "est"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcd'", min_size=1, max_size=7), min_size=1, max_size=30),
       st.integers(0, 25))
def test_the_incremental_counts_learn_what_recounting_learns(words, merges):
    assert BytePairs.train(words, merges).merges == merges_by_recounting_words(words, merges)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcd'", min_size=1, max_size=7), min_size=1, max_size=30),
       st.integers(0, 25), st.lists(st.text(alphabet="abcd'", min_size=1, max_size=9), max_size=10))
def test_decoding_gives_back_the_words_seen_or_not(words, merges, other_words):
    bpe = BytePairs.train(words + ["abcd'"], merges)  # every character seen once at least
    for text in (words, other_words):
        ids = bpe.encode(text)
        assert ids.dtype == np.int64
        assert bpe.decode(ids) == "".join(" " + w for w in text)


def test_encoding_the_training_words_gives_the_training_segmentation():
    # after every merge " low" is one piece, and a word seen in training splits as training split it
    bpe = BytePairs.train(SENNRICH, 8)
    assert [bpe.pieces[i] for i in bpe.encode(["low"])] == [" low"]
    split = Counter(tuple(" " + w) for w in SENNRICH)
    for pair in bpe.merges:
        split = Counter({merge_pair(pieces, pair): n for pieces, n in split.items()})
    for pieces in split:
        assert [bpe.pieces[i] for i in bpe.encode([''.join(pieces)[1:]])] == list(pieces)


def test_no_merges_is_a_character_tokenizer():
    bpe = BytePairs.train(["abc", "cab"], 0)
    assert bpe.pieces == [" ", "a", "b", "c"] and len(bpe) == 4
    assert bpe.encode(["ba"]).tolist() == [0, 2, 1]


def test_training_stops_when_every_word_is_one_piece():
    bpe = BytePairs.train(["ab", "ab"], 10)
    assert bpe.merges == [("a", "b"), (" ", "ab")]
    assert len(bpe) == 3 + 2


def test_merge_pair_joins_non_overlapping_occurrences_left_to_right():
    assert merge_pair(("a", "a", "a"), ("a", "a")) == ("aa", "a")
    assert merge_pair(("a", "b", "a", "b"), ("a", "b")) == ("ab", "ab")
    assert merge_pair(("a",), ("a", "b")) == ("a",)


@pytest.mark.parametrize("merges", [-1, 1.5, "3"])
def test_merges_must_be_a_count(merges):
    with pytest.raises(ValueError, match=r"merges=.* must be an int >= 0"):
        BytePairs.train(["ab"], merges)


def test_training_needs_words():
    with pytest.raises(ValueError, match="words is empty"):
        BytePairs.train([], 3)


def test_a_character_outside_the_alphabet_is_named():
    bpe = BytePairs.train(["abc"], 2)
    with pytest.raises(ValueError, match=r"the word 'abz' has characters \['z'\] outside the alphabet"):
        bpe.encode(["ab", "abz"])


def test_decode_names_an_id_out_of_range():
    bpe = BytePairs.train(["abc"], 0)
    with pytest.raises(IndexError, match=r"BytePairs.decode: id 4 at ids\[1\] is out of range for 4 pieces"):
        bpe.decode([0, 4])
