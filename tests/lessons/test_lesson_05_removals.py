"""Lesson 5's verdicts, with their effect taken out of the lesson's own code (small mode).

Each test runs the lesson's cells up to a measurement, checks that the verdict holds with the
effect in, then removes the effect (the softmax, the spread of row lengths, the independence of
the output map, the narrowness of the space) and checks that the named statement fails."""

from types import SimpleNamespace

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v
from minigrad.nn import functional as F

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lesson():
    pipeline = Pipeline(5)
    pipeline.run_until(None)  # the whole lesson: it takes seconds
    return pipeline


def target_logit_only(logits, targets):
    """A loss without the softmax: minus the target's logit. Only the target's row is scored."""
    return -logits[np.arange(len(targets)), targets].mean()


def pushes_every_row_alike(logits, targets):
    """Minus the target's logit plus the mean logit: every wrong row is pushed by the same 1 / V."""
    return (logits.mean(axis=-1) - logits[np.arange(len(targets)), targets]).mean()


def test_without_the_softmax_only_the_target_row_learns(lesson):
    ns = lesson.ns
    holds(v.every_row_every_position(ns["touched_out"], ns["touched_in"]))
    ns["F"] = SimpleNamespace(**{**vars(F), "cross_entropy": target_logit_only})
    try:
        lesson.run_cell("touched_out = np.zeros")
    finally:
        ns["F"] = F
    assert ns["touched_out"].sum(axis=1).tolist() == [1] * len(ns["touched_out"])
    fails_for(v.every_row_every_position(ns["touched_out"], ns["touched_in"]),
              "gets a gradient from each position")


def test_a_push_that_ignores_probability_has_no_near_miss(lesson):
    ns = lesson.ns
    holds(v.near_miss_pushed_hardest(ns["p_big"], ns["push"], ns["big_target"]))
    ns["F"] = SimpleNamespace(**{**vars(F), "cross_entropy": pushes_every_row_alike})
    try:
        lesson.run_cell("big_head = mg.nn.Linear")
    finally:
        ns["F"] = F
    fails_for(v.near_miss_pushed_hardest(ns["p_big"], ns["push"], ns["big_target"]),
              "the near-miss first", "push proportional to p")


def test_rows_of_equal_length_do_not_spoil_the_round_trip(lesson):
    ns = lesson.ns
    widths, V = ns["widths"], ns["round_V"]
    holds(v.round_trip_on_random_tables(widths, ns["tied"], ns["tied_uneven"], ns["untied"], V))
    tied, even, untied = np.array([ns["round_trip_shares"](w, length_spread=0.0) for w in widths]).T
    fails_for(v.round_trip_on_random_tables(widths, tied, even, untied, V), "unequal length spoil")


def test_an_output_map_that_is_the_table_gives_the_token_back(lesson):
    ns = lesson.ns
    widths, V, rng = ns["widths"], ns["round_V"], np.random.default_rng(0)
    tables = [rng.standard_normal((V, w)) for w in widths]
    copied = [ns["recovered_fraction"](E, E) for E in tables]  # the "untied" map made the table itself
    verdict = v.round_trip_on_random_tables(widths, ns["tied"], ns["tied_uneven"], copied, V)
    fails_for(verdict, "only by chance")


def test_in_a_wide_space_from_the_start_no_token_loses_its_row(lesson):
    ns = lesson.ns
    widths = [256, 512]  # the narrow end of the range removed
    tied, uneven, untied = np.array([ns["round_trip_shares"](w) for w in widths]).T
    fails_for(v.round_trip_on_random_tables(widths, tied, uneven, untied, ns["round_V"]), "narrowest space")
