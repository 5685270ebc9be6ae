"""Run the lessons at full size with every verdict check, time each one, and summarise.

    python scripts/lesson_verdicts.py                     every lesson, one at a time
    python scripts/lesson_verdicts.py 9 12 13             some of them
    python scripts/lesson_verdicts.py --budget 3 --jobs 2 what `make test` runs: two at a time, and a
                                                          lesson over 3 CPU minutes fails

`make test` and `make lessons-verdicts` run the last form. Unlike `make lessons`, it goes on past
a failing lesson, so one run reports every verdict that no longer holds; it exits 1 if any lesson
failed or went over the budget. The small mode (MINIGRAD_SMALL=1, what the lesson tests run)
skips the verdicts that need full-size training; this is the run that checks them.

Each lesson runs in its own process with one BLAS thread (on two cores the fastest for these
sizes, and the setting the lessons' budgets are measured in). CPU time is the lesson process's
own user plus system time, read when it ends, so it barely depends on how busy the machine is;
wall time does. With a budget, a lesson is also stopped by the operating system once its CPU
time passes the budget by 5% (RLIMIT_CPU), so an overlong lesson cannot hold CI up. The longest
lessons (by the minutes their setup() states) start first, so that two queues end together.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                     "MINIGRAD_BLAS_THREADS")}
SMALL_MODE = ("MINIGRAD_SMALL", "MINIGRAD_FAST")  # unset: the full size (FAST: the old name)
STATED_MINUTES = re.compile(r"setup\(\d+, minutes=\(([\d.]+),")
GRACE = 1.05  # RLIMIT_CPU: the budget and 5%, after which the lesson is stopped


@dataclass
class Result:
    number: int
    code: int  # the exit status; negative: stopped by that signal
    cpu: float  # seconds, user + system
    wall: float  # seconds

    def verdict(self, budget_seconds: float | None) -> str:
        """ok, failed (a check failed or an error), or over (the budget; a lesson the operating
        system stopped at its CPU limit is over it too)."""
        if budget_seconds is not None and self.cpu > budget_seconds:
            return "over"
        return "failed" if self.code else "ok"


def lesson_numbers() -> list[int]:
    """The numbers of the lessons in lessons/ (files named NN_title.py)."""
    return sorted({int(path.name[:2]) for path in LESSONS.glob("[0-9][0-9]_*.py")})


def stated_minutes(number: int) -> float:
    """The full-size minutes lesson N's setup() states (0 when it states none: a short lesson)."""
    path = next(LESSONS.glob(f"{number:02d}_*.py"))
    found = STATED_MINUTES.search(path.read_text(encoding="utf-8"))
    return float(found.group(1)) if found else 0.0


def longest_first(numbers: list[int]) -> list[int]:
    return sorted(numbers, key=lambda n: (-stated_minutes(n), n))


def command(number: int) -> list[str]:
    """How one lesson runs: `minigrad lesson N --no-pause`, with this Python."""
    return [sys.executable, "-m", "minigrad", "lesson", str(number), "--no-pause"]


def start(number: int, log_dir: Path, budget_seconds: float | None) -> tuple[subprocess.Popen, float]:
    """Start lesson N at full size, its output into the log; returns the process and its
    wall-clock start."""
    env = {key: value for key, value in os.environ.items() if key not in SMALL_MODE} | ONE_THREAD
    limit = None if budget_seconds is None else int(budget_seconds * GRACE) + 1

    def cap_cpu() -> None:  # in the child, before the lesson starts
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))

    log = (log_dir / f"lesson-{number:02d}.log").open("w")
    with log:
        process = subprocess.Popen(command(number), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, preexec_fn=cap_cpu)
    return process, time.perf_counter()


def finished(process: subprocess.Popen) -> tuple[int, float] | None:
    """(exit status, CPU seconds) of a lesson process that has ended, read from its own resource
    usage (os.wait4), or None while it runs."""
    pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    if pid == 0:
        return None
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code  # reaped here: Popen must not wait for it again
    return code, usage.ru_utime + usage.ru_stime


def run_all(numbers: list[int], log_dir: Path, jobs: int, budget_seconds: float | None,
            report=print) -> list[Result]:
    """Run the lessons, at most `jobs` at a time, longest first; report each as it ends."""
    waiting, running, results = longest_first(numbers), {}, []
    while waiting or running:
        while waiting and len(running) < jobs:
            number = waiting.pop(0)
            running[number] = start(number, log_dir, budget_seconds)
        for number, (process, began) in list(running.items()):
            done = finished(process)
            if done is not None:
                del running[number]
                results.append(Result(number, done[0], done[1], time.perf_counter() - began))
                report(line(results[-1], budget_seconds, log_dir))
        time.sleep(0.2)
    return sorted(results, key=lambda r: r.number)


def line(result: Result, budget_seconds: float | None, log_dir: Path) -> str:
    return (f"{result.number:>6} {result.verdict(budget_seconds):>8} {result.cpu:>8.1f} {result.wall:>8.1f}  "
            f"{log_dir / f'lesson-{result.number:02d}.log'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", type=int, help="lesson numbers (default: every lesson)")
    parser.add_argument("--budget", type=float, default=None,
                        help="CPU minutes a lesson may take; a lesson over it counts as failed")
    parser.add_argument("--jobs", type=int, default=1, help="lessons run at once (default: %(default)s)")
    parser.add_argument("--logs", type=Path, default=Path("minigrad-out/lesson-verdicts"),
                        help="folder for each lesson's output (default: %(default)s)")
    args = parser.parse_args(argv)
    known = lesson_numbers()
    unknown = sorted(set(args.lessons) - set(known))
    if unknown:
        parser.error(f"no lesson numbered {unknown}; the lessons are {known}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    budget = None if args.budget is None else 60 * args.budget
    args.logs.mkdir(parents=True, exist_ok=True)
    print(f"{'lesson':>6} {'result':>8} {'CPU s':>8} {'wall s':>8}  log", flush=True)
    began = time.perf_counter()
    results = run_all(args.lessons or known, args.logs, args.jobs, budget,
                      report=lambda text: print(text, flush=True))
    print(f"{'total':>6} {'':>8} {sum(r.cpu for r in results):>8.1f} {time.perf_counter() - began:>8.1f}"
          f"  ({args.jobs} at a time)")
    failed = [r.number for r in results if r.verdict(budget) != "ok"]
    if failed:
        print(f"lessons failed or over budget: {failed} (see their logs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
