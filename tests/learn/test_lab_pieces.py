"""The lab on the learner's pieces (minigrad.learn.lab.pieces): a copy that passes its check runs,
says so, and gives minigrad's numbers within rounding; one that does not pass is never used, and
the lab says why."""

from __future__ import annotations

import numpy as np
import pytest
from learner_copies import REPO, TIE_FOR_LANGUAGE_MODELS_ONLY, WRONG_EMBEDDING, learners_folder

from minigrad.learn.course.grading import load_module
from minigrad.learn.lab import audit, steps
from minigrad.learn.lab.pieces import LAB_PIECES, PieceBook

NAMES = [p.name for p in LAB_PIECES]
SOLUTION_RULE = load_module(REPO / "lessons/solutions/07_rare_rows_and_the_optimizer.py").lazy_adamw_rows


@pytest.fixture
def exercises(tmp_path, monkeypatch):
    """The learner's working folder, empty (see learner_copies.learners_folder)."""
    monkeypatch.chdir(tmp_path)
    return learners_folder(tmp_path / "mine", monkeypatch)


def _all_passing(put) -> PieceBook:
    for number in (4, 5, 6, 7):
        put(number)
    return PieceBook()


def test_without_copies_every_piece_is_minigrads_and_says_how_to_start(exercises):
    status = PieceBook().status()
    assert [s["name"] for s in status] == NAMES and not any(s["passes"] for s in status)
    assert "`minigrad exercise 4`" in status[0]["why"]


def test_passing_copies_are_used_and_named(exercises):
    book = _all_passing(exercises)
    status = book.status()
    assert all(s["passes"] for s in status)
    assert status[0]["source"].endswith("04_sparse_row_gradients.py")
    chosen = book.chosen(True)
    assert all(chosen.get(name) is not None for name in NAMES)
    assert not book.chosen(False).yours(*NAMES)  # the switch off: minigrad's


@pytest.mark.parametrize("mode", ["untied", "tied"])
def test_the_audit_on_your_pieces_gives_minigrads_numbers_and_says_whose(exercises, mode):
    book = _all_passing(exercises)
    body = {"mode": mode, "vocab": "corpus", "vocab_size": 9, "width": 5}
    mine, theirs = reveal(body, book), reveal({**body, "pieces": False}, book)
    assert [p["whose"] for p in mine["pieces"]] == (["yours", "yours", "yours"] if mode == "tied"
                                                  else ["yours", "yours", "not used"])
    assert all(p["whose"] != "yours" for p in theirs["pieces"])
    assert np.isclose(mine["loss"], theirs["loss"], rtol=1e-12)
    for key in ("lookup", "classifier", "target_total"):
        assert np.isclose(mine["actual"]["norms"][key], theirs["actual"]["norms"][key], rtol=1e-9)
    assert all(check["ok"] for check in mine["checks"])  # your backward, checked by finite differences
    assert "EmbeddingBackward (yours)" in " ".join(mine["tables"][0]["paths"])
    assert "(yours)" in mine["svg"] and "(yours)" not in theirs["svg"]


def reveal(body: dict, book: PieceBook, **prediction) -> dict:
    """The audit's answer for `body`, after a prediction for it."""
    predictions = audit.PredictionBook()
    committed = predictions.commit({**body, "layout": "one shared row", "larger": "lookup", **prediction})
    return audit.audit({**body, "prediction": committed.id}, predictions, book)


def test_a_copy_that_fails_its_check_is_never_used_and_the_audit_says_why(exercises):
    exercises(4, WRONG_EMBEDDING)
    book = PieceBook()
    (embedding,) = [s for s in book.status() if s["name"] == "Embedding"]
    assert not embedding["passes"] and embedding["why"].startswith("your copy does not pass yet (")
    result = reveal({"mode": "untied"}, book)
    said = result["pieces"][0]
    assert said["whose"] == "minigrad's" and said["why"] == embedding["why"]
    assert f'{result["actual"]["norms"]["lookup"]:.4f}' == "0.1850"  # minigrad's, the tour's number


def test_a_piece_that_passes_but_fails_on_the_labs_model_is_set_aside_with_the_reason(exercises):
    exercises(6, TIE_FOR_LANGUAGE_MODELS_ONLY)
    book = PieceBook()
    assert [s["passes"] for s in book.status()] == [False, False, True, False]
    result = reveal({"mode": "tied"}, book)
    tie = [p for p in result["pieces"] if p["name"] == "tie_weights"][0]
    assert tie["whose"] == "minigrad's"
    assert "set aside" in tie["why"]
    assert "TypeError: tie_weights: a Bridge is not a language model" in tie["why"]
    assert f'{result["actual"]["number"]:.4f}' == "0.5799"


def test_steps_over_time_on_your_pieces_match_minigrads(exercises):
    book = _all_passing(exercises)
    body = {"steps": 40, "chunk": 40, "vocab_size": 60, "width": 8, "batch": 8, "optimizer": "adamw",
            "lazy": True, "decay": "catch_up"}
    runs = {}
    for on in (True, False):
        runbook = steps.RunBook(pieces=book)
        started = runbook.start({**body, "pieces": on})
        points = {"tied": [], "untied": []}
        while len(points["tied"]) < 40:
            chunk = runbook.advance({"run": started["run"]})
            for mode in points:
                points[mode] += chunk["points"][mode]
        runs[on] = started, points
    (mine, my_points), (theirs, their_points) = runs[True], runs[False]
    assert [p["whose"] for p in mine["pieces"]] == ["yours"] * 4
    assert [p["whose"] for p in theirs["pieces"]] == ["minigrad's"] * 4
    for mode in ("tied", "untied"):
        for a, b in zip(my_points[mode], their_points[mode]):
            for row in ("frequent", "rare"):
                assert np.isclose(a[row]["norm"], b[row]["norm"], rtol=1e-9, atol=1e-12)
                assert np.isclose(a[row]["moved"], b[row]["moved"], rtol=1e-7, atol=1e-12)


def test_your_row_step_is_used_only_where_it_applies(exercises):
    book = _all_passing(exercises)
    started = steps.RunBook(pieces=book).start({"steps": 5, "optimizer": "adamw", "lazy": False,
                                                "decay": "dense"})
    rows = [p for p in started["pieces"] if p["name"] == "lazy_adamw_rows"][0]
    assert rows["whose"] == "not used" and "lazy AdamW with touched-only or catch-up decay" in rows["why"]


def test_without_a_lessons_folder_every_piece_is_minigrads_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_LESSONS", str(tmp_path / "nowhere"))
    status = PieceBook().status()
    assert not any(s["passes"] for s in status) and "MINIGRAD_LESSONS" in status[0]["why"]


def test_a_row_rule_that_fails_midway_stops_the_run_with_its_error(monkeypatch):
    """A rule that passed its check and raises at the third step: a 409 that names it, and the run
    is gone (half a step was taken)."""
    from types import SimpleNamespace

    from minigrad.learn.lab.request_params import BadRequest

    def rule(rows, m, v, g, t, *rest):
        if t == 3:
            raise FloatingPointError("overflow in the second moment")
        return SOLUTION_RULE(rows, m, v, g, t, *rest)

    def mark(number):
        if number == 7:
            return SimpleNamespace(are_yours=True, found={"lazy_adamw_rows": rule}, source="mine.py",
                                   reason="")
        return SimpleNamespace(are_yours=False, found={}, source="", reason="not built")

    book = steps.RunBook(pieces=PieceBook(mark=mark))
    started = book.start({"steps": 10, "chunk": 10, "optimizer": "adamw", "lazy": True, "decay": "touched"})
    assert [p["whose"] for p in started["pieces"]][-1] == "yours"
    with pytest.raises(BadRequest, match="your lazy_adamw_rows raised FloatingPointError: overflow in the "
                                         "second moment; the run stopped at step 3") as refused:
        book.advance({"run": started["run"]})
    assert refused.value.status == 409
    with pytest.raises(BadRequest, match="no step run"):
        book.advance({"run": started["run"]})
