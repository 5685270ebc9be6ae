"""Lesson 7's verdicts, with their effect taken out of the lesson's own code (small mode).

Adam after a silence: with lazy Adam (the second moment v no longer decays while the row is
silent) the step back is no shorter after a pause and no crossing comes. Noisy gradients: with
the noise switched off every noise level gives the constant gradient's ratio. Decay on a Zipf
stream: with the decay switched off in the optimizer, dense decay adds nothing to the link."""

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v
from minigrad.optim import AdamW

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lesson():
    pipeline = Pipeline(7)
    pipeline.run_until(None)  # the whole lesson (the language model is lesson 15)
    return pipeline


def silence_verdict(ns, step_back, crossing, longest, on_arrival):
    return v.adam_after_a_silence(ns["pauses"], step_back, crossing, longest, ns["ceiling"], ns["periods"],
                                  on_arrival)


def test_without_v_decaying_in_a_silence_the_step_back_is_not_shorter_nor_later_longer(lesson):
    ns = lesson.ns
    holds(silence_verdict(ns, ns["measured"]["Adam"], (ns["crossing"], ns["crossing_warm"]),
                          ns["long_ratio"].max(), ns["rare_measured"]["Adam"][0]))
    beta1, beta2, lr = ns["BETA1"], ns["BETA2"], ns["LR"]
    moves, _ = ns["run"](lambda p: ns["Adam"](p, lr=lr, betas=(beta1, beta2), lazy=True))  # v kept
    their_step = ns["adam_step_after_silence"]
    ns["adam_step_after_silence"] = lambda m, v_, t, k, g, lr, betas, eps, lazy: their_step(
        m, v_, t, k, g, lr, betas, eps, True)
    try:
        crossing = (ns["first_pause_longer"](ns["warmup"]), ns["first_pause_longer"](100_000))
        longest = max(ns["predicted_step_back"](k) for k in ns["long_k"])
    finally:
        ns["adam_step_after_silence"] = their_step
    fails_for(silence_verdict(ns, ns["step_back"](moves), crossing, longest, ns["at_arrival"](moves)[0]),
              "step back is shorter", "thousands of steps")


def test_without_noise_every_level_gives_the_constant_gradients_ratio(lesson):
    ns = lesson.ns
    levels, ceiling = ns["NOISE_LEVELS"], ns["ceiling"]
    holds(v.noise_and_the_ceiling(ns["longest"], levels, ceiling, full_size=False))
    ns["NOISE_LEVELS"] = np.zeros_like(levels)  # the simulation's noise switched off
    try:
        quiet = np.array([ns["noisy_arrival_ratios"](seed) for seed in ns["NOISY_SEEDS"]])[:, :, -1]
    finally:
        ns["NOISE_LEVELS"] = levels
    verdict = v.noise_and_the_ceiling(quiet, levels, ceiling, full_size=False)
    fails_for(verdict, "more noise means a larger ratio")


class AdamWWithoutDecay(AdamW):
    """AdamW with its weight decay switched off, whatever it is asked for."""

    def __init__(self, params, **options):
        super().__init__(params, **{**options, "weight_decay": 0.0})


def zipf_verdict(ns):
    correlations = ns["stream_correlations"]
    return v.decay_on_a_zipf_stream(correlations["no decay (Adam)"], correlations["dense (torch AdamW)"],
                                    correlations["lazy, touched only"], full_size=False)


def test_with_the_decay_switched_off_dense_decay_adds_nothing(lesson):
    ns = lesson.ns
    holds(zipf_verdict(ns))
    ns["AdamW"] = AdamWWithoutDecay
    try:
        lesson.run_cell("modes = {")  # the four tables, trained again
        lesson.run_cell("stream_correlations = {")  # and the three streams
    finally:
        ns["AdamW"] = AdamW
    fails_for(zipf_verdict(ns), "dense decay adds over 0.1")
