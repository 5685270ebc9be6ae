"""What the models of lessons 8 to 14 are built and trained with, piece by piece.

Lessons 4 to 8 each have the learner build one of the pieces a language model runs on: the
lookup's backward (`Embedding`, lesson 4), cross-entropy's (`CrossEntropy`, 5), the tie
(`tie_weights`, 6), AdamW's arithmetic on a table's rows (`lazy_adamw_rows`, 7) and the training
step with its evaluation (`train_step`, `mean_loss`, 8). `ModelPieces` holds one of each: the
learner's where their copy passes its check (`minigrad.learn.course.model_pieces` decides and says
so), else minigrad's own. `MINIGRADS` is every piece minigrad's.

    mine = model_pieces(8)                                   # the course decides whose
    with mine.use():                                         # Embedding, CrossEntropy: yours
        model = mine.build(TinyLM(V, d, H, C, tied=False), tied=True)      # your tie
        optimizer = mine.adamw(model.parameters(), lr=3e-3, weight_decay=0.01)  # your rows
        history = mine.train(model, optimizer, train_data, valid_data, steps=..., batch_size=...)

A lesson runs the same code whoever's pieces they are; with every piece the learner's reference
answer, its figures are minigrad's up to float rounding (tests/lessons/test_model_pieces.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minigrad.engine import Tensor, use
from minigrad.learn.kit.rare_rows import RowAdamW
from minigrad.learn.train import History, LossFn, StepFn, mean_loss, train, train_step
from minigrad.optim import Adam, AdamW

# The pieces, in the order the course builds them: (lesson, name). Ops are swapped in with
# minigrad.use; the rest are functions a lesson calls.
MODEL_PIECES = ((4, "Embedding"), (5, "CrossEntropy"), (6, "tie_weights"), (7, "lazy_adamw_rows"),
                (8, "train_step"), (8, "mean_loss"))
OPS = ("Embedding", "CrossEntropy")


def minigrads_tie(model: Any) -> Any:
    """Lesson 6's piece, minigrad's side: the model's own `tie_weights()`, the tie TinyLM and
    TinyGPT make when they are built with tied=True. Returns the model."""
    tie = getattr(model, "tie_weights", None)
    if not callable(tie):
        raise TypeError(f"minigrads_tie: model must be one of minigrad's language models (TinyLM, TinyGPT), "
                        f"which tie themselves with model.tie_weights(); got a {type(model).__name__}")
    return tie()


@dataclass(frozen=True)
class ModelPieces:
    """One of each piece a language model is built and trained with (see the module's docstring).

    ops:             {op name: the learner's Function} to run in place of minigrad's (`use()`)
    tie_weights:     tie_weights(model) -> the model, tied
    lazy_adamw_rows: the learner's row rule for `RowAdamW`, or None for minigrad's AdamW
    train_step:      train_step(model, optimizer, ids, targets) -> the batch's loss
    mean_loss:       mean_loss(model, ids, targets) -> the mean loss over every target
    yours:           the names of the pieces that are the learner's
    """

    ops: Mapping[str, type] = field(default_factory=dict)
    tie_weights: Callable[[Any], Any] = minigrads_tie
    lazy_adamw_rows: Callable[..., Any] | None = None
    train_step: StepFn = train_step
    mean_loss: LossFn = mean_loss
    yours: frozenset[str] = frozenset()

    def is_yours(self, name: str) -> bool:
        if name not in {piece for _, piece in MODEL_PIECES}:
            raise KeyError(f"ModelPieces: {name!r} is not one of the pieces "
                           f"({', '.join(piece for _, piece in MODEL_PIECES)})")
        return name in self.yours

    def use(self) -> contextlib.AbstractContextManager:
        """A block in which the learner's ops run wherever minigrad's would (nothing when none is theirs)."""
        ops: dict[str, Any] = dict(self.ops)
        return use(**ops) if ops else contextlib.nullcontext()

    def build(self, model: Any, tied: bool) -> Any:
        """`model`, built untied, tied with `tie_weights` when `tied` (else as it is)."""
        if getattr(model, "tied", False):
            raise ValueError(f"ModelPieces.build: build the {type(model).__name__} with tied=False; the tie "
                             "is made here, with the tie_weights of these pieces")
        return self.tie_weights(model) if tied else model

    def adamw(self, params: Iterable[Tensor], *, lr: float, weight_decay: float,
              betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> Any:
        """PyTorch's AdamW (every row, every step): minigrad's, or `RowAdamW` on the learner's rule."""
        if self.lazy_adamw_rows is None:
            return AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps)
        return RowAdamW(params, self.lazy_adamw_rows, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps,
                        lazy=False)

    def lazy_adam(self, params: Iterable[Tensor], *, lr: float) -> Any:
        """Adam without weight decay whose steps touch only the rows a gradient names (PyTorch's
        SparseAdam): minigrad's Adam(lazy=True), or `RowAdamW` on the learner's rule."""
        if self.lazy_adamw_rows is None:
            return Adam(params, lr=lr, lazy=True)
        return RowAdamW(params, self.lazy_adamw_rows, lr=lr, weight_decay=0.0, lazy=True)

    def train(self, model: Any, optimizer: Any, train_data: Any, valid_data: Any, **options: Any) -> History:
        """`minigrad.learn.train.train` with these pieces: the ops in place, this train_step and
        this mean_loss; options as train's (steps, batch_size, rng, ...)."""
        with self.use():
            return train(model, optimizer, train_data, valid_data, one_step=self.train_step,
                         loss_over=self.mean_loss, **options)

    def mean_loss_of(self, model: Any, data: Any) -> float:
        """This mean_loss of `model` over every target of `data` (Windows), the ops in place."""
        with self.use():
            return float(self.mean_loss(model, data.ids, data.targets))


MINIGRADS = ModelPieces()
