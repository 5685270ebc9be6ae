"""Your pieces: a lesson runs its measurements on what you built, once it passes its check.

Each lesson with an exercise in which you build a piece (the walk, a central difference, the
lookup's backward, cross-entropy's backward, the tie, the optimizer's rare-row step...) calls
`pieces = yours(N)` near its top, which

1. finds your copy of the exercise, `minigrad-exercises/NN_slug.py` (see `minigrad exercise N`),
2. marks it with the lesson's own check, exactly as `minigrad check N` does (your code in a
   process of its own, the verdict decided in minigrad's), and
3. prints whose implementation the lesson will run:
   `using your Embedding (minigrad-exercises/04_sparse_row_gradients.py)`, or
   `using minigrad's Embedding: your copy does not pass yet (<the check's diagnosis>)`.

A copy that does not pass never feeds a measurement: the lesson falls back to minigrad's own
piece and says why. Every piece is used the same way, whatever its kind:

    with pieces.use():                        # every op you built (a Function) runs yours
        ...                                   # (minigrad.use), the drawing and ledger say so
    walk = pieces.get("backward_walk")        # a function (or class): yours, else minigrad's own

A lesson may also use a piece of an earlier lesson: `yours(4)` in lesson 8 gives the
Embedding you built in lesson 4, or minigrad's with the reason. To add a piece, add its
`Piece` to PIECES (its name in the stub, its kind, where minigrad's own lives, what it is, and
the later lessons that run on it); the lesson's check must pass the reference solution.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MINIGRAD, YOURS = "minigrad", "yours"
OP, FUNCTION = "op", "function"  # a Function swapped in with minigrad.use; anything get() hands out
REASON_LENGTH = 240  # the first line of a diagnosis is cut here in the one-line verdict
_ITS_OWN = object()  # get()'s default: the piece's own version in minigrad


@dataclass(frozen=True)
class Piece:
    """One thing a learner builds in an exercise and the lessons then run.

    name:      its name in the exercise file (for an op, also its name in minigrad.engine.ops)
    kind:      OP, a `Function` that `minigrad.use(name=...)` swaps in for minigrad's op; or
               FUNCTION, a function (or class) that `get(name)` hands out
    minigrads: where minigrad's own lives, "module:attribute": what runs until yours passes
               (for an OP, the op itself runs: no need to name it)
    what:      what it is, in a few words (`minigrad lessons` shows it)
    later:     the later lessons that run on it too
    """

    name: str
    kind: str = FUNCTION
    minigrads: str = ""
    what: str = ""
    later: tuple[int, ...] = ()

    def minigrads_own(self) -> Any:
        """minigrad's own version of this piece (LookupError when none is named)."""
        if not self.minigrads:
            raise LookupError(f"the piece {self.name} names no version of minigrad's own; pass one to get()")
        module, _, attribute = self.minigrads.partition(":")
        return getattr(importlib.import_module(module), attribute)


# The lessons whose models train on the learner's pieces of lessons 4 to 8 (see model_pieces)
LATER = (8, 9, 10, 11, 12, 13, 14)

# The pieces each lesson's exercise builds, in the order the lesson uses them.
PIECES: dict[int, tuple[Piece, ...]] = {
    1: (Piece("backward_walk", FUNCTION, "minigrad.engine.graph:backward",
              what="the backward walk: dependency counting, summing what arrives"),),
    2: (Piece("central_difference", FUNCTION, "minigrad.tools.gradcheck:central_difference",
              what="the central difference gradcheck's full check runs on"),),
    3: (Piece("table_grad_from_one_hot", FUNCTION, "minigrad.learn.kit.walks:table_grad_by_backward",
              what="the table's gradient of a one-hot product"),),
    4: (Piece("Embedding", OP, what="the lookup's backward, a RowSparse with repeats summed", later=LATER),),
    5: (Piece("CrossEntropy", OP, what="cross-entropy's forward and backward", later=LATER),),
    6: (Piece("tie_weights", FUNCTION, "minigrad.learn.kit.model_pieces:minigrads_tie",
              what="the tie of the output map to the token table", later=LATER),),
    7: (Piece("adam_step_after_silence", FUNCTION, "minigrad.learn.kit.rare_rows:adam_step_after_silence",
              what="Adam's step for a row back from a silence"),
        Piece("lazy_adamw_rows", FUNCTION, what="a lazy AdamW step on the rows present", later=LATER)),
    8: (Piece("train_step", FUNCTION, "minigrad.learn.train:train_step",
              what="one training step: zero_grad, forward, loss, backward, the optimizer's step",
              later=LATER[1:]),
        Piece("mean_loss", FUNCTION, "minigrad.learn.train:mean_loss",
              what="the evaluation: the mean loss over windows, without a graph", later=LATER[1:])),
    9: (Piece("rank_of_self", FUNCTION, "minigrad.learn.kit.geometry:rank_of_self",
              what="where each token ranks on its own round trip"),),
    10: (Piece("classifier_and_lookup", FUNCTION, "minigrad.learn.kit.training:classifier_and_lookup",
               what="a tied row's gradient split by path, from the ledger"),),
    11: (Piece("mean_pairwise_cosine", FUNCTION,
               what="the cone statistic: the mean cosine of pairs of rows"),),
    12: (Piece("first_component_scores", FUNCTION, what="each row's score on the first principal axis"),),
    13: (Piece("three_cos_add", FUNCTION, "minigrad.learn.corpus:three_cos_add",
               what="3CosAdd over the analogy questions"),
         Piece("NegativeSamplingLoss", FUNCTION, what="skip-gram's negative-sampling loss, its backward")),
    14: (Piece("best_pair", FUNCTION, what="the pair byte-pair training merges next"),),
    15: (Piece("longest_silences", FUNCTION, "minigrad.learn.kit.rare_rows:longest_silences",
               what="each row's longest run of steps without a read"),),
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

    def get(self, name: str, minigrad_version: Any = _ITS_OWN) -> Any:
        """Your `name` when your copy passes its check, else `minigrad_version` (by default the
        piece's own version in minigrad, `Piece.minigrads`; None is a value like any other)."""
        piece = {piece.name: piece for piece in self.pieces}.get(name)
        if piece is None:
            raise KeyError(f"lesson {self.lesson} builds {names(self.pieces)}, not {name!r}")
        if self.are_yours:
            return self.found[name]
        return piece.minigrads_own() if minigrad_version is _ITS_OWN else minigrad_version

    def overrides(self) -> dict[str, Any]:
        """{op name: your Function} for the ops to swap in (empty when minigrad's run)."""
        if not self.are_yours:
            return {}
        return {piece.name: self.found[piece.name] for piece in self.pieces if piece.kind == OP}

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
        looked = f"; looked for the folder at {_places(catalog.SEARCHED)}" if catalog.SEARCHED else ""
        result = YourPieces(number, pieces, MINIGRAD,
                            f"you have not built yours yet (`minigrad exercise {number}` copies the "
                            f"stub to {copy}; `minigrad check {number}` marks it{looked})", "")
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
        first = _first_line(verdict.message) or verdict.status
        status = "not attempted: " if verdict.status == grading.NOT_ATTEMPTED else ""
        reason = (f"your copy does not pass yet ({status}{first}; `minigrad check {number}` "
                  "says more)")
        return YourPieces(number, pieces, MINIGRAD, reason, source)
    # Load a fresh copy of what passed: the check ran on another module object.
    module = grading.load_module(lesson.working_copy) if answers is None else _namespace(answers)
    found = {piece.name: getattr(module, piece.name) for piece in pieces}
    return YourPieces(number, pieces, YOURS, "", source, found)


def _places(places: list[Any]) -> str:
    """'a, b and c', or the first three and how many more (a search up to the root is long)."""
    shown = [str(place) for place in places]
    if len(shown) > 4:
        return ", ".join(shown[:3]) + f" and {len(shown) - 3} folders above"
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def _namespace(answers: Any) -> Any:
    return SimpleNamespace(**answers) if isinstance(answers, dict) else answers


def map_lines(number: int, status: str, reason: str, marked_a_copy: bool) -> list[str]:
    """What `minigrad lessons` shows under lesson `number` about its pieces, given the verdict
    on the learner's copy (`status`: pass, fail or not attempted, with the first line of the
    diagnosis as `reason`; `marked_a_copy` False when there is no copy and the stub was marked):
    the pieces to build, their state, whose the lesson runs, and the later lessons that run on
    them. No lines for a lesson without pieces."""
    pieces = PIECES.get(number, ())
    if not pieces:
        return []
    lines = [f"you build {piece.name}: {piece.what}" if piece.what else f"you build {piece.name}"
             for piece in pieces]
    if status == "pass" and marked_a_copy:
        state = "yours passes: the lesson runs yours"
    elif status == "fail" and marked_a_copy:
        state = f"yours fails: {_first_line(reason)} (the lesson runs minigrad's until yours passes)"
    else:
        state = "not attempted yet (the lesson runs minigrad's until yours passes)"
    lines.append(f"  {state}")
    later = sorted({n for piece in pieces for n in piece.later})
    if later:
        lines.append(f"  lessons {', '.join(map(str, later))} run on it too")
    return lines


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= REASON_LENGTH else first[: REASON_LENGTH - 3] + "..."


def model_pieces(lesson: int, answers: Any = None, announce: bool = True) -> Any:
    """The pieces lesson `lesson` (8 to 14) builds and trains its models with: for each of
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
    ops = [piece.name for number in MODEL_LESSONS for piece in PIECES[number] if piece.kind == OP]
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
