"""Training pieces more than one lesson uses: the warm-up + cosine learning rate (`warmup_cosine`,
the optimizer layer's one schedule: lessons 11 to 13),
a tied table's gradient split by path (`split_paths`, `classifier_share`: lessons 6 and 10), and a
language model trained on a text the way lesson 8 trains one (`train_on_text`, its windows
`text_windows`, `tables_of`, `input_map_worth`: lessons 9 to 13) or under the warm-up + cosine
schedule with snapshots along the way (`fit_scheduled`: lessons 11 and 14). Each trains with the
pieces it is given (`ModelPieces`: the learner's from lessons 4 to 8 where they pass, else
minigrad's). (The verdicts on settling and freezing are in verdicts.py, with every other
verdict.)"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from minigrad.engine import Tensor, no_grad, to_dense
from minigrad.learn.kit.model_pieces import MINIGRADS, ModelPieces
from minigrad.learn.train import History, ProgressBar, Windows, batches, split_windows
from minigrad.optim.lr_scheduler import warmup_cosine
from minigrad.tools.ledger import Ledger, ledger

# ---- the tie and a tied table's gradient by path (lesson 6) -------------------------------------

def split_paths(led: Ledger, table: Tensor) -> tuple[np.ndarray, Any]:
    """A tied table's gradient as the ledger recorded it: (the classifier's dense (V, d) float64
    array, the lookup's coalesced RowSparse). Works for any model whose ledger names one
    `classifier ...` and one `lookup ...` path into `table` (TinyLM and TinyGPT alike)."""
    by_path = led.path_grads(table)
    classifier = [g for name, g in by_path.items() if name.startswith("classifier")]
    lookup = [g for name, g in by_path.items() if name.startswith("lookup")]
    if len(by_path) != 2 or len(classifier) != 1 or len(lookup) != 1:  # nothing else may reach it
        raise ValueError(f"split_paths: expected exactly one classifier and one lookup path into the "
                         f"table, the ledger has {sorted(by_path)}")
    return np.asarray(classifier[0], dtype=np.float64), lookup[0].coalesce()


def classifier_and_lookup(led: Ledger, table: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Lesson 10's piece, minigrad's side: a tied table's gradient from one backward's ledger,
    split by path into two dense (V, d) float64 arrays, (what the classifier paths sent, what the
    lookup paths sent); they add up to the table's gradient. A model read twice before one
    backward has two paths of each kind (`lookup emb #2 ...`): each side is their sum."""
    sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
    for path, grad in led.path_grads(table).items():
        role = path.split(" ")[0]
        if role not in sides:  # nothing else may reach a tied table
            raise ValueError(f"classifier_and_lookup: the path {path!r} into the table is neither a "
                             "classifier nor a lookup")
        sides[role] += np.asarray(to_dense(grad), dtype=np.float64)
    return sides["classifier"], sides["lookup"]


def classifier_share(sent: dict[str, np.ndarray], rows: np.ndarray) -> float:
    """classifier / (classifier + lookup) of the gradient traffic (summed row norms) to `rows`;
    sent: {"classifier": (V,), "lookup": (V,)} norms summed over steps."""
    c, k = sent["classifier"][rows].sum(), sent["lookup"][rows].sum()
    return float(c / (c + k))


Split = Callable[[Ledger, Tensor], tuple[np.ndarray, np.ndarray]]


class _ShareWindow:
    """One ledger window of tied_share_curve: each path's traffic and displacement, row by row."""

    def __init__(self, shape: tuple[int, ...]):
        self.sent = {"classifier": np.zeros(shape[0]), "lookup": np.zeros(shape[0])}
        self.moved = {path: np.zeros(shape, np.float64) for path in self.sent}

    def add(self, paths: tuple[np.ndarray, np.ndarray], divisor: np.ndarray) -> None:
        for name, grad in zip(("classifier", "lookup"), paths):
            self.sent[name] += np.linalg.norm(grad, axis=1)
            self.moved[name] += grad / divisor

    def by_band(self, bands: dict[str, np.ndarray]) -> dict[str, tuple[float, tuple[float, float]]]:
        """{band: (the classifier's share of the traffic, (classifier, lookup) displacement)}."""
        norms = {path: np.linalg.norm(m, axis=1) for path, m in self.moved.items()}
        return {band: (classifier_share(self.sent, rows), (norms["classifier"][rows].sum(),
                                                           norms["lookup"][rows].sum()))
                for band, rows in bands.items()}


def tied_share_curve(model: Any, windows: Windows, *, batch_size: int, steps: int, every: int, window: int,
                     bands: dict[str, np.ndarray], seed: int, lr: float = 3e-3,
                     weight_decay: float = 0.01, pieces: ModelPieces = MINIGRADS,
                     split: Split = classifier_and_lookup,
                     ) -> tuple[list[int], dict[str, list[float]], dict[str, np.ndarray]]:
    """Train a tied model with AdamW on `windows` and, for the first `window` steps out of every
    `every`, split its table's gradient by path with the ledger (`split(led, table)`: lesson 10's
    piece, the learner's or `classifier_and_lookup`). The model trains on `pieces` (its ops, its
    AdamW); the step is written out here, since the ledger records the backward inside it.

    bands: {name: row ids}. Returns (the first step of each ledger window, {band name: the
    classifier's share of the traffic to the band's rows in each window}, {band name: a
    (windows, 2) array of the displacement of the band's rows that the classifier's and the
    lookup's gradients cause}).

    Traffic is the sum of gradient row norms. Displacement is what AdamW does with them: each
    path's gradient divided elementwise by Adam's sqrt(v_hat) + eps after the step (the divisor
    both paths share), summed over the window's steps per row, and the row norms of that sum
    added over the band. Momentum only spreads a gradient over the following steps (its weights
    add up to one), so this is, up to lr, the movement each path's gradients of the window make;
    weight decay, which belongs to neither path, is left out.
    """
    table = model.input_table
    if table is not model.output_table:
        raise ValueError("tied_share_curve: the model is untied (input_table is not output_table); "
                         "the split by path is about one table in both roles")
    optimizer = pieces.adamw(model.parameters(), lr=lr, weight_decay=weight_decay)
    eps = optimizer.param_groups[0]["eps"]
    stream = batches(windows, batch_size, np.random.default_rng(seed + 1))
    starts: list[int] = []
    shares: dict[str, list[float]] = {band: [] for band in bands}
    moved_by_band: dict[str, list[tuple[float, float]]] = {band: [] for band in bands}
    with pieces.use():
        for step in range(steps):
            loss = model.loss(*next(stream))
            optimizer.zero_grad()
            recording = step % every < window
            with ledger(names=model) if recording else contextlib.nullcontext() as led:
                loss.backward()
            if recording:
                assert led is not None  # recorded under the ledger just above
                paths = split(led, table)
            optimizer.step()
            if not recording:
                continue
            if step % every == 0:
                current = _ShareWindow(table.shape)
            current.add(paths, np.sqrt(optimizer.second_moment(table, bias_corrected=True)) + eps)
            if step % every == window - 1:
                starts.append(step - window + 1)
                for band, (share, moved) in current.by_band(bands).items():
                    shares[band].append(share)
                    moved_by_band[band].append(moved)
    return starts, shares, {band: np.array(m) for band, m in moved_by_band.items()}


# ---- a language model trained on a text, lesson 8's way (lessons 9 to 13) ------------------------

def predicts_every_position(model: Any, context: int) -> bool:
    """True for a model whose logits have a time axis (TinyGPT: (B, T, V)), False for one that
    predicts only the next token of a window (TinyLM: (B, V)). Asked with one window of zeros."""
    with no_grad():
        return model(np.zeros((1, context), dtype=np.int64)).ndim == 3


def text_windows(model: Any, token_ids: np.ndarray, *, context: int, held_out_stride: int = 1
                 ) -> tuple[Windows, Windows]:
    """(training, held-out) windows of a token sequence for `model`, as train_on_text cuts them: a
    tenth of the text held out from twenty places, targets at every position for a model that
    predicts at every position (TinyGPT), every held_out_stride-th held-out window kept."""
    every_position = predicts_every_position(model, context)
    data, held_out = split_windows(token_ids, context, valid_fraction=0.1, pieces=20,
                                   every_position=every_position)
    return data, held_out.subset(np.arange(0, len(held_out), held_out_stride))


def train_on_text(model: Any, token_ids: np.ndarray, *, context: int, steps: int, batch_size: int,
                  seed: int, lr: float = 3e-3, weight_decay: float = 0.01, held_out_stride: int = 1,
                  evaluations: int = 1, scheduler: Any = None, label: str = "",
                  pieces: ModelPieces = MINIGRADS) -> History:
    """Train `model` on a token sequence as lesson 8 does: windows of `context` tokens, a tenth of
    the text held out from twenty places, AdamW, batches drawn with `seed + 1`. A model that
    predicts at every position (TinyGPT) gets a target at every position. held_out_stride: keep
    every n-th held-out window (the evaluation's cost); evaluations: how many over the run;
    scheduler: called with the optimizer, returns the schedule train() steps; pieces: what the
    model trains on (the learner's from lessons 4 to 8, or minigrad's). Returns the History."""
    data, held_out = text_windows(model, token_ids, context=context, held_out_stride=held_out_stride)
    optimizer = pieces.adamw(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = scheduler(optimizer) if scheduler is not None else None
    return pieces.train(model, optimizer, data, held_out, steps=steps, batch_size=batch_size,
                        eval_every=max(1, steps // evaluations), rng=seed + 1, label=label,
                        scheduler=schedule)


def input_map_worth(model: Any, held_out: Windows, initial_rows: np.ndarray,
                    pieces: ModelPieces = MINIGRADS) -> float:
    """What a model's input map has learned is worth to it: its held-out loss with the map's
    initial rows put back, minus its held-out loss as it is (nats). Lessons 11 and 12 use it as the
    guard of a verdict about the map's geometry: a map put back to its random rows would pass a
    statement such as "no cone" just as well, and is worth nothing. pieces: whose evaluation
    (mean_loss) and ops measure it."""
    table = model.input_table
    trained_rows, now = table.data.copy(), pieces.mean_loss_of(model, held_out)
    table.data[...] = initial_rows
    worth = pieces.mean_loss_of(model, held_out) - now
    table.data[...] = trained_rows
    return worth


def tables_of(model: Any) -> dict[str, np.ndarray]:
    """A model's input table and output map as float64 copies: {"E": (V, d), "W": (V, d)}."""
    return {"E": model.input_table.data.astype(np.float64), "W": model.output_table.data.astype(np.float64)}


def fit_scheduled(model: Any, data: Windows, held_out: Windows, *, steps: int, batch_size: int, seed: int,
                  peak_lr: float = 3e-3, weight_decay: float = 0.01, label: str = "",
                  on_eval: Any = None, evaluations: int = 20,
                  pieces: ModelPieces = MINIGRADS) -> tuple[list[int], list[float]]:
    """Train the parameters that require grad with AdamW under warmup_cosine, batches drawn with
    `seed + 1`; evaluate on `held_out` at the start and `evaluations` times over the run, calling
    on_eval(step, model) each time. The model trains on `pieces` (ops, AdamW, train_step and
    mean_loss). Returns (the evaluation steps, the held-out losses)."""
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = pieces.adamw(trained, lr=peak_lr, weight_decay=weight_decay)
    stream = batches(data, batch_size, np.random.default_rng(seed + 1))
    every = max(1, steps // evaluations)
    eval_steps, losses = [0], [pieces.mean_loss_of(model, held_out)]
    if on_eval is not None:
        on_eval(0, model)
    bar = ProgressBar(steps, label)
    with pieces.use():
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = warmup_cosine(step, steps, peak_lr)
            loss = pieces.train_step(model, optimizer, *next(stream))
            if (step + 1) % every == 0 or step + 1 == steps:
                eval_steps.append(step + 1)
                losses.append(float(pieces.mean_loss(model, held_out.ids, held_out.targets)))
                if on_eval is not None:
                    on_eval(step + 1, model)
            bar.update(step + 1, f"loss {loss:.3f}", f"valid {losses[-1]:.3f}")
    bar.close()
    return eval_steps, losses
