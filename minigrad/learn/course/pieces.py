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
    8: (Piece("train_step"), Piece("mean_loss")),
    9: (Piece("rank_of_self"),),
    10: (Piece("classifier_and_lookup"),),
    11: (Piece("mean_pairwise_cosine"), Piece("merge_step")),
    12: (Piece("first_component_scores"),),
    13: (Piece("three_cos_add"), Piece("NegativeSamplingLoss")),
}

# The lessons whose pieces a language model is built and trained with (from lesson 8 on, the
# models of the course train on them: see model_pieces).
MODEL_LESSONS = (4, 5, 6, 7, 8)


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


def model_pieces(lesson: int, answers: Any = None, announce: bool = True) -> Any:
    """The pieces lesson `lesson` (8 to 13) builds and trains its models with: for each of
    lessons 4 to 8, your copy's piece when it passes its check (as `yours(N)` decides), else
    minigrad's. Returns a `minigrad.learn.kit.ModelPieces`.

    answers: your notebook's definitions (globals()), marked instead of the file for the piece
    of `lesson` itself when it is one of them (lesson 8's train_step and mean_loss).
    announce: print whose pieces run: one line when they are all minigrad's, else one per lesson.
    """
    from minigrad.learn.kit import ModelPieces

    marked = {number: yours(number, answers if number == lesson else None, announce=False)
              for number in MODEL_LESSONS}
    if announce:
        print(_whose_models(marked))
    found = {name: value for mark in marked.values() if mark.are_yours for name, value in mark.found.items()}
    return ModelPieces(ops=_ops_in(found), yours=frozenset(_model_piece_names() & found.keys()),
                       **{name: found[name] for name in _FUNCTIONS if name in found})


# The pieces of lessons 4 to 8 that ModelPieces takes as functions (the ops are swapped in by name)
_FUNCTIONS = ("tie_weights", "lazy_adamw_rows", "train_step", "mean_loss")


def _ops_in(found: dict[str, Any]) -> dict[str, Any]:
    """{op name: the learner's Function} for the ops of lessons 4 to 8 among `found`."""
    ops = [piece.name for number in MODEL_LESSONS for piece in PIECES[number] if piece.op]
    return {name: found[name] for name in ops if name in found}


def _model_piece_names() -> set[str]:
    return {piece.name for number in MODEL_LESSONS for piece in PIECES[number]} - {"adam_step_after_silence"}


def _whose_models(marked: dict[int, YourPieces]) -> str:
    """One line when no copy of lessons 4-8 exists yet; else each lesson's verdict, one a line."""
    if not any(mark.source for mark in marked.values()):
        every = names(tuple(piece for number in MODEL_LESSONS for piece in PIECES[number]
                            if piece.name != "adam_step_after_silence"))
        return (f"the models run on minigrad's {every}: build yours in lessons 4 to 8 "
                "(`minigrad lessons` shows which of your copies pass)")
    return "\n".join(str(mark) for mark in marked.values())


def milestone(pieces: Any) -> str:
    """Lesson 8's milestone, in one line: which of lessons 4-7's pieces its TinyLM trains on."""
    built = ["Embedding", "CrossEntropy", "tie_weights", "lazy_adamw_rows"]
    mine = [name for name in built if pieces.is_yours(name)]
    if len(mine) == len(built):
        return ("milestone: this TinyLM trains on your Embedding, CrossEntropy, tie_weights and "
                "lazy_adamw_rows (lessons 4-7): the course now runs on your engine")
    if not mine:
        return "this TinyLM trains on minigrad's pieces; once yours from lessons 4-7 pass, it trains on them"
    theirs = [name for name in built if name not in mine]
    return (f"this TinyLM trains on your {names(tuple(Piece(n) for n in mine))} and minigrad's "
            f"{names(tuple(Piece(n) for n in theirs))}")
