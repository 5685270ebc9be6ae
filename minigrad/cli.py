"""`minigrad` on the command line."""

from __future__ import annotations

import argparse
import os
import sys

import minigrad
from minigrad.learn import lessons


def main(argv: list[str] | None = None) -> int:
    """Run one `minigrad` command; its exit status. Output cut short by a closed pipe
    (`minigrad lessons | head`) ends quietly instead of in a BrokenPipeError traceback."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at interpreter exit
    except BrokenPipeError:
        # Point stdout at devnull so Python's own flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="minigrad", description=__doc__)
    parser.add_argument("--version", action="version", version=f"minigrad {minigrad.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    tour = sub.add_parser("tour", help="a guided run of the vocabulary bridge audit, untied and tied")
    tour.add_argument("--no-input", "--no-pause", action="store_true",
                      help="do not ask for predictions or pause between steps (neither happens "
                           "when stdin is not a terminal)")
    tour.add_argument("--out", default="minigrad-out", metavar="DIR",
                      help="where to write untied.svg, tied.svg and their .dot (default: ./minigrad-out)")
    lessons.add_lesson_commands(sub)  # lessons | lesson N | check N | exercise N
    lab = sub.add_parser("lab", help="the lab in your browser: the audit, steps over time, answer checks")
    lab.add_argument("--port", type=int, default=8765,
                     help="port on 127.0.0.1 (0: any free port; default 8765)")
    lab.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")
    args = parser.parse_args(argv)
    if args.command in lessons.COMMANDS:
        return lessons.run_command(args)
    if args.command == "tour":
        from minigrad.learn.tour import run

        return run(out_dir=args.out, interactive=not args.no_input and sys.stdin.isatty())
    if args.command == "lab":
        from minigrad.learn.lab.server import serve

        return serve(port=args.port, open_browser=not args.no_browser)
    return 2


if __name__ == "__main__":
    sys.exit(main())
