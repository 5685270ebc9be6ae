"""Lesson 6's verdicts, with their effect taken out of the lesson's own code (small mode).

The ledger over real text: with a softmax that scores only the target (the classifier's dense
path removed) the classifier no longer reaches every row; on a text whose words are all equally
common (frequency removed) the lookup reaches every band alike and the rare rows' lean to the
classifier goes. Absent rows: with the tie broken an absent row of the "tied" table stays put;
with weight decay an unread untied input row moves."""

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v
from minigrad.models import TinyLM
from minigrad.nn import functional as F
from minigrad.optim import SGD

pytestmark = pytest.mark.slow

TRAIN, DISPLACEMENT = "model = tie(TinyLM(V, width", "displacement = table.data"
BANDS = "edges = size.band_edges"


@pytest.fixture
def lesson():
    pipeline = Pipeline(6)
    pipeline.run_until(None)  # the whole lesson: it takes seconds
    return pipeline


def ledger_verdict(ns):
    bands = [b[2:] for b in ns["bins"]]
    return v.two_paths_by_frequency(ns["arrivals"]["classifier"][1:], ns["steps"], bands)


def rerun_ledger(lesson):
    for marker in (TRAIN, DISPLACEMENT, BANDS):
        lesson.run_cell(marker)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # rows no path reached
def test_a_softmax_that_scores_only_the_target_leaves_rows_without_a_classifier_gradient(lesson, monkeypatch):
    holds(ledger_verdict(lesson.ns))
    monkeypatch.setattr(F, "cross_entropy",
                        lambda logits, targets: -logits[np.arange(len(targets)), targets].mean())
    rerun_ledger(lesson)
    fails_for(ledger_verdict(lesson.ns), "every row a gradient on every step")


def test_on_a_text_without_frequent_and_rare_words_the_bands_are_alike(lesson):
    ns = lesson.ns
    rng = np.random.default_rng(0)
    ns["inputs"] = rng.integers(1, ns["V"], ns["inputs"].shape)  # every word equally common
    ns["next_tokens"] = rng.integers(1, ns["V"], ns["next_tokens"].shape)
    rerun_ledger(lesson)
    fails_for(ledger_verdict(ns), "most frequent rows on most steps", "over 5 points more")


def test_with_the_tie_broken_an_absent_row_stays_put(lesson):
    ns = lesson.ns
    holds(v.absent_rows_move(ns["moved"]))
    ns["model"] = TinyLM(ns["V"], ns["width"], ns["hidden"], context=ns["context"], tied=False, rng=0)
    ns["table"], ns["optimizer"] = ns["model"].emb.weight, SGD(ns["model"].parameters(), lr=ns["lr"])
    lesson.run_cell("window_batches = [")
    fails_for(v.absent_rows_move(ns["moved"]), "every absent tied row moves")


def test_with_weight_decay_an_unread_untied_row_moves(lesson):
    ns = lesson.ns
    ns["SGD"] = lambda params, lr: SGD(params, lr=lr, weight_decay=0.01)
    lesson.run_cell("window_batches = [")
    fails_for(v.absent_rows_move(ns["moved"]), "nobody reads does not change")
