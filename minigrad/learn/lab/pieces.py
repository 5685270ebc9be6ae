"""The learner's pieces in the lab: the audit and steps over time run on them, as lessons 4 to 7 do.

When the learner's copy of an exercise passes its check (`minigrad.learn.course.pieces.yours`, the
marking `minigrad check N` gives), the lab can compute with what it defines:

    Embedding        lesson 4   the lookup: its forward and its row-sparse backward
    CrossEntropy     lesson 5   the loss, and dL/dz = p - y
    tie_weights      lesson 6   the tie of the tied model
    lazy_adamw_rows  lesson 7   the token table's step (lazy AdamW, touched-only or catch-up decay)

A switch on the page (the `pieces` field of a request, on by default) says whether to. A copy that
does not pass is never used and its status says why (the check's first line). Ops are put in place
with `minigrad.use`, so the drawing and the ledger name them ("EmbeddingBackward (yours)"). A piece
that passes its check and still fails on the lab's input (it raises, or a tie that ties nothing) is
set aside for that computation: minigrad's runs, and the answer says why.

`PieceBook` marks each copy once and again only when the file changes (the check runs the file in
a child process, about a second).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from minigrad.engine import use
from minigrad.learn.course import catalog
from minigrad.learn.course.pieces import yours
from minigrad.learn.kit.rare_rows import RowAdamW
from minigrad.optim import AdamW


@dataclass(frozen=True)
class LabPiece:
    name: str
    lesson: int
    does: str  # what the lab computes with it


LAB_PIECES = (
    LabPiece("Embedding", 4, "the lookup: its forward and its row-sparse backward"),
    LabPiece("CrossEntropy", 5, "the loss and dL/dz = p - y"),
    LabPiece("tie_weights", 6, "the tie of the tied model"),
    LabPiece("lazy_adamw_rows", 7, "the token table's step (lazy AdamW with touched-only or catch-up decay)"),
)
ROW_DECAYS = ("touched", "catch_up")  # the decay modes lazy_adamw_rows implements


class PieceFailed(Exception):
    """A learner's piece passed its check but failed on the lab's input."""

    def __init__(self, piece: str, reason: str):
        super().__init__(f"your {piece} {reason}")
        self.piece = piece


@dataclass(frozen=True)
class Chosen:
    """The pieces one computation runs on: the learner's object for each name, or None for minigrad's;
    `why` says, per name, why minigrad's runs."""

    found: dict[str, Any] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.found.get(name)

    def yours(self, *names: str) -> bool:
        return any(self.found.get(n) is not None for n in names)

    @contextlib.contextmanager
    def ops(self) -> Iterator[None]:
        """Inside, the learner's Embedding and CrossEntropy run wherever minigrad's would."""
        overrides = {n: self.found[n] for n in ("Embedding", "CrossEntropy") if self.found.get(n) is not None}
        with use(**overrides) if overrides else contextlib.nullcontext():
            yield

    def without(self, failure: PieceFailed | Exception, name: str | None = None) -> Chosen:
        """The same choice with the piece that failed (every piece, when it is not known which) set
        aside, and the reason kept."""
        names = [name] if name else [n for n, obj in self.found.items() if obj is not None]
        found = {n: (None if n in names else obj) for n, obj in self.found.items()}
        why = dict(self.why)
        for n in names:
            why[n] = f"yours was set aside for this computation: {failure}"
        return Chosen(found, why)

    def said(self, names: tuple[str, ...], not_used: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Whose piece computed what, for the page: one entry per name."""
        not_used = not_used or {}
        out = []
        for piece in LAB_PIECES:
            if piece.name not in names:
                continue
            if piece.name in not_used:
                out.append({"name": piece.name, "whose": "not used", "does": piece.does,
                            "why": not_used[piece.name]})
            elif self.found.get(piece.name) is not None:
                out.append({"name": piece.name, "whose": "yours", "does": piece.does, "why": ""})
            else:
                out.append({"name": piece.name, "whose": "minigrad's", "does": piece.does,
                            "why": self.why.get(piece.name, "")})
        return out


MINIGRADS = Chosen()  # every piece minigrad's own, for no reason to give


class PieceBook:
    """The learner's copies of the exercises of lessons 4 to 7, as last marked.

    `mark(lesson)` is `yours(lesson, announce=False)` (injected in tests). A copy is marked again
    when its file changes (path, size or modification time)."""

    def __init__(self, mark: Callable[[int], Any] | None = None):
        self._mark = mark or (lambda number: yours(number, announce=False))
        self._marked: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def _current(self, number: int) -> Any:
        """The marked copy of lesson `number` (re-marked when its file changed)."""
        try:
            path = catalog.get_lesson(number).working_copy
            stat = path.stat() if path.is_file() else None
            key: Any = (str(path), stat and (stat.st_size, stat.st_mtime_ns))
        except (LookupError, OSError) as err:  # no lessons folder here: nothing of yours to run
            return _NotFound(str(err))
        with self._lock:
            seen = self._marked.get(number)
            if seen is None or seen[0] != key:
                seen = (key, self._mark(number))
                self._marked[number] = seen
            return seen[1]

    def status(self) -> list[dict[str, Any]]:
        """Each piece: whose the lab would run, where yours comes from, or why minigrad's."""
        out = []
        for piece in LAB_PIECES:
            marked = self._current(piece.lesson)
            passes = bool(getattr(marked, "are_yours", False))
            out.append({"name": piece.name, "lesson": piece.lesson, "does": piece.does, "passes": passes,
                        "source": marked.source if passes else "", "why": "" if passes else marked.reason})
        return out

    def chosen(self, on: bool) -> Chosen:
        """The pieces to compute with: the learner's that pass, when `on`; else minigrad's. The
        reason kept for each of minigrad's is the copy's own when it does not pass."""
        found, why = {}, {}
        for piece in LAB_PIECES:
            marked = self._current(piece.lesson)
            if not getattr(marked, "are_yours", False):
                why[piece.name] = marked.reason
            elif on:
                found[piece.name] = marked.found[piece.name]
            else:
                why[piece.name] = "yours passes; the switch is off"
        return Chosen(found, why)


@dataclass
class _NotFound:
    reason: str
    are_yours: bool = False


# ---- running them ---------------------------------------------------------------------------------

def tie_with_yours(model: Any, theirs: Callable[[Any], Any]) -> None:
    """Tie `model` (built untied: `emb` and `head`) with the learner's tie_weights; PieceFailed
    when it raises or leaves the output map untied."""
    try:
        theirs(model)
    except Exception as err:  # the learner's code: any error is theirs to see
        raise PieceFailed("tie_weights", f"raised {type(err).__name__}: {err}") from None
    if model.head.weight is not model.emb.weight:
        raise PieceFailed("tie_weights", "left head.weight a Parameter of its own (no tie was made)")


def run_pieces(chosen: Chosen, compute: Callable[[Chosen], Any]) -> tuple[Any, Chosen]:
    """compute(chosen); when the learner's pieces fail on this input, compute again on minigrad's
    for the piece that failed (all of them when it is not known which). Returns (result, the
    choice it ran on)."""
    try:
        return compute(chosen), chosen
    except PieceFailed as failure:
        chosen = chosen.without(failure, failure.piece)
    except Exception as failure:  # raised inside the learner's op: which piece is not known
        if not chosen.yours(*chosen.found):
            raise
        chosen = chosen.without(_their_error(failure))
    return compute(chosen), chosen


def _their_error(err: Exception) -> Exception:
    return Exception(f"raised {type(err).__name__}: {err}")


class TableByYourRows:
    """AdamW(lazy=True, decay=...) for a TinyLM whose token table is stepped by the learner's
    lazy_adamw_rows (RowAdamW) and every other parameter by minigrad's AdamW with the same options."""

    def __init__(self, model: Any, rule: Callable[..., Any], *, lr: float, weight_decay: float, decay: str):
        table = model.emb.weight
        self.table = RowAdamW([table], rule, lr=lr, weight_decay=weight_decay, decay=decay)
        rest = [p for p in model.parameters() if p is not table]
        self.rest = AdamW(rest, lr=lr, weight_decay=weight_decay, lazy=True, decay=decay)

    def zero_grad(self) -> None:
        self.table.zero_grad()
        self.rest.zero_grad()

    def step(self) -> None:
        try:
            self.table.step()
        except Exception as err:  # the learner's rule
            raise PieceFailed("lazy_adamw_rows", f"raised {type(err).__name__}: {err}") from None
        self.rest.step()

