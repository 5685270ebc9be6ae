"""Lesson 11's verdicts, with their effect taken out of the lesson's own code (small mode).

The cone and the frequency axis: TinyLM's tables put back to their initial rows after training
form no cone and have no first component that follows frequency. The input table settling
last: an input table that stops changing after the first quarter of the run (its later
snapshots replaced by the one at the quarter) is then as settled as anything, and the verdict
fails. The guard that the input map is learned needs longer runs than the small mode's: it is
the kit's input_map_worth and input_maps_learned, which lesson 12's tests run at full vocabulary
with the map put back to its initial rows and with the text shuffled."""

import pytest
from lesson_pipeline import Pipeline, fails_for, holds

from minigrad.learn.kit import verdicts as v

pytestmark = pytest.mark.slow


@pytest.fixture
def lesson():
    pipeline = Pipeline(11)
    pipeline.run_until("frequent = np.argsort(-train_counts)[:300]")  # parts 1 to 3, at the small size
    for marker in ("frequent = np.argsort(-train_counts)[:300]", "def settling("):
        pipeline.run_cell(marker)
    return pipeline


def test_tables_put_back_to_their_initial_rows_have_no_cone_and_no_frequency_axis(lesson):
    ns = lesson.ns
    holds(v.cone_in_tinylm(ns["cones"]))
    holds(v.frequency_axis_in_tinylm(ns["rho_pc1"], ns["rho_best_other"]))
    for run in ns["runs"].values():
        run["tables"] = {name: (start, start) for name, (start, _) in run["tables"].items()}  # never moved
    for marker in ("cones = {name: np.array(", "axes_by_seed = {name:"):
        lesson.run_cell(marker)
    fails_for(v.cone_in_tinylm(ns["cones"]), "the output map forms a cone")
    fails_for(v.frequency_axis_in_tinylm(ns["rho_pc1"], ns["rho_best_other"]), "PC1 follows frequency")


def test_an_input_table_that_stops_changing_after_a_quarter_has_settled_first(lesson):
    ns = lesson.ns
    lesson.run_cell("settled = {s: settling(runs[s])")
    holds(v.input_table_settles_last(ns["at_quarter"]))
    quarter_step = ns["eval_steps"][ns["quarter"]]
    for run in ns["runs"].values():
        held = run["snapshots"][quarter_step]["emb.weight"]
        for step, weights in run["snapshots"].items():
            if step > quarter_step:
                weights["emb.weight"] = held  # the table frozen from the quarter on
    lesson.run_cell("settled = {s: settling(runs[s])")
    fails_for(v.input_table_settles_last(ns["at_quarter"]), "the loss is further along than the input")
