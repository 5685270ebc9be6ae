"""Check for lesson 8: TinyLM's parameter count (against the model's own count) and the loss of
the unigram model (against minigrad's cross_entropy over the text the counts describe)."""

from types import ModuleType

import numpy as np

from minigrad.engine import tensor
from minigrad.models import TinyLM
from minigrad.nn import functional as F

from . import _common as common

# (V, d, H, C): every size different, so each typical mistake gives its own number; C = 1 first
# (the simplest model), then a context of 3 (where the concatenation matters).
CONFIGS = [(7, 4, 5, 1), (50, 8, 12, 3), (2000, 64, 128, 3)]

# counts per vocabulary entry: one with a word that never occurs, a uniform one (log V), a Zipf tail
COUNTS = [
    np.array([5, 0, 3, 1, 1]),
    np.array([4, 4, 4, 4]),
    np.array([40, 19, 13, 10, 8, 6, 5, 5, 4, 3, 0, 2, 2, 1, 1, 1, 0, 1]),
]


def check(answers: ModuleType) -> None:
    count_parameters = common.answer_function(answers, "tiny_lm_parameter_count")
    unigram = common.answer_function(answers, "unigram_loss")
    for config in CONFIGS:
        for tied in (False, True):
            _check_count(count_parameters, *config, tied)
    for counts in COUNTS:
        _check_unigram(unigram, counts)


def _check_count(count_parameters, V: int, d: int, H: int, C: int, tied: bool) -> None:
    what = f"tiny_lm_parameter_count(vocab_size={V}, embedding_dim={d}, hidden={H}, context={C}, tied={tied})"
    expected = TinyLM(V, d, H, C, tied=tied, rng=0).num_parameters()  # the model counts itself
    got = common.as_number(common.call_answer(count_parameters, V, d, H, C, tied), what, integer=True)
    table = V * d
    mistakes = [
        (expected + table if tied else expected - table,
         f"the tied table counted twice: head.weight is emb.weight, one Parameter of V*d = {table} numbers"
         if tied else f"the head is missing: untied, head.weight is its own (V, d) table of {table} numbers"),
        (expected - H - d, f"the biases are missing: up has {H} (one per hidden unit) and down has {d}"),
        (expected - H, f"up's bias ({H} numbers, one per hidden unit) is missing"),
        (expected - d, f"down's bias ({d} numbers, one per output coordinate) is missing"),
        (expected + V, f"the head has no bias (Linear(d, V, bias=False)), but you added {V}"),
    ]
    if C > 1:
        mistakes += [
            (expected - (C - 1) * d * H,
             f"up reads the {C} rows side by side, so its weight is (H, C*d) = ({H}, {C * d}), not (H, d)"),
            (expected + (C - 1) * table,
             f"the table is read {C} times per window but stored once: count V*d = {table} once"),
        ]
    if got != expected and not any(got == wrong for wrong, _ in mistakes):
        raise AssertionError(
            f"{what} is off by {got - expected:+,.0f} (expected {expected:,}, got {got:,.0f}); count layer "
            "by layer: the table V*d, up C*d*H + H, down H*d + d, and the head d*V unless tied"
        )
    common.assert_number(got, expected, what, mistakes)


def _engine_loss(counts: np.ndarray) -> float:
    """Mean cross-entropy, from minigrad, of logits log p_i at every token of a text with `counts`."""
    text = np.repeat(np.arange(counts.size), counts)  # the order does not matter to a unigram model
    p = counts / counts.sum()
    logits = np.where(counts > 0, np.log(np.maximum(p, 1e-300)), -1e4)  # exp(-1e4) is exactly 0
    return F.cross_entropy(tensor(np.tile(logits, (text.size, 1))), text).item()


def _check_unigram(unigram, counts: np.ndarray) -> None:
    what = f"unigram_loss({counts.tolist()})"
    expected = _engine_loss(counts)
    got = common.as_number(common.call_answer(unigram, counts), what)
    n, present = counts.sum(), counts[counts > 0]
    p = present / n
    mistakes = [
        (expected / np.log(2), "that is in bits (log base 2); the loss uses the natural log, nats"),
        (expected / np.log(10), "that is log base 10; the loss uses the natural log, nats"),
        (float(np.mean(-np.log(p))), "you averaged -log p_i over vocabulary entries, but the loss "
                                     "averages over tokens: entry i counts p_i of the time (weight by p_i)"),
        (float(np.sum(-np.log(p))), "you summed -log p_i over vocabulary entries: weight each by how often "
                                    "it is the target, p_i"),
        (float(-(p * np.log(present)).sum()), "inside the log use the probability p_i = counts_i / N, "
                                              "not the raw count"),
        (expected * n, f"that is the total over all N = {n} tokens; the loss is the mean per token"),
        (expected * n / counts.size,
         f"you divided by V = {counts.size}; the mean is over the N = {n} tokens"),
    ]
    if np.ptp(present) > 0 or present.size < counts.size:
        mistakes.append((np.log(counts.size), "that is log V, the uniform model's loss: with unequal counts "
                                              "the frequencies predict better than uniform"))
    common.assert_number(got, expected, what, mistakes, rtol=1e-7)
