"""minigrad.learn.course.pieces: whose pieces a lesson runs, and the one line that says so."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from minigrad.learn import course as runner
from minigrad.learn.course import pieces as your_pieces
from minigrad.learn.course.pieces import PIECES, REASON_LENGTH, YourPieces, map_lines, names, yours

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
    without = next(n for n in range(1, 100) if n not in PIECES)
    with pytest.raises(LookupError, match=f"lesson {without} has no piece of yours to run"):
        yours(without)
    pieces = YourPieces(6, PIECES[6], your_pieces.MINIGRAD, "why", "")
    with pytest.raises(KeyError, match="lesson 6 builds tie_weights, not 'Embedding'"):
        pieces.get("Embedding", None)


def test_the_map_says_the_piece_its_state_whose_runs_and_where_it_runs_later(monkeypatch):
    assert map_lines(max(PIECES) + 1, "pass", "", True) == []
    assert map_lines(4, "pass", "", True) == [
        "you build Embedding: the lookup's backward, a RowSparse with repeats summed",
        "  yours passes: the lesson runs yours",
        "  lessons 8, 9, 10, 11, 12, 13, 14 run on it too"]
    assert map_lines(7, "fail", "lazy_adamw_rows(...): the moments are wrong\nmore", True) == [
        "you build adam_step_after_silence: Adam's step for a row back from a silence",
        "you build lazy_adamw_rows: a lazy AdamW step on the rows present",
        "  yours fails: lazy_adamw_rows(...): the moments are wrong (the lesson runs minigrad's until "
        "yours passes)",
        "  lessons 8, 9, 10, 11, 12, 13, 14 run on it too"]
    no_copy = map_lines(1, "pass", "", False)  # the stub was marked: nothing of yours yet
    assert no_copy[-1] == "  not attempted yet (the lesson runs minigrad's until yours passes)"
    monkeypatch.setitem(PIECES, 4, (your_pieces.Piece("Embedding", your_pieces.OP, later=(9, 8)),))
    assert map_lines(4, "not attempted", "", True)[-1] == "  lessons 8, 9 run on it too"


def test_the_lessons_list_shows_the_pieces_you_have_built(folder, capsys):
    from minigrad import cli

    _copy(6, folder)
    _copy(4, folder, "def broken(:\n")
    assert cli.main(["lessons"]) == 0
    out = capsys.readouterr().out
    assert " 6. Tying the two maps  [pass: mine/06_tying.py]" in out
    assert "    you build tie_weights: the tie of the output map to the token table\n" in out
    assert "      yours passes: the lesson runs yours\n" in out
    assert "      yours fails: your code raised SyntaxError" in out
    assert out.count("    you build ") == sum(len(built) for built in PIECES.values())


def test_the_lessons_list_remembers_verdicts_until_the_file_or_its_check_changes(folder, capsys):
    from minigrad import cli
    from minigrad.learn.course import cache

    copy = _copy(3, folder)
    assert cli.main(["lessons"]) == 0
    lesson = runner.get_lesson(3)
    assert cache.recall(lesson, copy) == {"status": "pass", "message": "every check passed"}
    cache.remember(lesson, copy, "fail", "remembered, not checked again")
    assert cli.main(["lessons"]) == 0
    assert "yours fails: remembered, not checked again" in capsys.readouterr().out
    copy.write_text(copy.read_text() + "\n# changed\n")  # another file: checked again
    assert cache.recall(lesson, copy) is None
    assert cli.main(["lessons"]) == 0
    assert " 3. Looking up a row is multiplying by a one-hot  [pass: mine/03_lookup_is_matmul.py]" in \
        capsys.readouterr().out
    cache.remember(lesson, copy, "fail", "your code did not finish within 30 s, so the check was stopped")
    assert cache.recall(lesson, copy)["status"] == "pass", "a verdict the time limit decided is not kept"


def test_get_without_a_fallback_gives_minigrads_own_version(folder):
    from minigrad.learn.kit import minigrads_tie
    from minigrad.learn.kit.rare_rows import adam_step_after_silence

    assert yours(6, announce=False).get("tie_weights") is minigrads_tie
    pieces = yours(7, announce=False)
    assert pieces.get("adam_step_after_silence") is adam_step_after_silence
    assert pieces.get("lazy_adamw_rows", None) is None  # None is a fallback like any other
    with pytest.raises(LookupError, match="the piece lazy_adamw_rows names no version of minigrad's own"):
        pieces.get("lazy_adamw_rows")
