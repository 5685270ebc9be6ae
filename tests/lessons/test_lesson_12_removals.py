"""Lesson 12's verdicts, with their effect taken out of the lesson's own code.

The cones and frequency axes (small mode): the trained tables put back to their initial rows
leave no output map narrower than its input map and no first component that follows
frequency. The guard that makes "the untied input map forms no cone" a statement about
training, and the grouping of words used alike, need the full vocabulary and longer training
than the small mode's: those tests train TinyLM at V = 2,000 for 600 steps (the full-size
lesson is their guard for TinyGPT): its input map put back to its initial rows fails the
guard, and tables put back, or trained on the text shuffled, do not group words with their
kind. The traffic ratio: a text in which every word is equally common."""

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for, holds, quiet

from minigrad.learn.kit import verdicts as v

pytestmark = pytest.mark.slow


def trained_then_reset(train_on_text):
    """train_on_text, then both tables put back to their initial rows (the body stays trained)."""
    def train(model, *args, **options):
        initial = [model.input_table.data.copy(), model.output_table.data.copy()]
        history = train_on_text(model, *args, **options)
        model.input_table.data[...], model.output_table.data[...] = initial
        return history
    return train


@pytest.fixture
def lesson():
    pipeline = Pipeline(12)
    pipeline.run_until("cones = {key: np.array(")  # the twelve runs, at the small size
    return pipeline


def cones_and_axes(lesson):
    """The lesson's cone and frequency-axis measurements, as its cells make them."""
    for marker in ("cones = {key: np.array(", "raw = {key: c[:, 1]", "found = {key: [principal_axes"):
        lesson.run_cell(marker)
    ns = lesson.ns
    cones = v.cones_in_a_transformer(ns["raw"], ns["spreads"], ns["worth"], full_size=False)
    axes = v.frequency_axes_in_a_transformer(ns["rho_pc1"], ns["rho_other"], ns["pc1_share"], ns["worth"],
                                             full_size=False)
    return cones, axes


def test_tables_put_back_to_their_initial_rows_have_no_cone_and_no_frequency_axis(lesson):
    cones, axes = cones_and_axes(lesson)
    holds(cones)
    holds(axes)
    ns = lesson.ns
    ns["train_on_text"] = trained_then_reset(ns["train_on_text"])
    with quiet():
        ns["runs"] = {(family, seed): ns["trained_tables"](family, seed)
                      for family in ns["FAMILIES"] for seed in ns["SEEDS"]}
    cones, axes = cones_and_axes(lesson)
    fails_for(cones, "TinyLM: the output map's cone is far narrower", "TinyGPT: the output map's cone")
    fails_for(axes, "PC1 is the component that follows frequency")


def test_a_text_where_every_word_is_equally_common_has_no_quiet_tail():
    pipeline = Pipeline(12)
    for marker in ("import os", "def busiest_to_quietest("):
        pipeline.run_cell(marker)
    ns = pipeline.ns
    even = [f"w{i % 500}" for i in range(100_000)]  # 500 words, each 200 times
    found = ns["traffic_ratios"](even)
    fails_for(v.busiest_to_quietest_on_real_text(found), "seen once", "four times the text")


@pytest.fixture(scope="module")
def longer():
    """Lesson 12 at its full vocabulary, TinyLM trained for 600 steps, one seed."""
    pipeline = Pipeline(12, small=False)
    pipeline.run_until("runs = {(family, seed)")
    for marker in ("def table_rows(", "GROUPS = token_categories", "def stand_ins("):
        pipeline.run_cell(marker)
    ns = pipeline.ns
    ns["FAMILIES"]["TinyLM"]["steps"] = 600
    ns["controls"] = [ns["stand_ins"](seed) for seed in range(3)]
    log_seen = np.log(ns["train_counts"][ns["rows"]])
    ns["chance_count"] = float(np.mean(np.abs(log_seen[:, None] - log_seen[None, :]) < np.log(2)))
    return pipeline


def tinylm(ns, train_on_text=None):
    """TinyLM's tables of seed 0 and what its input map is worth, trained as the lesson trains it."""
    real = ns["train_on_text"]
    ns["train_on_text"] = train_on_text or real
    try:
        with quiet():
            ns["runs"] = {("TinyLM", 0): ns["trained_tables"]("TinyLM", 0)}
    finally:
        ns["train_on_text"] = real
    grouping = {("TinyLM", table): ns["grouping_of"](("TinyLM", table), 0)[None]
                for table in ("input map E", "output map W", "tied table")}
    return ns["runs"]["TinyLM", 0][1]["input map worth"], grouping


def test_an_input_map_put_back_to_its_initial_rows_fails_the_guard_and_nothing_groups(longer):
    ns = longer.ns
    worth, grouping = tinylm(ns)
    holds(v.input_maps_learned({"TinyLM": [worth]}))
    holds(v.words_used_alike(grouping, ns["chance_count"]), "words group with their kind")
    worth, grouping = tinylm(ns, trained_then_reset(ns["train_on_text"]))
    fails_for(v.input_maps_learned({"TinyLM": [worth]}), "the untied input map is learned")
    fails_for(v.words_used_alike(grouping, ns["chance_count"]), "input map E: words group",
              "output map W: words group", "centring raises the grouping")


def test_trained_on_the_text_shuffled_no_table_groups_words_with_their_kind(longer):
    ns = longer.ns
    text = ns["token_ids"]
    ns["token_ids"] = np.random.default_rng(0).permutation(text)  # the same words in no order
    try:
        worth, grouping = tinylm(ns)
    finally:
        ns["token_ids"] = text
    fails_for(v.input_maps_learned({"TinyLM": [worth]}), "the untied input map is learned")
    fails_for(v.words_used_alike(grouping, ns["chance_count"]), "input map E: words group")
