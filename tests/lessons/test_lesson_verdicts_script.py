"""scripts/lesson_verdicts.py (`make test`, `make lessons-verdicts`): its bookkeeping, with each
lesson replaced by a small real process that burns a given CPU time and exits with a given code,
so the parallel runs, the per-process CPU time and the CPU limit are the real ones."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lesson_verdicts.py"


@pytest.fixture
def verdicts(monkeypatch):
    spec = importlib.util.spec_from_file_location("lesson_verdicts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "lesson_verdicts", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def stand_ins(verdicts, monkeypatch, lessons):
    """Replace lesson N's command by a process that burns lessons[N] = (CPU seconds, exit code)
    and records when it started and ended in its log (it prints to the lesson's log)."""
    def command(number):
        seconds, code = lessons[number]
        burn = ("import sys, time; print('start', time.time(), flush=True); t = time.process_time()\n"
                f"while time.process_time() - t < {seconds}: pass\n"
                f"print('end', time.time(), flush=True); sys.exit({code})")
        return [sys.executable, "-c", burn]
    monkeypatch.setattr(verdicts, "command", command)


def spans(log_dir):
    """lesson number -> (start, end) wall times its stand-in printed."""
    found = {}
    for log in log_dir.glob("lesson-*.log"):
        lines = [line.split() for line in log.read_text().splitlines()]
        marks = dict(words for words in lines if words[:1] in (["start"], ["end"]))
        found[int(log.stem[-2:])] = (float(marks["start"]), float(marks.get("end", "inf")))
    return found


def test_finds_every_lesson_once(verdicts):
    numbers = verdicts.lesson_numbers()
    assert numbers == sorted(set(numbers)) and numbers[0] == 1 and len(numbers) >= 13


def test_the_longest_lessons_start_first(verdicts):
    order = verdicts.longest_first(verdicts.lesson_numbers())
    minutes = [verdicts.stated_minutes(n) for n in order]
    assert minutes == sorted(minutes, reverse=True) and minutes[0] > 1 and minutes[-1] == 0


def test_goes_on_past_a_failure_and_exits_1(verdicts, monkeypatch, tmp_path, capsys):
    stand_ins(verdicts, monkeypatch, {2: (0.2, 1), 3: (0.1, 0)})
    assert verdicts.main(["2", "3", "--logs", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "lessons failed or over budget: [2]" in out
    assert set(spans(tmp_path)) == {2, 3}, "the lesson after a failing one still runs"


def test_cpu_time_is_each_lessons_own(verdicts, monkeypatch, tmp_path):
    stand_ins(verdicts, monkeypatch, {1: (0.6, 0), 2: (0.1, 0)})
    results = {r.number: r for r in verdicts.run_all([1, 2], tmp_path, jobs=2, budget_seconds=None,
                                                     report=lambda text: None)}
    assert 0.6 <= results[1].cpu < 1.5 and 0.1 <= results[2].cpu < 0.5  # not the other's, not the sum


def test_two_at_a_time_run_together(verdicts, monkeypatch, tmp_path):
    stand_ins(verdicts, monkeypatch, {1: (0.5, 0), 2: (0.5, 0), 3: (0.1, 0)})
    assert verdicts.main(["1", "2", "3", "--jobs", "2", "--logs", str(tmp_path)]) == 0
    ran = spans(tmp_path)
    assert ran[1][0] < ran[2][1] and ran[2][0] < ran[1][1], "lessons 1 and 2 overlap"
    assert ran[3][0] >= min(ran[1][1], ran[2][1]), "the third waits for a free place"


def test_one_at_a_time_by_default(verdicts, monkeypatch, tmp_path):
    stand_ins(verdicts, monkeypatch, {1: (0.2, 0), 2: (0.2, 0)})
    assert verdicts.main(["1", "2", "--logs", str(tmp_path)]) == 0
    ran = spans(tmp_path)
    first, second = sorted(ran.values())
    assert first[1] <= second[0]


def test_a_lesson_over_budget_fails_and_is_stopped(verdicts, monkeypatch, tmp_path, capsys):
    stand_ins(verdicts, monkeypatch, {3: (30.0, 0), 4: (0.1, 0)})  # would burn 30 CPU s
    assert verdicts.main(["3", "4", "--budget", "0.01", "--jobs", "2", "--logs", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    over = next(line for line in out.splitlines() if line.split()[:1] == ["3"])
    assert over.split()[1] == "over" and float(over.split()[2]) < 5, "stopped near its limit, not at 30 s"
    assert "lessons failed or over budget: [3]" in out


def test_within_budget_passes(verdicts, monkeypatch, tmp_path):
    stand_ins(verdicts, monkeypatch, {1: (0.1, 0)})
    assert verdicts.main(["1", "--budget", "0.05", "--logs", str(tmp_path)]) == 0


def test_unknown_lesson_and_bad_jobs_are_errors_naming_them(verdicts, capsys):
    with pytest.raises(SystemExit):
        verdicts.main(["99"])
    assert "no lesson numbered [99]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        verdicts.main(["1", "--jobs", "0"])
    assert "--jobs must be at least 1, got 0" in capsys.readouterr().err
