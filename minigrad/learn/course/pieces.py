"""Your pieces: a lesson runs its measurements on what you built, once it passes its check.

Lessons 4 to 7 each have an exercise in which you build one of the pieces the course is about
(the lookup's backward, cross-entropy's backward, the tie, the optimizer's rare-row step).
Near its top, such a lesson calls `pieces = yours(N)`, which

1. finds your copy of the exercise, `minigrad-exercises/NN_slug.py` (see `minigrad exercise N`),
2. marks it with the lesson's own check, exactly as `minigrad check N` does, and
3. prints whose implementation the lesson will run:
   `using your Embedding (minigrad-exercises/04_sparse_row_gradients.py)`, or
   `using minigrad's Embedding: your copy does not pass yet (<the check's diagnosis>)`.

A copy that does not pass never feeds a measurement: the lesson falls back to minigrad's own
piece and says why. A piece that replaces an op (a `Function`, such as `Embedding`) is put in
place with `minigrad.use(...)` by `pieces.use()`, so every lookup inside runs yours and the
drawing and the ledger name it; a piece that is a plain function is handed out by
`pieces.get(name, minigrad_version)`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MINIGRAD, YOURS = "minigrad", "yours"
REASON_LENGTH = 240  # the first line of a diagnosis is cut here in the one-line verdict


@dataclass(frozen=True)
class Piece:
    """One thing a learner builds in an exercise and a lesson then runs.

    name: the name it has in the exercise file (and, for an op, in minigrad.engine.ops)
    op:   True when it is a `Function` that `minigrad.use(name=...)` swaps in for minigrad's op
    """

    name: str
    op: bool = False


# The pieces each lesson's exercise builds, in the order the lesson uses them.
PIECES: dict[int, tuple[Piece, ...]] = {
    4: (Piece("Embedding", op=True),),
    5: (Piece("CrossEntropy", op=True),),
    6: (Piece("tie_weights"),),
    7: (Piece("adam_step_after_silence"), Piece("lazy_adamw_rows")),
    14: (Piece("best_pair"),),
    15: (Piece("longest_silences"),),
}


def names(pieces: tuple[Piece, ...]) -> str:
    """'Embedding', or 'a and b', or 'a, b and c'."""
    words = [piece.name for piece in pieces]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


@dataclass
class YourPieces:
    """Whose pieces a lesson runs, and why (what `yours(N)` returns)."""

    lesson: int
    pieces: tuple[Piece, ...]
    whose: str  # YOURS or MINIGRAD
    reason: str  # why minigrad's (empty when yours)
    source: str  # where yours came from: a path as the learner sees it, or "your notebook"
    found: dict[str, Any] = field(default_factory=dict)  # the learner's objects, when yours

    @property
    def are_yours(self) -> bool:
        return self.whose == YOURS

    def __str__(self) -> str:
        if self.are_yours:
            return f"using your {names(self.pieces)} ({self.source})"
        return f"using minigrad's {names(self.pieces)}: {self.reason}"

    def get(self, name: str, minigrad_version: Any) -> Any:
        """Your `name` when your copy passes its check, else `minigrad_version`."""
        if name not in {piece.name for piece in self.pieces}:
            raise KeyError(f"lesson {self.lesson} builds {names(self.pieces)}, not {name!r}")
        return self.found[name] if self.are_yours else minigrad_version

    def overrides(self) -> dict[str, Any]:
        """{op name: your Function} for the ops to swap in (empty when minigrad's run)."""
        if not self.are_yours:
            return {}
        return {piece.name: self.found[piece.name] for piece in self.pieces if piece.op}

    def use(self) -> contextlib.AbstractContextManager:
        """A context in which every op you built runs yours (minigrad.use); nothing when minigrad's."""
        overrides = self.overrides()
        if not overrides:
            return contextlib.nullcontext()
        from minigrad.engine import use

        return use(**overrides)


def yours(number: int, answers: Any = None, announce: bool = True) -> YourPieces:
    """Mark your copy of lesson `number`'s exercise and say whose pieces the lesson will run.

    answers: a module, namespace or dict (a notebook's `globals()`) to mark instead of the file.
    announce: print the verdict (a lesson always does; tests and `minigrad lessons` may not).
    """
    from minigrad.learn.course import catalog

    if number not in PIECES:
        raise LookupError(f"lesson {number} has no piece of yours to run (lessons with one: "
                          f"{', '.join(map(str, sorted(PIECES)))})")
    lesson = catalog.get_lesson(number)
    pieces = PIECES[number]
    if answers is None and not lesson.working_copy.is_file():
        copy = catalog.display_path(lesson.working_copy)
        result = YourPieces(number, pieces, MINIGRAD,
                            f"you have not built yours yet (`minigrad exercise {number}` copies the "
                            f"stub to {copy}; `minigrad check {number}` marks it)", "")
    else:
        result = _marked(lesson, pieces, answers)
    if announce:
        print(result)
    return result


def _marked(lesson: Any, pieces: tuple[Piece, ...], answers: Any) -> YourPieces:
    """Run the lesson's check on the learner's copy (or `answers`) and keep what it defines."""
    from minigrad.learn.course import catalog, grading

    if answers is None:
        path = lesson.working_copy
        source = catalog.display_path(path)
        verdict = grading.check_answers(lesson, path)
    else:
        source = "your notebook's definitions"
        verdict = grading.check_answers(lesson, answers=answers)
    number = lesson.number
    if not verdict.passed:
        first = verdict.message.strip().splitlines()[0] if verdict.message.strip() else verdict.status
        if len(first) > REASON_LENGTH:
            first = first[: REASON_LENGTH - 3] + "..."
        status = "not attempted: " if verdict.status == grading.NOT_ATTEMPTED else ""
        reason = (f"your copy does not pass yet ({status}{first}; `minigrad check {number}` "
                  "says more)")
        return YourPieces(number, pieces, MINIGRAD, reason, source)
    # Load a fresh copy of what passed: the check ran on another module object.
    module = grading.load_module(lesson.working_copy) if answers is None else _namespace(answers)
    found = {piece.name: getattr(module, piece.name) for piece in pieces}
    return YourPieces(number, pieces, YOURS, "", source, found)


def _namespace(answers: Any) -> Any:
    return SimpleNamespace(**answers) if isinstance(answers, dict) else answers


def status_line(number: int, copy_passes: bool) -> str:
    """What `minigrad lessons` shows about lesson `number`'s pieces, given whether the learner's
    copy passes its check: '' for a lesson without a piece, else e.g.
    'you build Embedding: the lesson runs yours'."""
    if number not in PIECES:
        return ""
    runs = "the lesson runs yours" if copy_passes else "the lesson runs minigrad's until yours passes"
    return f"you build {names(PIECES[number])}: {runs}"
