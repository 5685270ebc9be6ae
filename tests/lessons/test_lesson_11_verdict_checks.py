"""The checks behind lesson 11's settling and freezing verdicts (minigrad.learn.kit, with every
other verdict: `{statement: holds}`) can fail: fed a table that has not settled, or a fine-tuning
where freezing costs a lot, they say so, for the named reason; NaN never passes. The lesson
asserts them on its full-size measurements."""

from __future__ import annotations

import numpy as np
import pytest

from minigrad.learn import kit

# the lesson's full-size figures, rounded (three seeds): what the verdicts were asserted on
LOSS_DONE_AT_A_QUARTER = np.array([0.72, 0.73, 0.72])
TRAINED, BEFORE = np.array([2.50, 2.58, 2.54]), np.array([2.64, 2.68, 2.67])
FREE = "in every seed freezing gives up under 5% of what fine-tuning gains"
AHEAD = "in every seed the geometry is further along than the loss"


def test_the_cost_of_freezing_is_a_share_of_what_fine_tuning_gains():
    share = kit.freezing_cost_share(before=[3.0, 4.0], trained=[2.0, 3.5], frozen=[2.5, 3.4])
    assert np.allclose(share, [0.5, -0.2])


def test_freezing_that_costs_nothing_passes_the_check():
    frozen = TRAINED - 0.001  # the few-percent table: frozen ends a hair ahead
    kit.hold(kit.freezing_is_free(kit.freezing_cost_share(BEFORE, TRAINED, frozen)))


@pytest.mark.parametrize("given_up", [0.06, 0.2, 1.0])
def test_freezing_that_gives_up_part_of_the_gain_fails_the_check(given_up):
    frozen = TRAINED + given_up * (BEFORE - TRAINED)
    frozen[1] = TRAINED[1]  # free in one seed is not enough: every seed must be
    assert kit.failures(kit.freezing_is_free(kit.freezing_cost_share(BEFORE, TRAINED, frozen))) == [FREE]


def test_a_nan_loss_is_never_free_and_never_settled():
    frozen = TRAINED.copy()
    frozen[2] = np.nan
    assert not kit.holds(kit.freezing_is_free(kit.freezing_cost_share(BEFORE, TRAINED, frozen)))
    assert not kit.holds(kit.ahead_of_the_loss(np.array([0.9, np.nan, 0.9]), LOSS_DONE_AT_A_QUARTER))
    assert not kit.holds(kit.ahead_of_the_loss(np.array([0.9, 0.9, 0.9]), np.array([0.7, np.nan, 0.7])))


def test_the_cost_needs_a_gain_in_every_seed():
    with pytest.raises(ValueError, match=r"in every seed; before - trained = \[0.1, 0.0\]"):
        kit.freezing_cost_share(before=[3.0, 3.0], trained=[2.9, 3.0], frozen=[3.0, 3.0])
    with pytest.raises(ValueError, match="one loss per seed"):
        kit.freezing_cost_share(before=[3.0, 3.0], trained=[2.9], frozen=[3.0, 3.0])


def tables_along_a_run(settles_at: int, points: int = 9, V: int = 60, d: int = 16, seed: int = 0) -> list:
    """A table at `points` evaluations: random at the start, its final geometry from evaluation
    `settles_at` on (only a common scale changes after that), independent random tables between."""
    rng = np.random.default_rng(seed)
    final = rng.standard_normal((V, d))
    return [final * (1 + 0.1 * k) if k >= settles_at else rng.standard_normal((V, d)) for k in range(points)]


@pytest.mark.parametrize("settles_at", [1, 2])
def test_a_table_in_place_by_a_quarter_is_ahead_of_the_loss(settles_at):
    done = [kit.geometry_done(tables_along_a_run(settles_at, seed=s), np.arange(60)) for s in range(3)]
    structure, neighbours = (np.array([d[k][2] for d in done]) for k in (0, 1))  # evaluation 2 of 8
    assert np.allclose(structure, 1) and np.allclose(neighbours, 1)
    kit.hold(kit.ahead_of_the_loss(structure, LOSS_DONE_AT_A_QUARTER))


def test_a_table_still_wandering_at_a_quarter_fails_the_check():
    done = [kit.geometry_done(tables_along_a_run(settles_at=6, seed=s), np.arange(60)) for s in range(3)]
    structure, neighbours = (np.array([d[k][2] for d in done]) for k in (0, 1))
    # no more like the end than at the start
    assert np.all(np.abs(structure) < 0.2) and np.all(np.abs(neighbours) < 0.2)
    assert kit.failures(kit.ahead_of_the_loss(structure, LOSS_DONE_AT_A_QUARTER)) == [AHEAD]
    kit.hold(kit.ahead_of_the_loss(LOSS_DONE_AT_A_QUARTER, structure))


def test_ahead_of_the_loss_needs_one_value_per_seed_on_both_sides():
    with pytest.raises(ValueError, match=r"geometry_done \(2,\) and loss_done \(3,\)"):
        kit.ahead_of_the_loss(np.array([0.9, 0.9]), LOSS_DONE_AT_A_QUARTER)


def test_share_done_runs_from_zero_to_one_and_needs_a_change():
    assert np.allclose(kit.share_done([0.2, 0.5, 0.8]), [0, 0.5, 1])
    assert np.allclose(kit.share_done([3.0, 2.0, 1.0]), [0, 0.5, 1])
    with pytest.raises(ValueError, match="no finite change"):
        kit.share_done([0.4, 0.1, 0.4])


def test_centred_cosines_and_nearest_rows():
    table = np.array([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    cosines = kit.centred_cosines(table, np.array([0, 1, 2, 3]))
    centred = table[:4] - table[:4].mean(axis=0)
    lengths = np.linalg.norm(centred, axis=1)
    assert np.allclose(cosines, centred @ centred.T / np.outer(lengths, lengths))
    others = cosines - 2 * np.eye(4)
    assert kit.nearest_rows(cosines, 1)[:, 0].tolist() == np.argmax(others, axis=1).tolist()
    assert kit.nearest_rows(cosines, 1)[:2, 0].tolist() == [1, 0]  # the two rows along the first axis
    assert 0 not in kit.nearest_rows(cosines, 3)[0]  # a row is never its own neighbour
    with pytest.raises(ValueError, match="k=4 neighbours must be between 1 and 3"):
        kit.nearest_rows(cosines, 4)


def test_similarity_to_the_last_table_is_one_there_and_done_is_its_share_of_the_change():
    tables = tables_along_a_run(settles_at=4, seed=5)
    structure, neighbours = kit.geometry_similarity(tables, np.arange(60), neighbours=5)
    assert structure.shape == neighbours.shape == (len(tables),)
    assert np.allclose(structure[4:], 1) and np.allclose(neighbours[4:], 1)  # only the scale changes
    assert np.all(structure[:4] < 0.5) and np.all(neighbours[:4] < 0.5)  # random tables are unlike it
    done = kit.geometry_done(tables, np.arange(60), neighbours=5)
    np.testing.assert_allclose(done[0], (structure - structure[0]) / (1 - structure[0]))
    np.testing.assert_allclose(done[1], (neighbours - neighbours[0]) / (1 - neighbours[0]))


def test_holds_reads_a_verdict_and_refuses_an_empty_one():
    assert kit.holds({"a": True, "b": True}) and not kit.holds({"a": True, "b": False})
    with pytest.raises(ValueError, match="no conditions given"):
        kit.holds({})
