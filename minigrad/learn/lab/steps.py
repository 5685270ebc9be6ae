"""Page 2, steps over time: a tied and an untied TinyLM trained side by side on one stream.

The learner picks the stream (Zipf-distributed ids, or the lessons' corpus), the optimizer
(SGD, Adam, AdamW), dense or lazy updates and the weight-decay mode, and watches two rows of the
embedding table: a frequent one and a rare one. A run lives on the server (`RunBook`) and is
advanced a chunk of steps per request, so the page's plots grow while the steps run. A chunk
ends after `chunk` steps or CHUNK_SECONDS of computing, whichever comes first, so the page shows
progress and can stop a run within a second at any size.

Before a run the learner may predict which model's rare row moves further on the step its
token comes back after its longest silence; every chunk says what happened so far
(`longest_return`).

Per step and per model, for each watched row: its norm and how far it moved; when the rare
token is read again after a silence of k steps, the length of that step. At the end of each
chunk: per row, how many steps changed it and how often its token was read.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from minigrad.engine import RowSparse
from minigrad.learn.data import Vocabulary, default_corpus, tokenize
from minigrad.learn.lab import request_params as P
from minigrad.learn.lab.pieces import (
    MINIGRADS,
    ROW_DECAYS,
    Chosen,
    PieceBook,
    PieceFailed,
    TableByYourRows,
    run_pieces,
    tie_with_yours,
)
from minigrad.models.tinylm import TinyLM
from minigrad.optim import DECAY_MODES, SGD, Adam, AdamW

STREAMS = ("zipf", "corpus")
OPTIMIZERS = {"sgd": SGD, "adam": Adam, "adamw": AdamW}
MAX_VOCAB, MAX_WIDTH, MAX_BATCH, MAX_STEPS, MAX_CHUNK = 2000, 64, 256, 5000, 200
DEFAULT_LR = {"sgd": 0.5, "adam": 0.01, "adamw": 0.01}
CHUNK_SECONDS = 0.4  # a chunk computes at most this long (then the page redraws, or stops)
PREDICTIONS = ("tied", "untied", "about the same")  # whose rare row moves further after the silence
SAME_WITHIN = 0.1  # "about the same": the two steps differ by less than 10%
STEPS_PIECES = ("Embedding", "CrossEntropy", "tie_weights", "lazy_adamw_rows")


@lru_cache(maxsize=1)
def corpus_tokens() -> tuple[str, ...]:
    return tuple(tokenize(default_corpus()))


@dataclass(frozen=True)
class StepsSetup:
    stream: str
    vocab_size: int
    zipf: float
    width: int
    batch: int
    optimizer: str
    lr: float
    weight_decay: float
    lazy: bool
    decay: str
    steps: int
    chunk: int
    seed: int
    frequent: int
    rare: int  # -1: pick one (a row that occurs, but rarely)
    prediction: str | None  # one of PREDICTIONS, or None (not asked)


def read_setup(body: Mapping[str, Any]) -> StepsSetup:
    body = P.as_mapping(body)
    optimizer = P.choice(body, "optimizer", tuple(OPTIMIZERS), "adamw")
    vocab_size = P.integer(body, "vocab_size", 200, 4, MAX_VOCAB)
    return StepsSetup(
        stream=P.choice(body, "stream", STREAMS, "zipf"),
        vocab_size=vocab_size,
        zipf=P.number(body, "zipf", 1.1, 0.0, 3.0),
        width=P.integer(body, "width", 16, 1, MAX_WIDTH),
        batch=P.integer(body, "batch", 16, 1, MAX_BATCH),
        optimizer=optimizer,
        lr=P.number(body, "lr", DEFAULT_LR[optimizer], 1e-6, 10.0),
        weight_decay=P.number(body, "weight_decay", 0.1 if optimizer == "adamw" else 0.0, 0.0, 10.0),
        lazy=P.flag(body, "lazy", False),
        decay=P.choice(body, "decay", DECAY_MODES, "dense"),
        steps=P.integer(body, "steps", 300, 1, MAX_STEPS),
        chunk=P.integer(body, "chunk", 10, 1, MAX_CHUNK),
        seed=P.integer(body, "seed", 0, 0, 2**31 - 1),
        frequent=P.integer(body, "frequent", 1 if body.get("stream") == "corpus" else 0, 0, vocab_size - 1),
        rare=P.integer(body, "rare", -1, -1, vocab_size - 1),
        prediction=(None if body.get("prediction") in (None, "")
                    else P.choice(body, "prediction", PREDICTIONS)),
    )


def token_stream(setup: StepsSetup) -> tuple[np.ndarray, list[str]]:
    """(steps * batch + 1,) token ids and the word of each id (ids ranked by frequency)."""
    n = setup.steps * setup.batch + 1
    if setup.stream == "zipf":
        rng = np.random.default_rng(setup.seed)
        p = 1.0 / np.arange(1, setup.vocab_size + 1) ** setup.zipf
        return rng.choice(setup.vocab_size, size=n, p=p / p.sum()), [f"#{i}" for i in range(setup.vocab_size)]
    tokens = corpus_tokens()
    vocab = Vocabulary.build(list(tokens), max_size=setup.vocab_size)
    ids = vocab.encode(list(tokens))
    start = np.random.default_rng(setup.seed).integers(0, max(1, ids.size - n))
    return np.resize(ids[start:start + n], n), vocab.words  # np.resize repeats a short corpus


@dataclass
class Watched:
    """One model and what we measure on it."""

    model: TinyLM
    optimizer: Any
    previous: np.ndarray  # the table before the current step
    updates: np.ndarray  # (V,) steps that changed each row


@dataclass
class StepsRun:
    id: str
    setup: StepsSetup
    ids: np.ndarray
    words: list[str]
    rare: int
    models: dict[str, Watched]
    step: int = 0
    occurrences: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    last_seen: int = 0  # the step at which the rare token last occurred
    returns: list[dict[str, Any]] = field(default_factory=list)  # the rare token's returns, both models
    lock: threading.Lock = field(default_factory=threading.Lock)
    chosen: Chosen = MINIGRADS  # whose pieces it runs on


def new_run(setup: StepsSetup, run_id: str = "r0", chosen: Chosen = MINIGRADS) -> StepsRun:
    """The two models and their optimizers for `setup`, on `chosen`'s pieces: the tied model tied
    by the learner's tie_weights, the table stepped by their lazy_adamw_rows where it applies."""
    ids, words = token_stream(setup)
    counts = np.bincount(ids[:-1], minlength=setup.vocab_size)  # the ids read
    rare = setup.rare if setup.rare >= 0 else pick_rare(counts, setup.frequent, setup.steps)
    theirs = chosen.get("tie_weights")
    rule = chosen.get("lazy_adamw_rows") if rows_rule_applies(setup) else None
    models = {}
    for mode in ("tied", "untied"):
        model = TinyLM(setup.vocab_size, setup.width, hidden=2 * setup.width,
                       tied=mode == "tied" and theirs is None, dtype=np.float64, rng=setup.seed)
        if mode == "tied" and theirs is not None:
            tie_with_yours(model, theirs)
        options = dict(lr=setup.lr, weight_decay=setup.weight_decay, lazy=setup.lazy, decay=setup.decay)
        try:
            optimizer = (TableByYourRows(model, rule, lr=setup.lr, weight_decay=setup.weight_decay,
                                         decay=setup.decay) if rule is not None
                         else OPTIMIZERS[setup.optimizer](model.parameters(), **options))
        except (TypeError, ValueError) as err:  # the optimizer's own message says what to change
            raise P.BadRequest(f"optimizer: {err}") from None
        models[mode] = Watched(model, optimizer, model.emb.weight.data.copy(),
                               np.zeros(setup.vocab_size, dtype=np.int64))
    return StepsRun(run_id, setup, ids, list(words), rare, models,
                    occurrences=np.zeros(setup.vocab_size, dtype=np.int64), chosen=chosen)


def rows_rule_applies(setup: StepsSetup) -> bool:
    """The learner's lazy_adamw_rows is lesson 7's lazy AdamW with touched-only or catch-up decay."""
    return setup.optimizer == "adamw" and setup.lazy and setup.decay in ROW_DECAYS


def pieces_said(setup: StepsSetup, chosen: Chosen) -> list[dict[str, Any]]:
    """Whose piece computes what in this run (for the page)."""
    not_used = {}
    if not rows_rule_applies(setup):
        lazy = ", lazy" if setup.lazy else ""
        not_used["lazy_adamw_rows"] = (f"it is lazy AdamW with touched-only or catch-up decay; this run is "
                                       f"{setup.optimizer}{lazy}, decay {setup.decay}")
    return chosen.said(STEPS_PIECES, not_used)


def pick_rare(counts: np.ndarray, frequent: int, steps: int) -> int:
    """A row whose token is read about once every 15 steps (at least 3 times): rare enough for
    long silences, frequent enough to come back several times in the run."""
    candidates = np.flatnonzero(counts > 0)
    candidates = candidates[candidates != frequent]
    if candidates.size == 0:
        return 0 if frequent != 0 else 1
    wanted = max(3.0, steps / 15)
    return int(candidates[np.argmin(np.abs(counts[candidates] - wanted))])


def advance(run: StepsRun, seconds: float = CHUNK_SECONDS) -> dict[str, Any]:
    """Run the next chunk of steps on both models (at most `chunk` steps, and no more once
    `seconds` have passed); the points measured on the way."""
    s = run.setup
    started = time.perf_counter()
    points: dict[str, list[dict[str, Any]]] = {mode: [] for mode in run.models}
    returns: dict[str, list[dict[str, Any]]] = {mode: [] for mode in run.models}
    losses: dict[str, list[float]] = {mode: [] for mode in run.models}
    first, end = run.step, min(s.steps, run.step + s.chunk)
    for t in range(first, end):
        if t > first and time.perf_counter() - started > seconds:
            break
        window = run.ids[t * s.batch: (t + 1) * s.batch + 1]
        inputs, targets = window[:-1, None], window[1:]
        rare_present = bool(np.any(inputs == run.rare))  # read: the lookup sends its row a gradient
        silence = t - run.last_seen
        np.add.at(run.occurrences, inputs[:, 0], 1)
        for mode, w in run.models.items():
            point, loss, moved = _step_and_measure(run, w, inputs, targets, t)
            point["rare_present"] = rare_present
            points[mode].append(point)
            losses[mode].append(loss)
            if rare_present and t > 0:
                returns[mode].append({"step": t + 1, "silence": silence, "moved": float(moved[run.rare]),
                                      "frequent_moved": float(moved[s.frequent])})
        if rare_present:
            run.last_seen = t + 1
        run.step = t + 1
    return _chunk_report(run, points, returns, losses)


def _chunk_report(run: StepsRun, points: dict[str, list[dict[str, Any]]],
                  returns: dict[str, list[dict[str, Any]]], losses: dict[str, list[float]]) -> dict[str, Any]:
    """What the page gets after a chunk: its points, and the run so far (the rare row's returns
    kept in the run, tied and untied side by side)."""
    if returns["tied"]:
        both = zip(returns["tied"], returns["untied"])  # the same steps: both models read one stream
        run.returns += [{"step": tied["step"], "silence": tied["silence"], "tied": tied["moved"],
                         "untied": untied["moved"]} for tied, untied in both]
    return {"run": run.id, "step": run.step, "steps": run.setup.steps, "done": run.step >= run.setup.steps,
            "points": points, "returns": returns, "losses": losses,
            "updates": {mode: w.updates.tolist() for mode, w in run.models.items()},
            "occurrences": run.occurrences.tolist(),
            "grad_layout": {mode: _layout(w) for mode, w in run.models.items()},
            "longest_return": longest_return(run)}


def _step_and_measure(run: StepsRun, w: Watched, inputs: np.ndarray, targets: np.ndarray,
                      t: int) -> tuple[dict[str, Any], float, np.ndarray]:
    """One optimizer step of one model on the batch: (the frequent and the rare row's norm and
    how far each moved at step t + 1, the batch's loss, how far every row moved)."""
    w.optimizer.zero_grad()
    loss = w.model.loss(inputs, targets)
    loss.backward()
    w.optimizer.step()
    table = w.model.emb.weight.data
    moved = np.linalg.norm(table - w.previous, axis=1)
    w.updates += moved > 0
    point: dict[str, Any] = {"step": t + 1}
    for name, row in (("frequent", run.setup.frequent), ("rare", run.rare)):
        point[name] = {"norm": float(np.linalg.norm(table[row])), "moved": float(moved[row])}
    w.previous[...] = table
    return point, float(loss.item()), moved


def longest_return(run: StepsRun) -> dict[str, Any] | None:
    """The rare token's return after its longest silence so far: how far its row moved in each
    model, which moved further (or "about the same", within SAME_WITHIN), and whether that is
    what the learner predicted. None until the token has come back once."""
    if not run.returns:
        return None
    back = max(run.returns, key=lambda r: r["silence"])  # the first of the longest
    tied, untied = back["tied"], back["untied"]
    if abs(tied - untied) <= SAME_WITHIN * max(tied, untied):
        further = "about the same"
    else:
        further = "tied" if tied > untied else "untied"
    prediction = run.setup.prediction
    return {**back, "further": further, "prediction": prediction,
            "right": None if prediction is None else prediction == further}


def _layout(w: Watched) -> str:
    grad = w.model.emb.weight.grad
    return "none" if grad is None else ("sparse" if isinstance(grad, RowSparse) else "dense")


class RunBook:
    """The step runs in progress (the newest `capacity` kept; each advanced under its own lock)."""

    def __init__(self, capacity: int = 8, pieces: PieceBook | None = None):
        self.capacity = capacity
        self.pieces = pieces  # the learner's pieces (None: minigrad's always)
        self._runs: OrderedDict[str, StepsRun] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, body: Mapping[str, Any]) -> dict[str, Any]:
        setup = read_setup(body)
        chosen = self.pieces.chosen(P.flag(body, "pieces", True)) if self.pieces is not None else MINIGRADS
        run, chosen = run_pieces(chosen, lambda c: new_run(setup, chosen=c))
        with self._lock:
            run.id = f"r{next(self._ids)}"
            self._runs[run.id] = run
            while len(self._runs) > self.capacity:
                self._runs.popitem(last=False)
        words = {"frequent": run.words[setup.frequent], "rare": run.words[run.rare]}
        return {"run": run.id, "steps": setup.steps, "chunk": setup.chunk, "frequent": setup.frequent,
                "prediction": setup.prediction, "chunk_seconds": CHUNK_SECONDS,
                "rare": run.rare, "words": words,
                "vocab_size": setup.vocab_size, "optimizer": setup.optimizer, "lazy": setup.lazy,
                "decay": setup.decay, "lr": setup.lr, "weight_decay": setup.weight_decay,
                "pieces": pieces_said(setup, chosen)}

    def advance(self, body: Mapping[str, Any]) -> dict[str, Any]:
        body = P.as_mapping(body)
        key = body.get("run")
        with self._lock:
            run = self._runs.get(key) if isinstance(key, str) else None
        if run is None:
            raise P.BadRequest(f"run: no step run {P.shown(key)} (start one first; the server keeps the "
                               f"newest {self.capacity})", status=404)
        with run.lock:
            if run.step >= run.setup.steps:
                raise P.BadRequest(f"run: {key} has finished its {run.setup.steps} steps; start a new one",
                                   status=409)
            # the first chunk is shorter: the page's first points come sooner after Run
            try:
                with run.chosen.ops():
                    return advance(run, CHUNK_SECONDS / 2 if run.step == 0 else CHUNK_SECONDS)
            except Exception as err:
                if not run.chosen.yours(*STEPS_PIECES):
                    raise  # minigrad's own: a bug of ours, answered as one
                with self._lock:  # half a step was taken: the run cannot go on
                    self._runs.pop(run.id, None)
                said = (str(err) if isinstance(err, PieceFailed)
                        else f"your pieces raised {type(err).__name__}: {err}")
                raise P.BadRequest(f"{said}; the run stopped at step {run.step + 1}. Start it again with "
                                   "your pieces switched off, or after `minigrad check N` passes",
                                   status=409) from None
