"""`minigrad` on the command line."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn

import minigrad
from minigrad.learn.course import cache, catalog, grading, notebook, pieces, runner
from minigrad.learn.course.catalog import WORKING_FOLDER, display_path
from minigrad.learn.extras import extra_problem

LESSON_COMMANDS = ("lessons", "lesson", "check", "exercise")


def main(argv: list[str] | None = None) -> int:
    """Run one `minigrad` command; its exit status. Output cut short by a closed pipe
    (`minigrad lessons | head`) ends quietly instead of in a BrokenPipeError traceback, and
    Ctrl-C in a command without its own way of stopping ends with one line."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at interpreter exit
    except BrokenPipeError:
        # Point stdout at devnull so Python's own flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("\nminigrad: stopped (Ctrl-C)", file=sys.stderr)
        return 130
    return status


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument answered in one line (and status 2), not usage + error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (`{self.prog} --help` lists the arguments)\n")


def port_number(text: str) -> int:
    """--port: a TCP port, 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port; expected 0 (any free port) to 65535")
    return port


def seconds(text: str) -> float:
    """--timeout: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def writable_folder(flag: str, folder: str | Path) -> str | None:
    """None when `folder` exists or can be made; else one line saying why not (for `flag`)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"{flag} {folder}: cannot make or use this folder ({err.strerror or err})"
    if not os.access(folder, os.W_OK):
        return f"{flag} {folder}: this folder is not writable"
    return None


def _run(argv: list[str] | None) -> int:
    parser = Parser(prog="minigrad", description=__doc__)
    parser.add_argument("--version", action="version", version=f"minigrad {minigrad.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    tour = sub.add_parser("tour", help="a guided run of the vocabulary bridge audit, untied and tied")
    tour.add_argument("--no-input", "--no-pause", action="store_true",
                      help="do not ask for predictions or pause between steps (neither happens "
                           "when stdin is not a terminal)")
    tour.add_argument("--out", default="minigrad-out", metavar="DIR",
                      help="where to write untied.svg, tied.svg and their .dot (default: ./minigrad-out)")
    _add_lesson_commands(sub)  # lessons | lesson N | check N | exercise N
    lab = sub.add_parser("lab", help="the lab in your browser: the audit, steps over time, answer checks")
    lab.add_argument("--port", type=port_number, default=8765,
                     help="port on 127.0.0.1 (0: any free port; default 8765)")
    lab.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")
    args = parser.parse_args(argv)
    if args.command in LESSON_COMMANDS:
        try:
            return args.handler(args)
        except (LookupError, FileNotFoundError) as exc:  # no such lesson, no such file: a user's error
            print(f"minigrad {args.command}: {exc}", file=sys.stderr)
            return 2
    if args.command == "tour":
        from minigrad.learn.tour import run

        problem = writable_folder("--out", args.out)
        if problem:
            print(f"minigrad tour: {problem}", file=sys.stderr)
            return 2
        return run(out_dir=args.out, interactive=not args.no_input and sys.stdin.isatty())
    if args.command == "lab":
        from minigrad.learn.lab.server import serve

        return serve(port=args.port, open_browser=not args.no_browser)
    return 2


# ---- lessons | lesson N | check N | exercise N ---------------------------------------------------

def _out_dir(args: argparse.Namespace) -> Path:
    return Path(args.out or os.environ.get("MINIGRAD_OUT") or "minigrad-out")


def command_lessons(args: argparse.Namespace) -> int:
    found = catalog.find_lessons()
    verdicts = _verdicts([lesson for lesson in found if lesson.check_path.is_file()])
    for lesson in found:
        verdict = verdicts.get(lesson.number)
        marked_a_copy = lesson.answers_path == lesson.working_copy
        if verdict is None:
            status = "no exercise"
        elif marked_a_copy:
            status = f"{verdict['status']}: {display_path(lesson.working_copy)}"  # say which file was marked
        else:
            status = verdict["status"]
        print(f"{lesson.number:2d}. {lesson.title}  [{status}]")
        print(textwrap.fill(lesson.summary, width=96, initial_indent="    ", subsequent_indent="    "))
        if verdict is not None:  # the pieces you build, their state, and who runs them
            for line in pieces.map_lines(lesson.number, verdict["status"], verdict["message"], marked_a_copy):
                print(f"    {line}")
    print("\nRun one with `minigrad lesson N`; copy its exercise with `minigrad exercise N`, "
          "check it with `minigrad check N`.")
    return 0


def _verdicts(lessons: list[catalog.Lesson]) -> dict[int, dict[str, str]]:
    """Each lesson's verdict on the learner's copy (else the stub): remembered when that file and
    its check have not changed since it was last checked, else checked now (each in its own
    process, two at a time)."""
    verdicts = {lesson.number: cache.recall(lesson, lesson.answers_path) for lesson in lessons}
    missing = [lesson for lesson in lessons if verdicts[lesson.number] is None]
    with ThreadPoolExecutor(max_workers=2) as pool:
        for lesson, result in zip(missing, pool.map(grading.check_answers, missing)):
            verdicts[lesson.number] = {"status": result.status, "message": result.message}
    return {number: verdict for number, verdict in verdicts.items() if verdict is not None}  # all, now


def command_lesson(args: argparse.Namespace) -> int:
    lesson = catalog.get_lesson(args.number)
    out_dir = _out_dir(args)
    problem = writable_folder("--out" if args.out else "the output folder", out_dir)
    if problem:
        print(f"minigrad lesson: {problem}", file=sys.stderr)
        return 2
    if args.notebook:
        path = notebook.write_notebook(lesson, out_dir)
        print(f"wrote {display_path(path)}\n{_how_to_open(display_path(path))}")
        return 0
    return _run_lesson(args, lesson, out_dir)


def _run_lesson(args: argparse.Namespace, lesson: catalog.Lesson, out_dir: Path) -> int:
    """`minigrad lesson N` without --notebook: run it step by step and say how it went."""
    problem = extra_problem("lessons", f"lesson {lesson.number}")
    if problem is not None:
        print(f"minigrad lesson: {problem}", file=sys.stderr)
        return 1
    pause = not args.no_pause and sys.stdin.isatty()
    if hasattr(sys.stdout, "reconfigure"):  # lessons print √ and ²: never die on an ASCII terminal
        sys.stdout.reconfigure(errors="replace")
    if args.fast:
        print("minigrad lesson: --fast is deprecated and will be removed in the next release; use --small "
              "(the small lesson sizes; \"fast\" names minigrad's fast kernels)", file=sys.stderr)
    run = runner.run_lesson(lesson, out_dir, pause=pause, small=args.small or args.fast)
    if run.stopped_by_learner:
        print(f"lesson {lesson.number} stopped at your request after {run.seconds:.1f} s")
    elif run.ok:
        print(f"lesson {lesson.number} finished in {run.seconds:.1f} s")
    else:
        print(f"lesson {lesson.number} stopped after {run.seconds:.1f} s: {run.error}")
    if run.files:
        print("files written:")
        for path in run.files:
            print(f"  {display_path(path)}")
    return 0 if run.ok else 1


def _how_to_open(notebook_path: str) -> str:
    """How to open a notebook from here: JupyterLab when this Python has it (its kernel then
    imports this minigrad), else how to install it. No extra of minigrad installs it."""
    if importlib.util.find_spec("jupyterlab") is not None:
        return f"open it with: jupyter lab {notebook_path}"
    return (f"to open it, install JupyterLab beside minigrad ({sys.executable} -m pip install jupyterlab), "
            f"then run: jupyter lab {notebook_path}\n(or open it in an editor that runs notebooks, "
            "such as VS Code, with this Python as its kernel)")


def command_check(args: argparse.Namespace) -> int:
    result = grading.check_answers(catalog.get_lesson(args.number), args.file, timeout=args.timeout)
    if result.output:
        print("what your code printed while it was checked:")
        print("\n".join(runner.OUTPUT_MARK + line for line in result.output.splitlines()))
    if result.traceback and args.traceback:
        print(result.traceback, end="")
    print(result)  # the verdict, always
    if result.traceback and not args.traceback:
        print(f"  (`minigrad check {args.number} --traceback` shows the whole traceback)")
    return {grading.PASS: 0, grading.NOT_ATTEMPTED: 3}.get(result.status, 1)


def command_exercise(args: argparse.Namespace) -> int:
    lesson = catalog.get_lesson(args.number)
    confirm = _confirm_on_terminal if sys.stdin.isatty() else None
    try:
        path, what = grading.copy_exercise(lesson, force=args.force, confirm=confirm)
    except (FileExistsError, grading.ExerciseCopyError) as exc:  # nothing was written
        print(f"minigrad exercise: {exc}", file=sys.stderr)
        return 1
    print(f"{display_path(path)}: {what}. Fill in its functions, then run `minigrad check {lesson.number}`.")
    return 0


def _confirm_on_terminal(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in {"y", "yes"}


def _add_lesson_commands(sub: argparse._SubParsersAction) -> None:
    """Register `lessons`, `lesson N`, `check N` and `exercise N` on the `minigrad` command line."""
    listing = sub.add_parser("lessons", help="list the lessons and whether your exercises pass")
    listing.set_defaults(handler=command_lessons)

    lesson = sub.add_parser("lesson", help="show and run lesson N step by step")
    lesson.add_argument("number", type=int, help="the lesson number, e.g. 1")
    lesson.add_argument("--out", default=None,
                        help="output folder for figures (default: $MINIGRAD_OUT, else minigrad-out)")
    lesson.add_argument("--no-pause", action="store_true", help="do not wait for Enter between steps")
    lesson.add_argument("--small", action="store_true",
                        help="the small sizes, a few seconds per lesson (the same as MINIGRAD_SMALL=1)")
    lesson.add_argument("--fast", action="store_true",
                        help="deprecated spelling of --small, removed in the next release")
    lesson.add_argument("--notebook", action="store_true",
                        help="write the lesson as a Jupyter notebook (.ipynb) instead of running it")
    lesson.set_defaults(handler=command_lesson)

    check = sub.add_parser("check", help="check your answers to lesson N's exercise")
    check.add_argument("number", type=int, help="the lesson number, e.g. 1")
    check.add_argument("--file", default=None,
                       help=f"your answers (default: your copy in ./{WORKING_FOLDER}/ if there is one, "
                            "else the lesson's stub)")
    check.add_argument("--traceback", action="store_true",
                       help="when your code raised an error, show its whole traceback")
    check.add_argument("--timeout", type=seconds, default=grading.TIME_LIMIT, metavar="SECONDS",
                       help=f"stop your code after this long, a FAIL (default {grading.TIME_LIMIT:g})")
    check.set_defaults(handler=command_check)

    exercise = sub.add_parser("exercise", help=f"copy lesson N's exercise stub to ./{WORKING_FOLDER}/ "
                                               "(or $MINIGRAD_EXERCISES) to work on")
    exercise.add_argument("number", type=int, help="the lesson number, e.g. 4")
    exercise.add_argument("--force", action="store_true",
                          help="replace your copy with the stub even when it holds your changes")
    exercise.set_defaults(handler=command_exercise)


if __name__ == "__main__":
    sys.exit(main())
