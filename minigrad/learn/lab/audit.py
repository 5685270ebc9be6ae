"""Page 1, the vocabulary bridge audit: predict, then see the ledger, the drawing and the checks.

The model is the tour's (`minigrad.learn.tour`): read one token's row, add a context vector,
score the whole vocabulary, ask for a target token. The learner picks the vocabulary, the token
read, the target, the context and the width, and whether the classifier is tied to the table.
Before a mode's gradients are shown the learner commits predictions for that mode and those
controls (`PredictionBook.commit`); `audit` refuses to reveal without one made for the same
question, and returns the prediction beside what happened. Change a control and the question
changes: the learner predicts again.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from minigrad.engine import Tensor, to_dense
from minigrad.learn import tour
from minigrad.learn.data import default_corpus, tokenize
from minigrad.learn.lab import request_params as P
from minigrad.learn.lab.pieces import MINIGRADS, Chosen, PieceBook, run_pieces, tie_with_yours
from minigrad.tools.gradcheck import gradcheck
from minigrad.tools.ledger import Ledger, ledger
from minigrad.tools.viz import draw, svg

MODES = ("untied", "tied")
VOCABS = ("tour", "corpus")
LAYOUTS = ("separate tensors", "one shared row")
PATHS = ("lookup", "classifier")
MAX_VOCAB, MAX_WIDTH, MAX_CONTEXT = 64, 16, 10.0
NUMBER_WITHIN = 0.1  # a guessed norm counts as right within 10% of minigrad's
FULL_CHECK_ELEMENTS = 512  # above this many table entries the finite differences go along directions
DIRECTIONS = 4  # how many random directions they go along, then
_render_lock = threading.Lock()  # one WebAssembly Graphviz session: renders take turns


@lru_cache(maxsize=1)
def corpus_words() -> tuple[str, ...]:
    """The lessons' corpus's words (letters only, no punctuation), most frequent first."""
    counts = Counter(t for t in tokenize(default_corpus()) if re.fullmatch(r"[a-z]+", t))
    return tuple(w for w, _ in counts.most_common(MAX_VOCAB))


@dataclass(frozen=True)
class AuditSetup:
    """What the learner chose, validated."""

    vocab: tuple[str, ...]
    vocab_kind: str
    token: int  # the row read
    target: int  # the token the loss asks for
    width: int
    context: np.ndarray  # (width,)
    mode: str
    seed: int

    @property
    def tied(self) -> bool:
        return self.mode == "tied"

    def question(self) -> dict[str, Any]:
        """The controls a prediction answers for (all but the mode), as plain data."""
        return {"vocab": self.vocab_kind, "vocab_size": len(self.vocab), "token": self.vocab[self.token],
                "target": self.vocab[self.target], "width": self.width, "context": self.context.tolist(),
                "seed": self.seed}


def read_setup(body: Mapping[str, Any]) -> AuditSetup:
    """Validate the audit's controls (raises BadRequest naming the field)."""
    body = P.as_mapping(body)
    kind = P.choice(body, "vocab", VOCABS, "tour")
    vocab: tuple[str, ...]
    if kind == "tour":
        vocab = tour.VOCAB
    else:
        size = P.integer(body, "vocab_size", 12, 2, MAX_VOCAB)
        vocab = corpus_words()[:size]
    width = P.integer(body, "width", tour.WIDTH, 1, MAX_WIDTH)
    token = _token(body, "token", vocab, tour.VOCAB[tour.CAT], vocab[0])
    target = _token(body, "target", vocab, tour.VOCAB[tour.TARGET], vocab[1])
    context = P.vector(body, "context", width, np.resize(tour.CONTEXT, width), MAX_CONTEXT)
    mode = P.choice(body, "mode", MODES, "untied")
    seed = P.integer(body, "seed", tour.SEED, 0, 2**31 - 1)
    return AuditSetup(tuple(vocab), kind, token, target, width, context, mode, seed)


def vocabulary(body: Mapping[str, Any]) -> dict[str, Any]:
    """The controls' choices before any gradient: the vocabulary, default token, target, context."""
    setup = read_setup(body)
    return {"vocab": list(setup.vocab), "token": setup.vocab[setup.token],
            "target": setup.vocab[setup.target], "width": setup.width, "context": setup.context.tolist()}


def _token(body: Mapping[str, Any], name: str, vocab: tuple[str, ...], default: str, otherwise: str) -> int:
    """The index of body[name]; when it is missing, `default` (the tour's word) if this
    vocabulary has it, else `otherwise`."""
    word = body.get(name, default if default in vocab else otherwise)
    if not isinstance(word, str) or word not in vocab:
        listed = ", ".join(vocab[:12]) + (", ..." if len(vocab) > 12 else "")
        raise P.BadRequest(f"{name}: {P.shown(word)} is not in the vocabulary ({listed})")
    return vocab.index(word)


# ---- predictions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    id: str
    mode: str
    layout: str  # one of LAYOUTS
    larger: str  # one of PATHS: which path sends the larger row gradient
    number: float | None  # the target row's total gradient norm, if the learner guessed one
    committed_at: float  # time.time(), so the page can show it came before the reveal
    question: dict[str, Any]  # the controls it answers for (AuditSetup.question())


class PredictionBook:
    """The predictions committed in this server's lifetime (the newest `capacity` kept)."""

    def __init__(self, capacity: int = 1024):
        self.capacity = capacity
        self._items: OrderedDict[str, Prediction] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def commit(self, body: Mapping[str, Any]) -> Prediction:
        """Record a prediction for body's mode and controls (the controls default as in the audit)."""
        body = P.as_mapping(body)
        mode = P.choice(body, "mode", MODES)
        layout = P.choice(body, "layout", LAYOUTS)
        larger = P.choice(body, "larger", PATHS)
        guess = body.get("number")
        number = None if guess in (None, "") else P.number(body, "number", 0.0, 0.0, 1e6)
        question = read_setup(body).question()
        with self._lock:
            prediction = Prediction(f"p{next(self._ids)}", mode, layout, larger, number, time.time(),
                                    question)
            self._items[prediction.id] = prediction
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return prediction

    def get(self, key: Any, setup: AuditSetup) -> Prediction:
        """The prediction `key`, which must answer for `setup`'s mode and controls."""
        mode = setup.mode
        with self._lock:
            prediction = self._items.get(key) if isinstance(key, str) else None
        if prediction is None:
            raise P.BadRequest(f"prediction: commit a prediction for {mode} mode before the reveal "
                               f"(unknown prediction id {P.shown(key)})", status=409)
        if prediction.mode != mode:
            raise P.BadRequest(f"prediction: {key} was committed for {prediction.mode} mode; commit one "
                               f"for {mode} mode before its reveal", status=409)
        changed = [name for name, value in setup.question().items() if prediction.question.get(name) != value]
        if changed:
            raise P.BadRequest(f"prediction: {key} was committed for other controls ({', '.join(changed)} "
                               "changed since); the question changed, so commit a new prediction", status=409)
        return prediction


# ---- the audit --------------------------------------------------------------------------------

@dataclass
class AuditRun:
    """One backward of the bridge under a ledger: the numbers every view of the page reads."""

    setup: AuditSetup
    model: tour.Bridge
    loss: Tensor
    ledger: Ledger


def run_audit(setup: AuditSetup, chosen: Chosen = MINIGRADS) -> AuditRun:
    """Build the tour's model for `setup` (tied by the learner's tie_weights when chosen), run
    backward inside a gradient ledger (through the learner's ops when chosen: call it inside
    `chosen.ops()`)."""
    weights = tour.seed_weights(setup.seed, len(setup.vocab), setup.width)
    theirs = chosen.get("tie_weights") if setup.tied else None
    model = tour.Bridge(weights, tied=setup.tied and theirs is None)
    if theirs is not None:
        tie_with_yours(model, theirs)
    loss = loss_of(setup, model.emb.weight, model.head.weight)
    loss.name = "loss"
    with ledger(names=model) as led:
        loss.backward()
    return AuditRun(setup, model, loss, led)


def loss_of(setup: AuditSetup, E: Tensor, W: Tensor) -> Tensor:
    """The tour's loss for the learner's token, target and context."""
    return tour.bridge_loss(E, W, np.array([[setup.token]]), position=0, target=setup.target,
                            context=setup.context)


def path_of(run: AuditRun, name: str) -> str:
    """The ledger's path name that starts with the role `name` ('lookup' or 'classifier')."""
    paths = [p for param in run.ledger.params for p in run.ledger.record(param).paths()]
    return next(p for p in paths if p.startswith(name))


def row_norms(run: AuditRun) -> dict[str, float]:
    """The three numbers the predictions are about.

    lookup:     norm of the lookup path's gradient of the row read (in emb.weight)
    classifier: norm of the classifier path's gradient of the target's row (in head.weight)
    target_total: norm of the target row's total gradient in head.weight (= emb.weight if tied)
    """
    s, m = run.setup, run.model
    lookup = run.ledger.table(m.emb.weight, rows=[s.token]).norm(s.token, path_of(run, "lookup"))
    head = run.ledger.table(m.head.weight, rows=[s.target])
    return {"lookup": lookup, "classifier": head.norm(s.target, path_of(run, "classifier")),
            "target_total": head.norm(s.target, "total")}


def finite_difference_checks(run: AuditRun) -> list[dict[str, Any]]:
    """Central differences (float64) for every gradient the page shows: each path's gradient
    (the loss differentiated in the lookup's copy of the table and in the classifier's copy), and,
    when tied, the shared table's total."""
    s, m = run.setup, run.model
    grads = run.ledger.path_grads(m.emb.weight) | run.ledger.path_grads(m.head.weight)
    lookup, classifier = path_of(run, "lookup"), path_of(run, "classifier")
    directions = DIRECTIONS if m.emb.weight.size > FULL_CHECK_ELEMENTS else None
    names = (f"{lookup} into emb.weight", f"{classifier} into head.weight")
    # the two reads of the table as two inputs: their gradients are the two paths' gradients
    inputs = [_leaf(m.emb.weight, names[0]), _leaf(m.head.weight, names[1])]
    report = gradcheck(lambda e, w: loss_of(s, e, w), inputs, directions=directions, raise_exception=False)
    loss_of(s, *inputs).backward()  # gradcheck differentiates copies: these are the ones we compare
    out = [_verdict(check, report.mode, leaf.grad, grads[path])
           for check, leaf, path in zip(report.inputs, inputs, (lookup, classifier))]
    if s.tied:
        table = _leaf(m.emb.weight, "total into emb.weight = head.weight")
        # every element was just checked path by path; for their sum random directions suffice
        total = gradcheck(lambda e: loss_of(s, e, e), [table], directions=DIRECTIONS, raise_exception=False)
        loss_of(s, table, table).backward()
        out.append(_verdict(total.inputs[0], total.mode, table.grad, m.emb.weight.grad))
    return out


def _leaf(param: Tensor, name: str) -> Tensor:
    return Tensor(param.data.copy(), requires_grad=True, name=name)


def _verdict(check: Any, mode: str, checked_grad: Any, shown_grad: Any) -> dict[str, Any]:
    """gradcheck's verdict, and whether the gradient it confirmed is the one the ledger shows."""
    same = bool(np.allclose(to_dense(checked_grad), to_dense(shown_grad), rtol=1e-12, atol=1e-15))
    return {"name": check.name, "ok": bool(check.ok and same), "mode": mode,
            "max_abs_error": check.max_abs_error, "matches_ledger": same,
            "numerical": check.numerical, "analytical": check.analytical}


def ledger_tables(run: AuditRun) -> list[dict[str, Any]]:
    """Each parameter's ledger table (per row: each path's norm or None when not stored; total)."""
    out = []
    for param in run.model.parameters():
        t = run.ledger.table(param, labels=run.setup.vocab)
        rows = [{"row": r, "label": label, "total": float(total),
                 "paths": [float(v) if held else None for v, held in zip(norms, stored)]}
                for r, label, norms, stored, total in zip(t.rows, t.row_labels, t.norms, t.stored, t.totals)]
        out.append({"label": t.label, "paths": t.paths, "layouts": t.layouts, "rows": rows,
                    "note": t.note, "text": str(t)})
    return out


def drawing(run: AuditRun) -> str:
    """The backward graph as SVG text, edges labelled with table norms and the target row's."""
    s = run.setup
    graph = draw(run.loss, params=run.model, ledger=run.ledger, row=s.target,
                 row_label=s.vocab[s.target])
    with _render_lock:
        return svg(graph)


def what_happened(run: AuditRun) -> dict[str, Any]:
    norms = row_norms(run)
    return {"layout": LAYOUTS[1] if run.setup.tied else LAYOUTS[0],
            "larger": "lookup" if norms["lookup"] > norms["classifier"] else "classifier",
            "number": norms["target_total"], "norms": norms}


def compare(prediction: Prediction, actual: dict[str, Any]) -> dict[str, Any]:
    """Each prediction beside what happened; a number counts as right within NUMBER_WITHIN."""
    number_right = None
    if prediction.number is not None:
        number_right = bool(abs(prediction.number - actual["number"]) <= NUMBER_WITHIN * actual["number"])
    return {"layout": prediction.layout == actual["layout"], "larger": prediction.larger == actual["larger"],
            "number": number_right}


AUDIT_PIECES = ("Embedding", "CrossEntropy", "tie_weights")


def audit(body: Mapping[str, Any], book: PredictionBook, pieces: PieceBook | None = None) -> dict[str, Any]:
    """The reveal for the controls in `body`; needs `prediction`, the id of a committed prediction
    for the same mode. Every number is computed now, by minigrad, on the learner's pieces that
    pass their checks when `pieces` is on (`pieces` in the body, default on; see lab.pieces)."""
    setup = read_setup(body)
    on = P.flag(body, "pieces", True)
    prediction = book.get(body.get("prediction"), setup)
    chosen = pieces.chosen(on) if pieces is not None else MINIGRADS
    computed, chosen = run_pieces(chosen, lambda c: _reveal(setup, c))
    not_used = {} if setup.tied else {"tie_weights": "the model is untied: there is no tie to make"}
    return {
        "setup": vocabulary(body) | {"mode": setup.mode},
        "prediction": asdict(prediction),
        "right": compare(prediction, computed["actual"]),
        "number_within": NUMBER_WITHIN,
        **computed,
        "pieces": chosen.said(AUDIT_PIECES, not_used),
        "revealed_at": time.time(),
    }


def _reveal(setup: AuditSetup, chosen: Chosen) -> dict[str, Any]:
    """Every number of the reveal, computed on `chosen`'s pieces."""
    with chosen.ops():
        run = run_audit(setup, chosen)
        return {"loss": float(run.loss.item()), "actual": what_happened(run), "tables": ledger_tables(run),
                "checks": finite_difference_checks(run), "svg": drawing(run)}
