"""Lesson 14's verdicts, with their effect taken out of the lesson's own code (small mode), on its
first rung (V = d, the table a few percent of the model), two seeds.

Settling: a table put back to its initial rows at every evaluation of the first half of the
pass (the lesson's own `pretrain`, through its `one_pass`) has made none of its change in
geometry at the quarter while the loss has made some, so it is not "further along than the
loss". Freezing: with the freeze taken out of `finetune` (the "frozen" table trained too) the
two fine-tunings are one run, and "freezing gives up over 10%" fails. The random-table control:
with the control's table trained in pretraining like the others (the random table taken out),
it gives up what freezing does, and "a table kept random gives up over half, ten times what
freezing does" fails.

What the small mode cannot show: with the effect in place, 20,000 words do not reach the
regime the verdicts are about (the lesson skips them in the small mode), so whether the table
settles first, whether freezing is free at V = d and costs at V = 4d, and how much a random
table costs are not asserted to hold here. The full-size run `make test` ends with is their
guard.
"""

import numpy as np
import pytest
from lesson_pipeline import Pipeline, fails_for

from minigrad.learn.kit import verdicts as v

pytestmark = pytest.mark.slow
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def lesson():
    pipeline = Pipeline(14)
    pipeline.run_until("runs = {rung: [run_rung(rung, seed)")  # the lesson's functions, no runs yet
    return pipeline


def cost_shares(found: list[dict], arm: str) -> np.ndarray:
    return v.freezing_cost_share(*(np.array([r[key] for r in found]) for key in ("before", "trained", arm)))


def test_a_table_put_back_to_its_initial_rows_until_half_way_has_not_settled(lesson, monkeypatch):
    ns = lesson.ns
    one_pass = ns["one_pass"]

    def table_reset_until_half(model, text, held_out, seed, label, evaluations, on_eval=None):
        start, evaluated = model.input_table.data.copy(), []

        def reset_then_keep(step, m):
            if len(evaluated) <= evaluations // 2:
                m.input_table.data[...] = start
            evaluated.append(step)
            on_eval(step, m)
        return one_pass(model, text, held_out, seed, label, evaluations, reset_then_keep)

    monkeypatch.setitem(ns, "one_pass", table_reset_until_half)
    found = [ns["pretrain"](ns["V_IS_D"], seed)[1] for seed in SEEDS]
    structure, loss_done = (np.array([r[key] for r in found]) for key in ("input structure", "loss_done"))
    assert np.all(structure == 0) and np.all(loss_done > 0), (structure, loss_done)
    fails_for(v.ahead_of_the_loss(structure, loss_done), "the geometry is further along")


def test_without_the_freeze_freezing_gives_up_nothing(lesson, monkeypatch):
    ns = lesson.ns
    finetune = ns["finetune"]
    monkeypatch.setitem(ns, "CONTROLLED", ())
    monkeypatch.setitem(ns, "finetune", lambda model, rung, seed, frozen: finetune(model, rung, seed, False))
    found = [ns["run_rung"](ns["V_IS_D"], seed) for seed in SEEDS]
    shares = cost_shares(found, "frozen")
    assert np.all(shares == 0), "the two fine-tunings are one run"
    fails_for(v.freezing_is_not_free(shares), "freezing gives up over 10%")


def test_a_control_whose_table_was_trained_costs_what_freezing_does(lesson, monkeypatch):
    ns = lesson.ns
    pretrain = ns["pretrain"]
    monkeypatch.setitem(ns, "pretrain",
                        lambda rung, seed, random_table=False: pretrain(rung, seed, random_table=False))
    found = [ns["run_rung"](ns["V_IS_D"], seed) for seed in SEEDS]
    fails_for(v.frozen_table_matters(cost_shares(found, "random"), cost_shares(found, "frozen")),
              "a table kept random gives up over half", "ten times what freezing")
