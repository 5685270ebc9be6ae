"""minigrad.learn.course.pieces: whose pieces a lesson runs, and the one line that says so."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from minigrad.learn import course as runner
from minigrad.learn.course import pieces as your_pieces
from minigrad.learn.course.pieces import PIECES, REASON_LENGTH, YourPieces, names, status_line, yours

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The learner's working folder, empty, with the repository's lessons."""
    monkeypatch.setenv("MINIGRAD_LESSONS", str(REPO / "lessons"))
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path / "mine"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "mine"


def _copy(lesson_number: int, folder: Path, text: str | None = None) -> Path:
    lesson = runner.get_lesson(lesson_number)
    folder.mkdir(exist_ok=True)
    target = folder / lesson.path.name
    if text is None:
        shutil.copy(lesson.solution_path, target)
    else:
        target.write_text(text)
    return target


def test_names_reads_like_a_sentence():
    assert names(PIECES[4]) == "Embedding"
    assert names(PIECES[7]) == "adam_step_after_silence and lazy_adamw_rows"


def test_without_a_copy_minigrads_runs_and_the_line_says_how_to_start(folder, capsys):
    pieces = yours(6)
    assert not pieces.are_yours and pieces.overrides() == {}
    assert capsys.readouterr().out == (
        "using minigrad's tie_weights: you have not built yours yet (`minigrad exercise 6` copies the "
        "stub to mine/06_tying.py; `minigrad check 6` marks it)\n")
    sentinel = object()
    assert pieces.get("tie_weights", sentinel) is sentinel


def test_a_passing_copy_is_used_and_named(folder, capsys):
    _copy(7, folder)
    pieces = yours(7)
    assert pieces.are_yours and capsys.readouterr().out == (
        "using your adam_step_after_silence and lazy_adamw_rows (mine/07_rare_rows_and_the_optimizer.py)\n")
    function = pieces.get("adam_step_after_silence", None)
    assert callable(function) and function.__module__.startswith("minigrad_answers_")


def test_a_stub_copy_is_not_attempted(folder):
    lesson = runner.get_lesson(6)
    _copy(6, folder, lesson.exercise_path.read_text())
    pieces = yours(6, announce=False)
    assert str(pieces) == ("using minigrad's tie_weights: your copy does not pass yet (not attempted: "
                           "lesson 6: write tie_weights(model); `minigrad check 6` says more)")


def test_a_failing_copy_gives_the_first_line_of_its_diagnosis_cut_to_length(folder):
    _copy(6, folder, "def tie_weights(model):\n    raise ValueError('x' * 1000)\n")
    pieces = yours(6, announce=False)
    assert not pieces.are_yours
    reason = pieces.reason
    assert reason.startswith("your copy does not pass yet (tie_weights() raised ValueError: xxx")
    assert "..." in reason and len(reason) < REASON_LENGTH + 80


def test_a_crashing_copy_falls_back_too(folder):
    _copy(6, folder, "def tie_weights(model) return model\n")
    assert "your code raised SyntaxError" in yours(6, announce=False).reason


def test_notebook_definitions_can_stand_in_for_the_file(folder):
    solution = runner.load_module(runner.get_lesson(6).solution_path)
    pieces = yours(6, answers={"tie_weights": solution.tie_weights}, announce=False)
    assert pieces.are_yours and pieces.source == "your notebook's definitions"
    assert pieces.get("tie_weights", None) is solution.tie_weights


def test_an_op_piece_is_put_in_place_with_minigrad_use(folder):
    import numpy as np

    import minigrad as mg
    from minigrad import whose

    _copy(4, folder)
    pieces = yours(4, announce=False)
    assert set(pieces.overrides()) == {"Embedding"}
    table = mg.tensor(np.ones((3, 2)), requires_grad=True)
    with pieces.use():
        assert whose("Embedding") == "yours"
        out = mg.nn.functional.embedding(np.array([2, 2]), table)
        assert out.grad_fn.name == "EmbeddingBackward (yours)"
        out.sum().backward()
    assert whose("Embedding") != "yours"
    assert table.grad.indices.tolist() == [2] and table.grad.values.tolist() == [[2.0, 2.0]]


def test_a_function_piece_needs_no_override(folder):
    _copy(7, folder)
    pieces = yours(7, announce=False)
    assert pieces.overrides() == {}
    assert isinstance(pieces.use(), contextlib.nullcontext)


def test_errors_name_the_lesson_and_the_piece(folder):
    with pytest.raises(LookupError, match="lesson 2 has no piece of yours to run"):
        yours(2)
    pieces = YourPieces(6, PIECES[6], your_pieces.MINIGRAD, "why", "")
    with pytest.raises(KeyError, match="lesson 6 builds tie_weights, not 'Embedding'"):
        pieces.get("Embedding", None)


def test_status_line_for_the_lessons_list():
    assert status_line(2, True) == ""
    assert status_line(4, True) == "you build Embedding: the lesson runs yours"
    assert status_line(7, False) == ("you build adam_step_after_silence and lazy_adamw_rows: the lesson runs "
                                     "minigrad's until yours passes")


def test_the_lessons_list_shows_the_pieces_you_have_built(folder, capsys):
    from minigrad import cli

    _copy(6, folder)
    assert cli.main(["lessons"]) == 0
    out = capsys.readouterr().out
    assert " 6. Tying the two maps  [pass: mine/06_tying.py]" in out
    assert "    you build tie_weights: the lesson runs yours\n" in out
    assert "    you build Embedding: the lesson runs minigrad's until yours passes\n" in out
    assert out.count("    you build ") == len(PIECES)
