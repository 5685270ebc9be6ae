"""Verdicts remembered by what was checked, so that `minigrad lessons` is quick.

A verdict is stored under a hash of everything it depends on: the lesson, the bytes of the
marked file, the bytes of the lesson's check and of the course's checking code, and minigrad's
version (the bytes of its `__init__.py`). Change any of them and the entry no longer applies.
`minigrad check N`, `minigrad.check` and a lesson's `yours(N)` always check afresh (and store
what they found); only the map that `minigrad lessons` prints reads the store. A verdict that
depends on the machine's load (a time limit reached) is not stored.

The store is one JSON file, `$MINIGRAD_CACHE/verdicts.json`, else
`$XDG_CACHE_HOME/minigrad/verdicts.json`, else `~/.cache/minigrad/verdicts.json`. It is the
learner's file: it informs the map and decides nothing (a lesson marks the copy again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from minigrad.learn.course.catalog import Lesson

KEPT = 500  # entries: the oldest go first
TIMING = ("did not finish within", "did not get minigrad imported")  # verdicts the load decides
_WRITING = threading.Lock()  # `minigrad lessons` checks on several threads


def store_path() -> Path:
    """Where the verdicts are kept (see the module docstring)."""
    configured = os.environ.get("MINIGRAD_CACHE")
    if configured:
        return Path(configured) / "verdicts.json"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "minigrad" / "verdicts.json"


def key(lesson: Lesson, path: Path) -> str:
    """The hash of everything the verdict on `path` for `lesson` depends on."""
    digest = hashlib.sha256(f"{lesson.number}|".encode())
    course = Path(__file__).resolve().parent
    package = course.parents[1]  # minigrad/: its __init__.py holds the version
    for part in (Path(path), lesson.check_path, course / "checks" / "_common.py", course / "learner.py",
                 course / "wire.py", course / "grading.py", package / "__init__.py"):
        with contextlib.suppress(OSError):
            digest.update(part.read_bytes())
        digest.update(b"|")
    return digest.hexdigest()


def _read() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(lesson: Lesson, path: Path) -> dict[str, str] | None:
    """The stored verdict on `path` for `lesson` ({"status", "message"}), or None."""
    entry = _read().get(key(lesson, path))
    if not isinstance(entry, dict) or not isinstance(entry.get("status"), str):
        return None
    return {"status": entry["status"], "message": str(entry.get("message", ""))}


def remember(lesson: Lesson, path: Path, status: str, message: str) -> None:
    """Store a verdict (not one that a time limit decided); a store that cannot be written is
    left alone: the map then checks again next time."""
    if any(text in message for text in TIMING):
        return
    with _WRITING:
        _write(lesson, path, status, message)


def _write(lesson: Lesson, path: Path, status: str, message: str) -> None:
    entries = _read()
    entries.pop(key(lesson, path), None)
    entries[key(lesson, path)] = {"status": status, "message": message[:2000], "lesson": lesson.number}
    while len(entries) > KEPT:
        entries.pop(next(iter(entries)))
    target = store_path()
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp",
                                         encoding="utf-8") as file:
            json.dump(entries, file)
        os.replace(file.name, target)
