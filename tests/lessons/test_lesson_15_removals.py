"""Lesson 15's verdicts, with their effect taken out of the lesson's own code.

Silences: the lesson's own measurement (`stream_ids`, the silences cell) at full size, where
the verdict is checked (drawing the batches costs seconds; nothing is trained), holds on the
manual; on a text of the same length whose every word is equally common (every window's ids
drawn uniformly) the rarest rows are read as often as any and go silent for a few steps only.
Decay (small mode): with the decay switched off in the optimizer, dense decay's paired
difference is exactly 0 and "dense decay adds to the link" fails. Gradient noise (small mode):
with the noise taken out of the batches (the lesson's `gradient_noise` drawing the same batch
every time) a row's gradient does not vary, and "real gradients are noisy" fails.

What the small mode cannot show: the full-size statements of `decay_in_a_language_model` (a
small part, under 0.2; touched-only against the link; lazy Adam moving it more). In the small
run's 0.1 epochs dense decay adds 0.25-0.27, so the lesson skips them there; the full-size run
`make test` ends with is their guard.
"""

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v
from minigrad.learn.train import Windows
from minigrad.optim import AdamW

pytestmark = pytest.mark.slow
SILENCES, DECAY_RUNS, NOISE = "silences = np.array([silences_of(", "lm_rho = {init: {mode:", "noise_bands = {"


class AdamWWithoutDecay(AdamW):
    """AdamW with the decay switched off, whatever the lesson asks for."""

    def __init__(self, params, **options):
        super().__init__(params, **{**options, "weight_decay": 0.0})


def silence_verdict(ns):
    return v.silences_in_a_language_model(ns["silences"][:, ns["rarest"]], ns["silences"][:, ns["busiest"]])


def test_on_a_text_whose_words_are_equally_common_no_row_goes_silent_for_long():
    lesson = Pipeline(15, small=False)
    lesson.run_until(DECAY_RUNS)  # the vocabulary, the windows and the silences, at full size
    ns = lesson.ns
    holds(silence_verdict(ns))
    data = ns["lm_data"]
    uniform = np.random.default_rng(15).integers(1, len(ns["lm_vocab"]), data.ids.shape)
    ns["lm_data"] = Windows(uniform, data.targets)
    with pytest.raises(AssertionError, match="the rarest tenth go silent"):  # the lesson's own hold()
        lesson.run_cell(SILENCES)
    fails_for(silence_verdict(ns), "the rarest tenth go silent for over a hundred steps")


@pytest.fixture(scope="module")
def lesson():
    pipeline = Pipeline(15)
    pipeline.run_until(NOISE)  # the small run up to the noise measurement
    pipeline.run_cell(NOISE)
    return pipeline


def test_with_the_decay_switched_off_dense_decay_adds_nothing(lesson, monkeypatch):
    ns = lesson.ns
    for init in ns["INITS"]:
        holds(v.decay_in_a_language_model(ns["lm_effect"][init], full_size=False))
    monkeypatch.setitem(ns, "AdamW", AdamWWithoutDecay)
    monkeypatch.setitem(ns, "INITS", dict(list(ns["INITS"].items())[:1]))  # one initialisation is enough
    lesson.run_cell(DECAY_RUNS)
    lesson.run_cell("effects = {  # paired over seeds")
    effect = ns["lm_effect"][next(iter(ns["INITS"]))]
    assert np.all(effect["dense decay - no decay"] == 0), "the same run twice"
    fails_for(v.decay_in_a_language_model(effect, full_size=False), "dense decay adds to the link")


def test_with_the_same_batch_every_time_a_rows_gradient_is_not_noisy(lesson, monkeypatch):
    ns = lesson.ns
    holds(v.real_noise_sets_the_ceiling(ns["frequent_noise"], ns["ceiling"]))
    batches = ns["batches"]

    def one_batch_again_and_again(data, size, rng):
        first = next(batches(data, size, rng))
        while True:
            yield first
    monkeypatch.setitem(ns, "batches", one_batch_again_and_again)
    lesson.run_cell(NOISE)
    fails_for(v.real_noise_sets_the_ceiling(ns["frequent_noise"], ns["ceiling"]), "real gradients are noisy")
