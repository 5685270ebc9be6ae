"""From lesson 8 on the models are built and trained on the learner's pieces of lessons 4 to 8
(the milestone): with every reference solution copied in as the learner's copies, lessons 8 to 13
say `using your ...` for each, lesson 8 says its TinyLM trains on them, and its figures are the
figures of the run on minigrad's own pieces; a wrong piece is never used, and the lesson says why.

Each lesson runs in its small mode, in a process of its own (these tests are slow)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minigrad.learn import course as runner
from minigrad.learn.course.pieces import MODEL_LESSONS, PIECES, names
from minigrad.learn.kit import MINIGRADS, ModelPieces

REPO = Path(__file__).resolve().parents[2]
TIE_COPIED = '''
    import minigrad as mg

    def tie_weights(model):
        with mg.no_grad():
            model.head.weight.data[...] = model.emb.weight.data  # a copy, not a tie
        return model
    '''


def run_lesson(number: int, folder: Path, copies: dict[int, str]) -> str:
    """Lesson `number` in its small mode with `copies` ({lesson: source}) as the learner's copies;
    its standard output."""
    mine = folder / "mine"
    mine.mkdir(parents=True)
    for lesson, source in copies.items():
        (mine / runner.get_lesson(lesson, REPO / "lessons").path.name).write_text(source)
    environment = {k: v for k, v in os.environ.items() if k not in ("MINIGRAD_OUT", "MPLBACKEND")}
    environment.update(MINIGRAD_SMALL="1", PYTHONPATH=str(REPO), MINIGRAD_EXERCISES=str(mine),
                       OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, "-m", "minigrad.cli", "lesson", str(number), "--no-pause", "--out",
               str(folder / "out")]
    done = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"lesson {number} finished in" in done.stdout
    return done.stdout


def solutions(*numbers: int) -> dict[int, str]:
    return {n: runner.get_lesson(n, REPO / "lessons").solution_path.read_text() for n in numbers}


@pytest.fixture(scope="module")
def every_piece(tmp_path_factory):
    """{lesson: its output with the reference solutions of lessons 4 to 8 and its own copied in}."""
    cache: dict[int, str] = {}

    def output(number: int) -> str:
        if number not in cache:
            folder = tmp_path_factory.mktemp(f"lesson-{number}-every-piece")
            cache[number] = run_lesson(number, folder, solutions(*MODEL_LESSONS, number))
        return cache[number]
    return output


@pytest.mark.parametrize("number", range(8, 14))
def test_the_lesson_runs_on_every_piece_of_yours(number, every_piece):
    out = every_piece(number)
    for lesson in sorted({*MODEL_LESSONS, number}):
        path = runner.get_lesson(lesson, REPO / "lessons").path.name
        assert f"  > using your {names(PIECES[lesson])} (mine/{path})\n" in out, (lesson, out[:5000])
    assert "using minigrad's" not in out


def test_lesson_8s_tinylm_trains_on_the_pieces_of_lessons_4_to_7(every_piece):
    assert ("  > milestone: this TinyLM trains on your Embedding, CrossEntropy, tie_weights and "
            "lazy_adamw_rows (lessons 4-7): the course now runs on your engine\n") in every_piece(8)


# Lines whose numbers are times or paths (they differ from run to run whoever's pieces run), and
# the lines that say whose pieces run.
NOT_FIGURES = re.compile(r"tok(ens)?/s|figure:|wrote |load average|trains faster|using |milestone|"
                         r"models run on|trains on|both sides|your train_step against")


def figures(out: str) -> list[str]:
    """Every number the lesson printed ("  > " lines), the seconds column of its training table
    left out."""
    found = []
    for line in out.splitlines():
        if not line.startswith("  > ") or NOT_FIGURES.search(line):
            continue
        numbers = re.findall(r"[-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?%?", line)
        if re.match(r"  > (tied|untied)\s+[\d,]+\s", line):
            numbers = numbers[:-1]  # seconds spent training
        found += numbers
    return found


def close_as_printed(a: str, b: str) -> bool:
    """Equal to within one unit of the last digit printed."""
    def value(text: str) -> tuple[float, float]:
        plain = text.replace(",", "").rstrip("%")
        mantissa = plain.split("e")[0]
        unit = 10.0 ** -len(mantissa.split(".")[1]) if "." in mantissa else 1.0
        if "e" in plain:
            unit *= 10.0 ** int(plain.split("e")[1])
        return float(plain), unit
    (x, unit_x), (y, unit_y) = value(a), value(b)
    return abs(x - y) <= 1.01 * max(unit_x, unit_y)


def test_lesson_8s_figures_on_your_pieces_are_minigrads(every_piece, tmp_path):
    """Lesson 8 on every reference piece of lessons 4 to 8 prints minigrad's run's figures, to the
    last digit (times aside): the learner's pieces compute what minigrad's do, up to float rounding."""
    yours = figures(every_piece(8))
    minigrads = figures(run_lesson(8, tmp_path, {}))
    assert len(yours) == len(minigrads) > 100
    different = [(a, b) for a, b in zip(yours, minigrads) if not close_as_printed(a, b)]
    assert different == [], different[:10]


def test_the_comparison_of_figures_can_fail():
    assert figures("  > held-out 4.145 (tied 24,288)\n  > tied      24,288   4.145   0.8\n") == \
        ["4.145", "24,288", "24,288", "4.145"]
    assert close_as_printed("4.145", "4.146") and not close_as_printed("4.145", "4.147")
    assert not close_as_printed("27%", "29%") and close_as_printed("1.2e-05", "1.3e-05")


def test_a_wrong_piece_of_lesson_6_falls_back_and_lesson_8_says_whose_pieces_its_tinylm_runs(tmp_path):
    copies = {**solutions(4, 5, 7), 6: textwrap.dedent(TIE_COPIED)}
    out = run_lesson(8, tmp_path, copies)
    assert ("  > using minigrad's tie_weights: your copy does not pass yet (TinyLM: you copied the table's "
            "numbers into the output map") in out
    assert ("  > this TinyLM trains on your Embedding, CrossEntropy and lazy_adamw_rows and minigrad's "
            "tie_weights\n") in out
    assert "using minigrad's train_step and mean_loss: you have not built yours yet" in out


def test_model_pieces_are_minigrads_without_copies_and_say_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path))
    pieces = runner.model_pieces(9)
    assert pieces == MINIGRADS and isinstance(pieces, ModelPieces)
    assert capsys.readouterr().out.startswith("the models run on minigrad's Embedding, CrossEntropy, ")
    assert runner.milestone(pieces).startswith("this TinyLM trains on minigrad's pieces")


def test_model_pieces_holds_what_passed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path))
    for number, source in solutions(6, 8).items():
        (tmp_path / runner.get_lesson(number).path.name).write_text(source)
    pieces = runner.model_pieces(9)
    assert pieces.yours == {"tie_weights", "train_step", "mean_loss"}
    assert pieces.is_yours("tie_weights") and not pieces.is_yours("Embedding")
    assert pieces.ops == {} and pieces.lazy_adamw_rows is None
    assert pieces.train_step.__module__.startswith("minigrad_answers_08")
    with pytest.raises(KeyError, match=r"'rank_of_self' is not one of the pieces"):
        pieces.is_yours("rank_of_self")
    out = capsys.readouterr().out
    assert "using your tie_weights (" in out
    assert "using minigrad's Embedding: you have not built yours yet" in out


def test_build_refuses_a_model_already_tied():
    from minigrad.models import TinyLM

    with pytest.raises(ValueError, match=r"ModelPieces.build: build the TinyLM with tied=False"):
        MINIGRADS.build(TinyLM(5, 2, 3, tied=True), tied=True)
    untied = MINIGRADS.build(TinyLM(5, 2, 3, tied=False), tied=True)
    assert untied.head.weight is untied.emb.weight
    assert np.array_equal(untied.up.weight.data, TinyLM(5, 2, 3, tied=True).up.weight.data)
