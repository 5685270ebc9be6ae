"""Page 3, check an answer: the learner types the gradient of one row (or pastes the whole table)
for the audit's model and gets the verdict and diagnosis `minigrad check` would give.

The reference is minigrad's backward confirmed by central differences, and the diagnosis is the
lesson checks' own (`minigrad.learn.course.checks._common`): the whole answer flipped or scaled, a listed
typical mistake, or row by row which path is missing, which sign or which factor is wrong.

The page shows the numbers to DECIMALS places, so an answer worked out from them carries their
rounding: `display_tolerance` bounds that rounding's effect on the asked gradient, and an answer
within it counts as the reference (or as the typical mistake it is that close to).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from minigrad.engine import Tensor, no_grad, to_dense
from minigrad.learn import tour
from minigrad.learn.course.checks import _common as common
from minigrad.learn.lab import audit
from minigrad.learn.lab import request_params as P
from minigrad.nn import functional as F

TABLES = ("emb.weight", "head.weight")
WHOLE_TABLE = "(whole table)"
DECIMALS = 4  # the page shows E, W, h and p rounded to this many places


def read_question(body: Mapping[str, Any]) -> tuple[audit.AuditSetup, str, int | None]:
    """The audit's controls, plus which table and which row (None: the whole table)."""
    setup = audit.read_setup(body)
    table = P.choice(body, "table", TABLES, "emb.weight")
    if setup.tied and table != "emb.weight":
        raise P.BadRequest("table: tied, emb.weight and head.weight are one table; ask for emb.weight")
    row_word = body.get("row", setup.vocab[setup.target])
    if row_word == WHOLE_TABLE:
        return setup, table, None
    if row_word not in setup.vocab:
        raise P.BadRequest(f"row: {P.shown(row_word)} is neither a token of the vocabulary nor "
                           f"{WHOLE_TABLE!r}")
    return setup, table, setup.vocab.index(row_word)


def _what(setup: audit.AuditSetup, table: str, row: int | None) -> str:
    """'dL/dE[cat] (tied: emb.weight = head.weight, row 1)', 'dL/dW (head.weight, the whole table)'."""
    letter = "E" if setup.tied or table == "emb.weight" else "W"
    where = "tied: emb.weight = head.weight" if setup.tied else table
    if row is None:
        return f"dL/d{letter} ({where}, the whole table)"
    return f"dL/d{letter}[{setup.vocab[row]}] ({where}, row {row})"


def display_tolerance(setup: audit.AuditSetup, table: str, row: int | None, n: dict[str, Any]) -> float:
    """How far an answer computed from the page's rounded numbers can be from the exact gradient.

    Each shown number is off by at most d = 0.5e-DECIMALS. To first order, with r = p - y:
      p recomputed from the shown h and W: |dz_v| <= d (|W_v|_1 + |h|_1), |dp_v| <= 2 p_v max|dz|
      lookup row  W^T r:       sum_v |W_vj| dp_v + |r_v| d
      classifier row (r_v) h:  dp_v |h_j| + |r_v| d
    The bound for the asked row (or table), times 2 for the second-order terms, at least d, rounded
    up to one significant digit."""
    d = 0.5 * 10.0**-DECIMALS
    h, p, y = n["h"], n["p"], n["y"]
    W = n["E"] if setup.tied else n["W"]
    r = np.abs(p - y)
    dz = d * (np.abs(W).sum(axis=1) + np.abs(h).sum())
    dp = np.maximum(d, 2 * p * dz.max())
    lookup = np.zeros_like(n["E"])
    lookup[setup.token] = np.abs(W).T @ dp + r.sum() * d
    classifier = np.outer(dp, np.abs(h)) + (r * d)[:, None]
    bound = lookup + classifier if setup.tied else (lookup if table == "emb.weight" else classifier)
    worst = max(d, 2 * float(bound.max() if row is None else bound[row].max()))
    digit = 10.0 ** np.floor(np.log10(worst))
    return float(f"{np.ceil(worst / digit) * digit:.1g}")


def forward_numbers(setup: audit.AuditSetup) -> dict[str, Any]:
    """What the learner may use: the tables, h = E[token] + context, p = softmax(h W^T), y."""
    run = audit.run_audit(setup)
    E, W = run.model.emb.weight.data, run.model.head.weight.data
    with no_grad():
        h = E[setup.token] + setup.context
        p = F.softmax(Tensor(h[None] @ W.T), axis=-1).data[0]
    y = np.eye(len(setup.vocab))[setup.target]
    return {"E": E, "W": W, "h": h, "p": p, "y": y, "loss": float(run.loss.item()), "run": run}


def question(body: Mapping[str, Any]) -> dict[str, Any]:
    setup, table, row = read_question(body)
    n = forward_numbers(setup)
    shape = [setup.width] if row is not None else [len(setup.vocab), setup.width]
    return {"what": _what(setup, table, row), "shape": shape, "vocab": list(setup.vocab),
            "decimals": DECIMALS, "tolerance": display_tolerance(setup, table, row, n),
            "token": setup.vocab[setup.token], "target": setup.vocab[setup.target], "mode": setup.mode,
            "E": n["E"].tolist(), "W": n["W"].tolist(), "h": n["h"].tolist(), "p": n["p"].tolist(),
            "y": n["y"].tolist(),
            "loss": n["loss"], "context": setup.context.tolist()}


def expected_and_parts(setup: audit.AuditSetup, table: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The reference gradient of `table` (minigrad, confirmed by finite differences) and what each
    path sent into it (from the gradient ledger), both (V, d)."""
    weights = tour.seed_weights(setup.seed, len(setup.vocab), setup.width)
    E, W = weights.E, np.ascontiguousarray(weights.W_U.T)

    def loss(*tables: Any) -> Any:
        return audit.loss_of(setup, *tables)

    if setup.tied:
        expected = common.reference_gradient(lambda e: loss(e, e), [E])
    elif table == "emb.weight":
        expected = common.reference_gradient(lambda e, w: loss(e, w), [E, W], wrt=0)
    else:
        expected = common.reference_gradient(lambda e, w: loss(e, w), [E, W], wrt=1)
    run = audit.run_audit(setup)
    param = run.model.emb.weight if table == "emb.weight" else run.model.head.weight
    parts = {path.split(" ")[0]: to_dense(g) for path, g in run.ledger.path_grads(param).items()}
    return expected, parts


def typical_mistakes(setup: audit.AuditSetup, table: str, parts: dict[str, np.ndarray],
                     n: dict[str, Any]) -> list[tuple[np.ndarray, str]]:
    """(the table a typical mistake gives, its diagnosis), for the whole (V, d) table."""
    h, p, y, W = n["h"], n["p"], n["y"], n["W"]
    target, token = setup.vocab[setup.target], setup.vocab[setup.token]
    no_y = {"classifier": np.outer(p, h), "lookup": np.zeros_like(n["E"])}
    no_y["lookup"][setup.token] = p @ W
    mistakes: list[tuple[np.ndarray | None, str]] = []
    if setup.tied:
        lookup, classifier = parts["lookup"], parts["classifier"]  # a tied row gets both paths
        mistakes += [
            (classifier, f"you have only the classifier path: the row of {token!r} is also read by the "
                         "lookup, which adds W^T (p - y) to it"),
            (lookup, "you have only the lookup path: in a tied table every row is also a classifier row, "
                     "which gets (p_v - y_v) h"),
            (lookup - classifier, "the classifier part has the wrong sign: it is (p - y) h, not (y - p) h"),
            (no_y["classifier"] + lookup, f"the classifier part is p_v h: you forgot the target's -1 "
                                          f"(the y in p - y); {target!r} is the target"),
            (classifier + no_y["lookup"], "the lookup part is W^T p: you forgot the target's -1 (p - y)"),
        ]
    elif table == "head.weight":
        mistakes += [
            (no_y["classifier"], f"you forgot the target's -1: the gradient is (p_v - y_v) h and "
                                 f"{target!r} is the target"),
            (np.outer(p - y, n["E"][setup.token]), "you used the row read, E[token], where the classifier "
                                                    "sees h = E[token] + context"),
        ]
    else:
        mistakes += [
            (no_y["lookup"], "you forgot the target's -1: the row read gets W^T (p - y)"),
        ]
    return [(m, d) for m, d in mistakes if m is not None]


def check(body: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict on body['answer'] (numbers as text or a list): pass, or the diagnosis."""
    setup, table, row = read_question(body)
    if "answer" not in body:
        raise P.BadRequest("answer: type the gradient (numbers separated by commas or spaces)")
    got = P.parse_array(body["answer"], "answer")
    expected, parts = expected_and_parts(setup, table)
    n = forward_numbers(setup)
    mistakes = typical_mistakes(setup, table, parts, n)
    what = _what(setup, table, row)
    if row is None:  # the whole table: the checks' row-by-row report, each row's paths named
        labels = list(setup.vocab)
        path_parts = {r: [(f"the {k} path", v[r]) for k, v in parts.items()] for r in range(len(labels))}
        options: dict[str, Any] = dict(by_rows=True, parts=path_parts, kind="path", labels=labels)
    else:
        got = got.reshape(-1) if got.ndim == 2 and 1 in got.shape else got
        expected = expected[row]
        mistakes = [(m[row], diagnosis) for m, diagnosis in mistakes]
        if len(parts) == 2:  # a tied row read and scored: leaving out either path is the classic slip
            (a, a_grad), (b, b_grad) = parts.items()
            mistakes = [(a_grad[row], f"you have only the {a} path; the {b} path also sends to this row"),
                        (b_grad[row], f"you have only the {b} path; the {a} path also sends to this row"),
                        *mistakes]
        options = dict(by_rows=False)
    if got.shape != expected.shape:
        raise P.BadRequest(f"answer: {what} has shape {expected.shape}: type {expected.size} numbers, "
                           f"got {got.size} (shape {got.shape})", status=422)
    tolerance = display_tolerance(setup, table, row, n)
    got = as_explained(got, expected, mistakes, row_parts(parts, row), tolerance)
    try:
        common.assert_matches(got, expected, what, mistakes, **options)
    except AssertionError as verdict:
        return {"verdict": "fail", "diagnosis": str(verdict), "what": what, "tolerance": tolerance}
    return {"verdict": "pass", "diagnosis": f"{what}: right, within {tolerance:g} of minigrad's backward "
                                            "(which matches central differences)",
            "what": what, "tolerance": tolerance}


SCALES = (-1.0, 2.0, 3.0, 4.0, 0.5, 1 / 3, 0.25)  # the factors the checks' diagnosis names


def as_explained(got: np.ndarray, expected: np.ndarray, mistakes: list[tuple[np.ndarray, str]],
                 parts: list[np.ndarray], tolerance: float) -> np.ndarray:
    """`got` with each part replaced by the exact answer it is within `tolerance` of: the reference,
    a typical mistake, the reference scaled, or (row by row) one path alone or a path missing.
    The checks' diagnosis, which compares to 1e-5, then names what the learner meant."""
    whole = [expected, *(m for m, _ in mistakes), *(k * expected for k in SCALES)]
    snapped = _nearest(got, whole, tolerance)
    if snapped is not got or got.ndim < 2:
        return snapped
    return np.stack([_nearest(got[r], _row_candidates(r, expected, mistakes, parts), tolerance)
                     for r in range(got.shape[0])])


def _nearest(value: np.ndarray, candidates: list[np.ndarray], tolerance: float) -> np.ndarray:
    """The first candidate within `tolerance` of `value` everywhere (as float64), else `value`."""
    for candidate in candidates:
        if np.shape(candidate) == value.shape and np.max(np.abs(value - candidate)) <= tolerance:
            return np.array(candidate, dtype=np.float64)
    return value


def _row_candidates(r: int, expected: np.ndarray, mistakes: list[tuple[np.ndarray, str]],
                    parts: list[np.ndarray]) -> list[np.ndarray]:
    """What row r of an answer may have meant: the reference, a typical mistake's row, one path
    alone, the reference with one path missing, the reference scaled."""
    alone = [part[r] for part in parts]
    missing = [expected[r] - part[r] for part in parts]
    return [expected[r], *(m[r] for m, _ in mistakes), *alone, *missing, *(k * expected[r] for k in SCALES)]


def row_parts(parts: dict[str, np.ndarray], row: int | None) -> list[np.ndarray]:
    """Each path's contribution to the asked row (or to the whole table)."""
    return [part if row is None else part[row] for part in parts.values()]
