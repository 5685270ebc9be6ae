"""Training a next-token model: held-out windows, shuffled batches, a loop that reports as it goes.

    tokens (n,) --split_windows--> Windows(ids (N, C), targets (N,)) for training and validation
    train(model, optimizer, ...) -> History: validation and training loss at evaluation points,
                                    every batch's loss, tokens per second
    train_step(model, optimizer, ids, targets) -> the batch's loss: one step of that loop
    mean_loss(model, ids, targets) -> the mean loss over every target: its evaluation

With every_position=True the targets are (N, C), the token after each position, for a model
that predicts at every position (TinyGPT: ids (B, C) -> logits (B, C, V)).

A "token" in the counts below is one predicted position: a batch of B windows trains on B
tokens, or on B * C with every_position. The progress bar is plain text on stderr: redrawn in
place on a terminal and in a Jupyter notebook, a few whole lines otherwise (so a CI log stays
readable). No dependency beyond numpy.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from minigrad.engine import as_generator, kernels, no_grad, positive_int
from minigrad.models import next_token_windows
from minigrad.nn import functional as F
from minigrad.nn.module import Module


# ---- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Windows:
    """Next-token examples: ids (N, C) int, the C previous tokens; targets (N,) int, the next one,
    or (N, C), the next token after every position (for models that predict at every position)."""

    ids: np.ndarray
    targets: np.ndarray

    def __post_init__(self) -> None:
        if self.ids.ndim != 2 or self.targets.shape not in (self.ids.shape[:1], self.ids.shape):
            raise ValueError(f"Windows: ids has shape {self.ids.shape} and targets {self.targets.shape}; "
                             "expected (N, C) and (N,), or (N, C) and (N, C)")

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def context(self) -> int:
        return self.ids.shape[1]

    @property
    def positions(self) -> int:
        """Predicted positions per window: 1, or C when every position has a target."""
        return 1 if self.targets.ndim == 1 else self.ids.shape[1]

    def subset(self, rows: np.ndarray) -> Windows:
        return Windows(self.ids[rows], self.targets[rows])


def windows(token_ids: np.ndarray, context: int, every_position: bool = False, stride: int = 1) -> Windows:
    """Every (previous `context` tokens, next token) pair of a token sequence (n,): N = n - C.

    every_position: targets (N, C), window i's tokens shifted by one (the next token at each
    position). stride: keep every stride-th window (stride = C: windows that do not overlap).
    """
    ids, targets = next_token_windows(token_ids, positive_int("windows", "context", context))
    if every_position:
        targets = np.concatenate([ids[:, 1:], targets[:, None]], axis=1)
    stride = positive_int("windows", "stride", stride)
    return Windows(ids[::stride], targets[::stride])


def split_windows(token_ids: np.ndarray, context: int, valid_fraction: float = 0.1,
                  pieces: int = 1, every_position: bool = False) -> tuple[Windows, Windows]:
    """(train, valid) windows of one token sequence (n,), the validation text held out.

    The text is cut into `pieces` consecutive pieces of equal length, and the last
    `valid_fraction` of each piece is held out; pieces > 1 spreads the held-out text over the
    whole corpus, so it is not all one topic. Every part is windowed on its own: no window
    crosses a cut, so no validation token is ever read or predicted in training. Contiguous
    cuts, not a shuffle of windows: neighbouring windows share all but one token, so a
    shuffled split would validate on text the model trained on.

    every_position: targets at every position (N, C); the held-out windows then do not overlap
    (stride C), so each held-out token is predicted once.
    """
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"split_windows: valid_fraction must be in (0, 1), got {valid_fraction!r}")
    pieces = positive_int("split_windows", "pieces", pieces)
    tokens = np.asarray(token_ids)
    bounds = np.linspace(0, len(tokens), pieces + 1).round().astype(int)
    train_parts: list[Windows] = []
    valid_parts: list[Windows] = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        cut = start + int(round((stop - start) * (1.0 - valid_fraction)))
        for part, (lo, hi) in ((train_parts, (start, cut)), (valid_parts, (cut, stop))):
            if hi - lo <= context:
                raise ValueError(
                    f"split_windows: a part of {hi - lo} tokens makes no window of context={context} "
                    f"({len(tokens)} tokens, pieces={pieces}, valid_fraction={valid_fraction}); use "
                    "fewer pieces or more text"
                )
            stride = context if every_position and part is valid_parts else 1
            part.append(windows(tokens[lo:hi], context, every_position, stride))
    return _concatenate(train_parts), _concatenate(valid_parts)


def _concatenate(parts: list[Windows]) -> Windows:
    return Windows(np.concatenate([w.ids for w in parts]), np.concatenate([w.targets for w in parts]))


def batches(data: Windows, batch_size: int, rng: Any = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Endless shuffled passes over `data`: (ids (B, C), targets (B,)) with B = batch_size.

    Every pass visits each window once in a fresh random order; the last len(data) % B windows
    of a pass are left for chance to pick up in another pass, so every batch has exactly B.
    """
    batch_size = positive_int("batches", "batch_size", batch_size)
    if batch_size > len(data):
        raise ValueError(f"batches: batch_size={batch_size} is larger than the data ({len(data)} windows)")
    g = as_generator(rng, "batches")
    while True:
        order = g.permutation(len(data))
        for start in range(0, len(order) - batch_size + 1, batch_size):
            rows = order[start : start + batch_size]
            yield data.ids[rows], data.targets[rows]


def next_token_loss(logits: Any, targets: Any, reduction: str = "mean") -> Any:
    """Cross-entropy of each position's logits (..., V) against its next token (...), for
    TinyLM's (N, V) and TinyGPT's (B, T, V) alike: the positions become rows, (N, V) and (N,),
    the layout F.cross_entropy takes from PyTorch (which would read (B, T, V) as classes on T)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), np.reshape(targets, -1), reduction=reduction)


def mean_loss(model: Module, ids: np.ndarray, targets: np.ndarray, batch_size: int = 1024) -> float:
    """Mean cross-entropy (nats per predicted token) of `model(ids)` over every target.

    ids (N, C) int; targets (N,), or (N, C) for a model that predicts at every position. Run in
    chunks of at most `batch_size` predicted positions (whole windows, at least one) under
    no_grad: nothing is recorded and no parameter's .grad changes. Each chunk's loss is summed,
    so a smaller last chunk weighs what its positions weigh.
    """
    batch_size = positive_int("mean_loss", "batch_size", batch_size)
    ids, targets = np.asarray(ids), np.asarray(targets)
    if len(ids) == 0:
        raise ValueError("mean_loss: ids has no windows")
    if len(targets) != len(ids):
        raise ValueError(f"mean_loss: ids has {len(ids)} windows but targets has {len(targets)}")
    positions = 1 if targets.ndim == 1 else int(np.prod(targets.shape[1:]))
    rows = max(1, batch_size // positions)
    total = 0.0
    with no_grad():
        for start in range(0, len(ids), rows):
            logits = model(ids[start : start + rows])
            total += float(next_token_loss(logits, targets[start : start + rows], reduction="sum").item())
    return total / targets.size


def evaluate(model: Module, data: Windows, batch_size: int = 1024) -> float:
    """Mean cross-entropy (nats per token) of `model(ids)` logits over every target of `data`
    (`mean_loss` on its windows): under no_grad, in chunks of about `batch_size` positions."""
    if len(data) == 0:
        raise ValueError("evaluate: data has no windows")
    return mean_loss(model, data.ids, data.targets, batch_size)


def train_step(model: Module, optimizer: Any, ids: np.ndarray, targets: np.ndarray) -> float:
    """One training step: the batch's mean cross-entropy, the old gradients forgotten, the new
    ones computed, the optimizer's step. Returns the batch's loss (before the update) as a float.

    ids (B, C) int -> model -> logits (B, V), or (B, C, V) with targets (B, C)."""
    loss = next_token_loss(model(ids), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


# ---- progress ----------------------------------------------------------------------------------
def format_rate(tokens_per_second: float) -> str:
    """12345.6 -> '12.3k tok/s'."""
    if tokens_per_second >= 1e6:
        return f"{tokens_per_second / 1e6:.2f}M tok/s"
    if tokens_per_second >= 1e3:
        return f"{tokens_per_second / 1e3:.1f}k tok/s"
    return f"{tokens_per_second:.0f} tok/s"


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"


class ProgressBar:
    """`label [#########-----------]  450/1000  loss 4.213  valid 4.502  21.3k tok/s  0:09<0:11`

    On a terminal or in a notebook the line is redrawn in place (at most every `interval`
    seconds); on anything else (a file, a CI log) a whole line is written at every tenth of the
    way and at the end.
    """

    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, width: int = 24,
                 interval: float = 0.1, enabled: bool = True):
        self.total = positive_int("ProgressBar", "total", total)
        self.label, self.width, self.interval, self.enabled = label, width, interval, enabled
        self.stream = sys.stderr if stream is None else stream
        is_tty = getattr(self.stream, "isatty", None)
        on_terminal = bool(is_tty and is_tty())
        self.in_place = on_terminal or _is_notebook_stream(self.stream)
        # a terminal keeps what was after the cursor unless told to erase it; a notebook's
        # output area replaces the whole line at a carriage return (and would print the escape)
        self._erase = "\033[K" if on_terminal else ""
        self.started = time.perf_counter()
        self._last_draw = -np.inf
        self._last_tenth = -1
        self._open = False

    def line(self, done: int, *notes: str) -> str:
        filled = int(self.width * done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = time.perf_counter() - self.started
        left = elapsed * (self.total - done) / done if done else 0.0
        parts = [f"{self.label} [{bar}] {done:>{len(str(self.total))}}/{self.total}"]
        parts += notes
        parts.append(f"{_clock(elapsed)}<{_clock(left)}")
        return "  ".join(parts).strip()

    def update(self, done: int, *notes: str) -> None:
        """Show `done` of `total`, then `notes` (short formatted strings such as "loss 4.213")."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.in_place:
            if done < self.total and now - self._last_draw < self.interval:
                return
            self.stream.write("\r" + self.line(done, *notes) + self._erase)
            self._open = True
        else:
            tenth = 10 * done // self.total
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(self.line(done, *notes) + "\n")
        self._last_draw = now
        self.stream.flush()

    def close(self) -> None:
        """End the redrawn line (a terminal's next output starts on a fresh line)."""
        if self.enabled and self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def _is_notebook_stream(stream: TextIO) -> bool:
    """Whether `stream` is a Jupyter kernel's stdout/stderr (ipykernel's OutStream), whose
    output area treats a carriage return as a terminal does. Not a tty, so asked by type."""
    return type(stream).__module__.split(".")[0] == "ipykernel"


# ---- the loop ----------------------------------------------------------------------------------
StepFn = Callable[[Module, Any, np.ndarray, np.ndarray], float]
LossFn = Callable[[Module, np.ndarray, np.ndarray], float]


@dataclass
class History:
    """What one training run measured.

    eval_steps:  the steps at which the model was evaluated: 0 (before training), every
                 `eval_every`, and the last step
    valid_loss:  mean loss over every validation window, at each eval step
    train_loss:  the same on a fixed sample of training windows (as large as the validation
                 set, at most), so the two curves are measured alike
    batch_loss:  (steps,) the loss of each training batch, before its update
    train_seconds: time in forward, backward and optimizer steps (evaluation excluded)
    """

    label: str
    batch_size: int
    positions: int = 1  # predicted positions per window: C when the model predicts at every one
    eval_steps: list[int] = field(default_factory=list)
    valid_loss: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    batch_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    train_seconds: float = 0.0

    @property
    def steps(self) -> int:
        return len(self.batch_loss)

    @property
    def tokens(self) -> int:
        """Predicted positions trained on."""
        return self.steps * self.batch_size * self.positions

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.train_seconds if self.train_seconds > 0 else 0.0


def train(model: Module, optimizer: Any, train_data: Windows, valid_data: Windows, *, steps: int,
          batch_size: int, eval_every: int | None = None, rng: Any = 0, label: str = "",
          progress: bool = True, stream: TextIO | None = None,
          on_eval: Callable[[int, Module], None] | None = None, scheduler: Any = None,
          max_seconds: float | None = None, eval_from: int = 0,
          one_step: StepFn = train_step, loss_over: LossFn = mean_loss) -> History:
    """Train `model` (ids (B, C) -> logits (B, V), or (B, C, V) for targets at every position)
    on mean cross-entropy for `steps` batches.

    optimizer:   anything with zero_grad() and step(), e.g. minigrad.optim.AdamW
    scheduler:   a minigrad.optim.lr_scheduler schedule, stepped after every optimizer step
    max_seconds: stop early once this much training time is spent (evaluation not counted), so
                 two models can be compared at equal training time; the last step is evaluated
    eval_every:  evaluate every this many steps (default: 10 evaluations over the run)
    eval_from:   skip those evaluations before this step (step 0 and the last step are always
                 evaluated): a run that only needs its last few evaluations need not pay for the rest
    rng:         seed or Generator for the batch order; the same seed gives the same batches
    on_eval:     called as on_eval(step, model) at every evaluation (e.g. to snapshot weights)
    one_step:    one_step(model, optimizer, ids, targets) -> the batch's loss: a training step
                 (`train_step`, or the learner's from lesson 8)
    loss_over:   loss_over(model, ids, targets) -> mean loss: the evaluation (`mean_loss`, or
                 the learner's from lesson 8)
    Raises FloatingPointError, naming the step, if a batch loss is NaN or infinite.
    """
    steps, batch_size, eval_every, eval_from = _checked_schedule(steps, batch_size, eval_every, eval_from,
                                                                  train_data, valid_data)
    if kernels.fast_enabled():
        kernels.keep_freed_memory()  # a training loop reallocates the same sizes every step
    g = as_generator(rng, "train")
    sample = np.sort(g.choice(len(train_data), min(len(train_data), len(valid_data)), replace=False))
    train_sample = train_data.subset(sample)
    stream_of_batches = batches(train_data, batch_size, g)
    history = History(label=label, batch_size=batch_size, positions=train_data.positions,
                      batch_loss=np.zeros(steps))
    bar = ProgressBar(steps, label, stream=stream, enabled=progress)

    def record(step: int) -> None:
        history.eval_steps.append(step)
        history.valid_loss.append(float(loss_over(model, valid_data.ids, valid_data.targets)))
        history.train_loss.append(float(loss_over(model, train_sample.ids, train_sample.targets)))
        if on_eval is not None:
            on_eval(step, model)

    record(0)
    smoothed = None
    for step in range(1, steps + 1):
        value = _timed_step(one_step, model, optimizer, scheduler, next(stream_of_batches), history)
        if not np.isfinite(value):
            bar.close()
            raise FloatingPointError(f"train: the loss of batch {step} is {value} (diverged; try a lower "
                                     "learning rate)")
        history.batch_loss[step - 1] = value
        smoothed = value if smoothed is None else 0.95 * smoothed + 0.05 * value
        out_of_time = max_seconds is not None and history.train_seconds >= max_seconds
        if (step % eval_every == 0 and step >= eval_from) or step == steps or out_of_time:
            record(step)
        bar.update(step, f"loss {smoothed:.3f}", f"valid {history.valid_loss[-1]:.3f}",
                   format_rate(step * batch_size * history.positions / max(history.train_seconds, 1e-9)))
        if out_of_time:
            history.batch_loss = history.batch_loss[:step]
            break
    bar.close()
    return history


def _checked_schedule(steps: Any, batch_size: Any, eval_every: Any, eval_from: Any, train_data: Windows,
                      valid_data: Windows) -> tuple[int, int, int, int]:
    """train's sizes as ints (eval_every: 10 evaluations over the run when None), or an error
    naming the argument that is wrong."""
    steps = positive_int("train", "steps", steps)
    batch_size = positive_int("train", "batch_size", batch_size)
    if eval_every is None:
        eval_every = max(1, steps // 10)
    eval_every = positive_int("train", "eval_every", eval_every)
    eval_from = positive_int("train", "eval_from", eval_from, least=0)
    if len(valid_data) == 0:
        raise ValueError("train: valid_data has no windows")
    if batch_size > len(train_data):
        raise ValueError(
            f"train: batch_size={batch_size} is larger than train_data ({len(train_data)} windows)"
        )
    return steps, batch_size, eval_every, eval_from


def _timed_step(one_step: StepFn, model: Module, optimizer: Any, scheduler: Any,
                batch: tuple[np.ndarray, np.ndarray], history: History) -> float:
    """one_step on `batch`, then the schedule's step (their time added to history.train_seconds);
    the batch's loss."""
    ids, targets = batch
    started = time.perf_counter()
    value = float(one_step(model, optimizer, ids, targets))
    if scheduler is not None:
        scheduler.step()
    history.train_seconds += time.perf_counter() - started
    return value
