"""scripts/lesson_verdicts.py (`make lessons-verdicts`): its bookkeeping, with the lesson runs faked."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lesson_verdicts.py"


@pytest.fixture
def verdicts():
    spec = importlib.util.spec_from_file_location("lesson_verdicts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_runs(results):
    """A stand-in for run(): lesson number -> (exit code, CPU seconds, wall seconds)."""
    ran = []

    def run(number, log_dir):
        ran.append(number)
        return results[number]
    return run, ran


def test_finds_every_lesson_once(verdicts):
    numbers = verdicts.lesson_numbers()
    assert numbers == sorted(set(numbers)) and numbers[0] == 1 and len(numbers) >= 13


def test_goes_on_past_a_failure_and_exits_1(verdicts, monkeypatch, tmp_path, capsys):
    run, ran = fake_runs({2: (1, 5.0, 6.0), 3: (0, 4.0, 5.0)})
    monkeypatch.setattr(verdicts, "run", run)
    assert verdicts.main(["2", "3", "--logs", str(tmp_path)]) == 1
    assert ran == [2, 3], "the lesson after a failing one still runs"
    out = capsys.readouterr().out
    assert "failed" in out and "[2]" in out and "9.0" in out  # the total CPU time


def test_a_lesson_over_budget_counts_as_failed(verdicts, monkeypatch, tmp_path, capsys):
    run, _ = fake_runs({3: (0, 170.0, 400.0)})  # CPU time counts, not wall time
    monkeypatch.setattr(verdicts, "run", run)
    assert verdicts.main(["3", "--budget", "3", "--logs", str(tmp_path)]) == 0
    assert verdicts.main(["3", "--budget", "2", "--logs", str(tmp_path)]) == 1
    assert "over" in capsys.readouterr().out


def test_all_pass_exits_0(verdicts, monkeypatch, tmp_path):
    run, _ = fake_runs({1: (0, 1.0, 1.0)})
    monkeypatch.setattr(verdicts, "run", run)
    assert verdicts.main(["1", "--logs", str(tmp_path)]) == 0


def test_unknown_lesson_is_an_error_naming_it(verdicts, capsys):
    with pytest.raises(SystemExit):
        verdicts.main(["99"])
    assert "no lesson numbered [99]" in capsys.readouterr().err
