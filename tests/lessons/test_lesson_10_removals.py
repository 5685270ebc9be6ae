"""Lesson 10's verdicts, with their effect taken out of the lesson's own code.

The tied compromise: TinyLM's share curve stopped after its first windows is not yet about even
(the full-size run, whose TinyGPT curves must also flatten, is the guard of the statements the
small run leaves out). The paper's scale: with the lookup's scale set to 1 the "paper's" model
is the model as built, and is not ahead (run at the lesson's full vocabulary for 600 steps, two
seeds). Two untied maps: the multilingual models' bodies with an English-size vocabulary."""

import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v

pytestmark = pytest.mark.slow


@pytest.fixture
def lesson():
    pipeline = Pipeline(10)
    pipeline.run_until("SCALINGS = {")  # the share curves, at the small size
    return pipeline


def compromise(ns):
    windows = {name: len(starts) for name, starts in ns["curve_starts"].items()}
    return v.tied_compromise(ns["curve"], ns["moved"], windows, ns["FREQUENT"], ns["RARE"], full_size=False)


def test_a_curve_stopped_after_its_first_windows_is_not_yet_even(lesson):
    ns = lesson.ns
    holds(compromise(ns))
    build, windows, run = ns["CURVE_MODELS"]["TinyLM"]
    stopped = {**run, "steps": 3 * run["window"], "every": run["window"]}  # three windows, one after another
    ns["CURVE_MODELS"]["TinyLM"] = (build, windows, stopped)
    lesson.run_cell("curve_starts, curve, moved = {}")  # the run stopped after three windows
    fails_for(compromise(ns), "TinyLM, frequent rows: about even late")


def test_with_the_scale_set_to_one_the_papers_lookup_is_not_ahead(lesson):
    ns = lesson.ns
    lesson.run_cell("SCALINGS = {")
    ns["S"].scale_steps, ns["S"].scale_seeds = 600, 2  # long enough for the verdict's regime
    lesson.run_cell("scaled_end = {name: []")
    holds(v.paper_scale(ns["scaled_end"]))
    ns["SCALINGS"] = {**ns["SCALINGS"], "the paper's sqrt(d)": (1 / 8, 1.0)}  # the scale removed
    lesson.run_cell("scaled_end = {name: []")
    fails_for(v.paper_scale(ns["scaled_end"]), "ahead by more than 0.05")


def test_with_an_english_size_vocabulary_the_multilingual_models_maps_are_not_most():
    pipeline = Pipeline(10)
    pipeline.run_cell("MODELS = {  # the published")  # the published shapes, and how the lesson counts them
    pipeline.run_cell("def body_parameters(")
    ns = pipeline.ns

    def two_maps(models):
        found = {}
        for name, c in models.items():
            one_table, body = c["V"] * c["d"], ns["body_parameters"](c)
            found[name] = (0.0, 0.0, 2 * one_table / (body + 2 * one_table))
        return found

    holds(v.two_untied_maps(two_maps(ns["MODELS"])))
    english = {name: ({**c, "V": 32_000} if name.startswith(("BLOOM", "mT5")) else c)
               for name, c in ns["MODELS"].items()}
    fails_for(v.two_untied_maps(two_maps(english)), "250,000-token")
