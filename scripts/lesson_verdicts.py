"""Run the lessons at full size with every verdict check, time each one, and summarise.

    python scripts/lesson_verdicts.py                 every lesson
    python scripts/lesson_verdicts.py 9 12 13         some of them
    python scripts/lesson_verdicts.py --budget 3      also fail a lesson that takes over 3 CPU minutes

`make lessons-verdicts` runs the first form. Unlike `make lessons`, it goes on past a failing
lesson, so one run reports every verdict that no longer holds; it exits 1 if any lesson failed
(or went over the budget). The small mode (MINIGRAD_SMALL=1, what the test suite runs) skips the
verdicts that need full-size training; this is the run that checks them.

Each lesson runs in its own process with one BLAS thread (on two cores the fastest for these
sizes, and the setting the lessons' time budgets are measured in). CPU time is the child's user
plus system time, so it does not depend on how busy the machine is; wall time does.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def lesson_numbers() -> list[int]:
    """The numbers of the lessons in lessons/ (files named NN_title.py)."""
    return sorted({int(path.name[:2]) for path in LESSONS.glob("[0-9][0-9]_*.py")})


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(number: int, log_dir: Path) -> tuple[int, float, float]:
    """(exit code, CPU seconds, wall seconds) of `minigrad lesson N --no-pause` at full size."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MINIGRAD_SMALL", "MINIGRAD_FAST")} | ONE_THREAD  # full size (FAST: its old name)
    log = log_dir / f"lesson-{number:02d}.log"
    cpu, wall = children_cpu_seconds(), time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call([sys.executable, "-m", "minigrad", "lesson", str(number), "--no-pause"],
                               stdout=out, stderr=subprocess.STDOUT, env=env)
    return code, children_cpu_seconds() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", type=int, help="lesson numbers (default: every lesson)")
    parser.add_argument("--budget", type=float, default=None,
                        help="CPU minutes a lesson may take; a lesson over it counts as failed")
    parser.add_argument("--logs", type=Path, default=Path("minigrad-out/lesson-verdicts"),
                        help="folder for each lesson's output (default: %(default)s)")
    args = parser.parse_args(argv)
    known = lesson_numbers()
    unknown = sorted(set(args.lessons) - set(known))
    if unknown:
        parser.error(f"no lesson numbered {unknown}; the lessons are {known}")
    args.logs.mkdir(parents=True, exist_ok=True)
    failed, total_cpu, total_wall = [], 0.0, 0.0
    print(f"{'lesson':>6} {'result':>8} {'CPU s':>8} {'wall s':>8}  log")
    for number in args.lessons or known:
        code, cpu, wall = run(number, args.logs)
        over = args.budget is not None and cpu > 60 * args.budget
        result = "failed" if code else "over" if over else "ok"
        if code or over:
            failed.append(number)
        total_cpu, total_wall = total_cpu + cpu, total_wall + wall
        print(f"{number:>6} {result:>8} {cpu:>8.1f} {wall:>8.1f}  {args.logs / f'lesson-{number:02d}.log'}",
              flush=True)
    print(f"{'total':>6} {'':>8} {total_cpu:>8.1f} {total_wall:>8.1f}")
    if failed:
        print(f"lessons failed or over budget: {failed} (see their logs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
