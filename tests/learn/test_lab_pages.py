"""The functions behind the lab's pages: their numbers equal the ledger's, the tour's and an
independent numpy reference; every bad parameter is refused with a message naming it."""

import numpy as np
import pytest
from seed_bridge import CAT, SEED_PRINTED, starting_weights, tied_paths, untied_paths

from minigrad.learn import tour
from minigrad.learn.lab import answer, audit, steps
from minigrad.learn.lab import request_params as P


def numpy_paths(E, W, read, target, context, tied):
    """Independent numpy: (lookup gradient on E, classifier gradient on W (V, d)), for
    h = E[read] + context, logits = h W^T (W = E when tied), loss = -log softmax[target]."""
    W = E if tied else W
    h = E[read] + context
    z = W @ h
    p = np.exp(z - z.max())
    p /= p.sum()
    p[target] -= 1.0
    lookup = np.zeros_like(E)
    lookup[read] = W.T @ p
    return lookup, np.outer(p, h)


def reveal(book, **controls):
    mode = controls.get("mode", "untied")
    prediction = book.commit({**controls, "mode": mode, "layout": "one shared row", "larger": "lookup",
                              "number": "0.5"})
    return audit.audit({**controls, "prediction": prediction.id}, book)


@pytest.fixture
def book():
    return audit.PredictionBook()


def test_the_default_audit_gives_the_tours_seed_numbers(book):
    untied, tied = reveal(book, mode="untied"), reveal(book, mode="tied")
    table, unembed = starting_weights()
    lookup, classifier = untied_paths(table, unembed)
    tied_lookup, tied_classifier = tied_paths(table)
    assert untied["actual"]["norms"]["lookup"] == pytest.approx(np.linalg.norm(lookup[CAT]), abs=1e-12)
    classifier_norm = np.linalg.norm(classifier[CAT])
    assert untied["actual"]["norms"]["classifier"] == pytest.approx(classifier_norm, abs=1e-12)
    shared = np.linalg.norm(tied_lookup[CAT] + tied_classifier[CAT])
    assert tied["actual"]["number"] == pytest.approx(shared, abs=1e-12)
    assert round(untied["actual"]["norms"]["lookup"], 4) == SEED_PRINTED["untied lookup"]
    assert round(untied["actual"]["norms"]["classifier"], 4) == SEED_PRINTED["untied classifier"]
    assert round(tied["actual"]["number"], 4) == SEED_PRINTED["tied shared row"]
    assert untied["actual"]["layout"] == "separate tensors" and tied["actual"]["layout"] == "one shared row"


def test_the_audit_tables_are_the_ledgers_and_the_tours(book):
    result = reveal(book, mode="tied")
    model = tour.Bridge(tour.seed_weights(), tied=True)
    loss = model()
    with tour.ledger(names=model) as led:
        loss.backward()
    table = led.table(model.emb.weight, labels=tour.VOCAB)
    shown = result["tables"][0]
    assert shown["label"] == table.label and shown["paths"] == table.paths and shown["note"] == table.note
    for r, row in enumerate(shown["rows"]):
        assert row["total"] == table.totals[r]
        stored = zip(table.norms[r], table.stored[r])
        assert row["paths"] == [float(v) if held else None for v, held in stored]
    assert result["loss"] == loss.item()


@pytest.mark.parametrize("mode", audit.MODES)
def test_other_controls_match_independent_numpy(book, mode):
    controls = dict(mode=mode, vocab="corpus", vocab_size=9, width=5, token="of", target="is",
                    context="0.3, -1, 0.25, 2, 0", seed=3)
    result = reveal(book, **controls)
    vocab = result["setup"]["vocab"]
    read, target = vocab.index("of"), vocab.index("is")
    w = tour.seed_weights(3, 9, 5)
    context = np.array([0.3, -1, 0.25, 2, 0])
    lookup, classifier = numpy_paths(w.E, w.W_U.T, read, target, context, mode == "tied")
    norms = result["actual"]["norms"]
    assert norms["lookup"] == pytest.approx(np.linalg.norm(lookup[read]), rel=1e-12)
    assert norms["classifier"] == pytest.approx(np.linalg.norm(classifier[target]), rel=1e-12)
    total = classifier[target] + (lookup[target] if mode == "tied" else 0)
    assert norms["target_total"] == pytest.approx(np.linalg.norm(total), rel=1e-12)
    assert all(c["ok"] and c["matches_ledger"] for c in result["checks"])
    assert len(result["checks"]) == (3 if mode == "tied" else 2)
    assert result["svg"].lstrip().startswith("<?xml") and "<svg" in result["svg"]
    assert f"row {vocab[target]}: ‖G‖ {np.linalg.norm(classifier[target]):#.4g}" in result["svg"]


def test_the_prediction_is_shown_beside_the_result_and_scored(book):
    prediction = book.commit({"mode": "tied", "layout": "one shared row", "larger": "classifier",
                              "number": 0.58})
    result = audit.audit({"mode": "tied", "prediction": prediction.id}, book)
    assert result["prediction"]["id"] == prediction.id
    assert result["prediction"]["committed_at"] <= result["revealed_at"]
    assert result["right"] == {"layout": True, "larger": True, "number": True}
    wrong = book.commit({"mode": "tied", "layout": "separate tensors", "larger": "lookup", "number": 5})
    assert audit.audit({"mode": "tied", "prediction": wrong.id}, book)["right"] == {
        "layout": False, "larger": False, "number": False}


def test_no_reveal_without_a_prediction_for_that_mode(book):
    with pytest.raises(P.BadRequest, match="commit a prediction for tied mode") as err:
        audit.audit({"mode": "tied"}, book)
    assert err.value.status == 409
    untied = book.commit({"mode": "untied", "layout": "separate tensors", "larger": "lookup"})
    with pytest.raises(P.BadRequest, match=f"{untied.id} was committed for untied mode"):
        audit.audit({"mode": "tied", "prediction": untied.id}, book)


def test_the_prediction_book_is_bounded():
    book = audit.PredictionBook(capacity=2)
    first = book.commit({"mode": "tied", "layout": "one shared row", "larger": "lookup"})
    for _ in range(2):
        book.commit({"mode": "tied", "layout": "one shared row", "larger": "lookup"})
    with pytest.raises(P.BadRequest, match="unknown prediction id"):
        book.get(first.id, audit.read_setup({"mode": "tied"}))


@pytest.mark.parametrize("controls, message", [
    ({"token": "dog"}, "token: 'dog' is not in the vocabulary"),
    ({"target": 3}, "target: 3 is not in the vocabulary"),
    ({"width": 17}, "width: 17 is out of range; expected 1 to 16"),
    ({"width": "four"}, "width: expected a whole number from 1 to 16"),
    ({"width": 2.5}, "width: expected a whole number"),
    ({"vocab": "corpus", "vocab_size": 65}, "vocab_size: 65 is out of range"),
    ({"vocab": "web"}, "vocab: expected one of tour, corpus"),
    ({"mode": "both"}, "mode: expected one of untied, tied"),
    ({"context": "1, 2, 3"}, "context: expected 4 numbers, got 3"),
    ({"context": "1, 2, x, 4"}, "context: could not read the numbers"),
    ({"context": "1, 2, nan, 4"}, "context: NaN and infinity are not allowed"),
    ({"context": "100, 0, 0, 0"}, "context: every number must be between -10 and 10"),
    ({"context": {"__class__": 1}}, "context: expected a list of numbers, got dict"),
])
def test_bad_controls_are_refused_with_a_message(controls, message):
    with pytest.raises(P.BadRequest, match=message.replace("(", r"\(")):
        audit.read_setup(controls)


def test_bad_predictions_are_refused(book):
    with pytest.raises(P.BadRequest, match="layout: expected one of separate tensors, one shared row"):
        book.commit({"mode": "tied", "layout": "both", "larger": "lookup"})
    with pytest.raises(P.BadRequest, match="number: expected a number"):
        book.commit({"mode": "tied", "layout": "one shared row", "larger": "lookup", "number": "lots"})


# ---- page 2 -----------------------------------------------------------------------------------

def run_all(body):
    book = steps.RunBook()
    started = book.start(body)
    chunks = []
    while not chunks or not chunks[-1]["done"]:
        chunks.append(book.advance({"run": started["run"]}))
    return started, chunks


def test_steps_count_occurrences_and_updates_of_the_stream():
    body = dict(optimizer="sgd", lr=0.5, weight_decay=0, lazy=True, decay="touched", steps=12, chunk=5,
                vocab_size=30, batch=4, rare=29)
    started, chunks = run_all(body)
    ids, _ = steps.token_stream(steps.read_setup(body))
    assert [c["step"] for c in chunks] == [5, 10, 12]
    assert chunks[-1]["occurrences"] == np.bincount(ids[: 12 * 4], minlength=30).tolist()  # the ids read
    points = [p for c in chunks for p in c["points"]["untied"]]
    assert [p["step"] for p in points] == list(range(1, 13))
    # untied, lazy SGD: a row moves exactly on the steps its token is read
    steps_read = sum(np.bincount(np.unique(ids[t * 4:(t + 1) * 4]), minlength=30) for t in range(12))
    assert chunks[-1]["updates"]["untied"] == steps_read.tolist()
    assert [p["rare_present"] for p in points] == [29 in ids[t * 4:(t + 1) * 4] for t in range(12)]
    # tied: the classifier is dense, so every row moves on every step
    assert chunks[-1]["updates"]["tied"] == [12] * 30


def test_adamw_dense_decay_shrinks_a_silent_untied_row_by_the_decay_factor():
    """A row whose token never occurs gets no gradient untied: only (1 - lr*wd) per step moves it."""
    body = dict(optimizer="adamw", lr=0.01, weight_decay=0.5, steps=20, chunk=20, vocab_size=2000,
                zipf=2.0, batch=2, rare=1999)
    started, chunks = run_all(body)
    assert chunks[-1]["occurrences"][1999] == 0
    norms = [p["rare"]["norm"] for p in chunks[0]["points"]["untied"]]
    ratios = np.array(norms[1:]) / np.array(norms[:-1])
    np.testing.assert_allclose(ratios, 1 - 0.01 * 0.5, rtol=1e-12)
    touched, _ = run_all({**body, "lazy": True, "decay": "touched"})
    assert touched["rare"] == 1999


def test_the_rare_row_returns_are_recorded_with_their_silence():
    started, chunks = run_all(dict(optimizer="adam", steps=60, chunk=30, vocab_size=50, batch=4))
    returns = [r for c in chunks for r in c["returns"]["untied"]]
    points = {p["step"]: p for c in chunks for p in c["points"]["untied"]}
    assert returns, "the picked rare row should come back at least once in 60 steps"
    present = [s for s, p in points.items() if p["rare_present"]]
    for r in returns:
        assert r["step"] in present
        earlier = [s for s in present if s < r["step"]]
        assert r["silence"] == r["step"] - 1 - (earlier[-1] if earlier else 0)
        assert r["moved"] == points[r["step"]]["rare"]["moved"]


@pytest.mark.parametrize("body, message", [
    ({"optimizer": "adam", "decay": "catch_up"}, "optimizer: Adam: decay='catch_up' needs decoupled"),
    ({"optimizer": "lbfgs"}, "optimizer: expected one of sgd, adam, adamw"),
    ({"steps": 5001}, "steps: 5001 is out of range"),
    ({"vocab_size": 3}, "vocab_size: 3 is out of range"),
    ({"width": 65}, "width: 65 is out of range"),
    ({"lr": "-1"}, "lr: -1 is out of range"),
    ({"lazy": "yes"}, "lazy: expected true or false"),
    ({"rare": 200}, "rare: 200 is out of range"),
])
def test_bad_step_settings_are_refused(body, message):
    with pytest.raises(P.BadRequest, match=message):
        steps.RunBook().start(body)


def test_a_finished_or_unknown_run_cannot_be_advanced():
    book = steps.RunBook()
    run = book.start({"steps": 2, "chunk": 2})["run"]
    book.advance({"run": run})
    with pytest.raises(P.BadRequest, match="has finished its 2 steps"):
        book.advance({"run": run})
    with pytest.raises(P.BadRequest, match="no step run 'r999'"):
        book.advance({"run": "r999"})


# ---- page 3 -----------------------------------------------------------------------------------

def seed_answer(mode, table):
    E, W_U = starting_weights()
    lookup, classifier = untied_paths(E, W_U) if mode == "untied" else tied_paths(E)
    if mode == "tied":
        return lookup + classifier, lookup, classifier
    return (lookup if table == "emb.weight" else classifier), lookup, classifier


def text(array):
    return "\n".join(", ".join(repr(float(x)) for x in row) for row in np.atleast_2d(array))


@pytest.mark.parametrize("mode, table", [("untied", "emb.weight"), ("untied", "head.weight"),
                                         ("tied", "emb.weight")])
def test_the_right_answer_passes_for_a_row_and_for_the_table(mode, table):
    full, _, _ = seed_answer(mode, table)
    row = answer.check({"mode": mode, "table": table, "row": "cat", "answer": text(full[CAT])})
    assert row["verdict"] == "pass", row["diagnosis"]
    whole = answer.check({"mode": mode, "table": table, "row": answer.WHOLE_TABLE, "answer": text(full)})
    assert whole["verdict"] == "pass", whole["diagnosis"]


def test_wrong_answers_get_the_checks_diagnosis():
    full, lookup, classifier = seed_answer("tied", "emb.weight")

    def verdict(got, row="cat"):
        result = answer.check({"mode": "tied", "row": row, "answer": text(got)})
        assert result["verdict"] == "fail"
        return result["diagnosis"]

    assert "sign is flipped everywhere" in verdict(-full[CAT])
    assert "2 times too large" in verdict(2 * full[CAT])
    assert "you have only the lookup path" in verdict(lookup[CAT])
    assert "you have only the classifier path" in verdict(classifier[CAT])
    wrong = full.copy()
    wrong[3] *= -1
    assert "row 3 (on) has the wrong sign" in verdict(wrong, answer.WHOLE_TABLE)
    wrong = full.copy()
    wrong[1] -= classifier[1]
    wrong[4] *= 3
    report = verdict(wrong, answer.WHOLE_TABLE)
    assert "row 1 (cat) is missing the gradient from the classifier path" in report
    assert "row 4 (mat) is 3 times too large" in report


def test_the_question_shows_the_forward_numbers():
    q = answer.question({"mode": "untied", "table": "head.weight", "row": "sat"})
    E, W_U = starting_weights()
    np.testing.assert_allclose(q["E"], E, rtol=0, atol=0)
    np.testing.assert_allclose(q["W"], W_U.T, rtol=0, atol=0)
    h = E[CAT] + tour.CONTEXT
    z = W_U.T @ h
    np.testing.assert_allclose(q["p"], np.exp(z) / np.exp(z).sum(), rtol=1e-12)
    assert q["what"] == "dL/dW[sat] (head.weight, row 2)" and q["shape"] == [4]


@pytest.mark.parametrize("body, message", [
    ({"answer": "1, 2, 3"}, "has shape (4,): type 4 numbers, got 3"),
    ({"answer": "1, 2, 3, four"}, "answer: could not read the numbers"),
    ({}, "answer: type the gradient"),
    ({"answer": "1,2,3,4", "row": "dog"}, "row: 'dog' is neither a token"),
    ({"answer": "1,2,3,4", "mode": "tied", "table": "head.weight"},
     "tied, emb.weight and head.weight are one"),
    ({"answer": "1," * 5000}, "answer: at most 4096 numbers in at most 2 dimensions, got shape (5000,)"),
    ({"answer": "1" * 100_000}, "answer: the text is too long"),
])
def test_bad_answers_are_refused(body, message):
    with pytest.raises(P.BadRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        answer.check(body)


def test_the_picked_rare_row_comes_back_a_few_times():
    setup = steps.read_setup({"steps": 150})
    ids, _ = steps.token_stream(setup)
    run = steps.new_run(setup)
    read = np.bincount(ids[:-1], minlength=setup.vocab_size)
    assert run.rare != setup.frequent and 3 <= read[run.rare] <= read[setup.frequent] / 5
    others = [r for r in range(setup.vocab_size) if r != setup.frequent and read[r] > 0]
    assert abs(read[run.rare] - 10) == min(abs(read[r] - 10) for r in others)  # 150 steps / 15


# ---- the hooks the lab added to the drawing and the tour ---------------------------------------

def test_draw_labels_the_selected_rows_norm_beside_the_table_norm():
    from seed_bridge import bridge

    from minigrad.tools.viz import draw

    table, unembed = starting_weights()
    lookup, classifier = untied_paths(table, unembed)
    model = bridge(tied=False)
    loss = tour.bridge_loss(model.emb.weight, model.head.weight)
    with tour.ledger(names=model) as led:
        loss.backward()
    source = draw(loss, params=model, ledger=led, row=CAT, row_label="cat").source
    whole, row = np.linalg.norm(classifier), np.linalg.norm(classifier[CAT])
    assert f"‖G‖ whole table {whole:#.4g}\\nrow cat: ‖G‖ {row:#.4g}" in source
    assert f"row cat: ‖G‖ {np.linalg.norm(lookup[CAT]):#.4g}" in source
    other = draw(loss, params=model, ledger=led, row=3).source
    assert "row 3: not stored" in other  # the lookup's sparse gradient holds only the row read
    assert "row " not in draw(loss, params=model, ledger=led).source  # no row labels without row
    with pytest.raises(ValueError, match=r"draw: row must be a row index \(an int >= 0\) or None, got -1"):
        draw(loss, params=model, ledger=led, row=-1)


def test_the_tour_defaults_are_unchanged_by_the_lab_keywords():
    weights = tour.seed_weights()
    table, unembed = starting_weights()
    np.testing.assert_array_equal(weights.E, table)
    np.testing.assert_array_equal(tour.seed_weights(7, 6, 4).W_U, unembed)
    model = tour.Bridge(weights, tied=False)
    keyword = tour.bridge_loss(model.emb.weight, model.head.weight, np.array([[CAT]]), position=0,
                               target=CAT, context=tour.CONTEXT)
    assert keyword.item() == model().item()


# ---- issue 23: what the learner sees is what is checked ----------------------------------------

def shown(values, decimals=answer.DECIMALS):
    """A number as the page shows it (rounded to `decimals` places), read back."""
    return np.round(np.array(values, dtype=np.float64), decimals)


def from_the_page(q, table, row, recompute):
    """The gradient a learner works out from the page's rounded numbers: p read off the page, or
    recomputed from the shown E, context and W (h = E[token] + context, p = softmax(h W^T))."""
    E, W, y = shown(q["E"]), shown(q["W"]), np.array(q["y"])
    token = q["vocab"].index(q["token"])
    if q["mode"] == "tied":
        W = E
    if recompute:
        h = E[token] + np.array(q["context"])
        z = W @ h
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    else:
        h, p = shown(q["h"]), shown(q["p"])
    lookup = np.zeros_like(E)
    lookup[token] = W.T @ (p - y)
    classifier = np.outer(p - y, h)
    full = lookup + classifier if q["mode"] == "tied" else (lookup if table == "emb.weight" else classifier)
    return full if row is None else full[q["vocab"].index(row)]


QUESTIONS = [(mode, table, row) for mode, table in [("untied", "emb.weight"), ("untied", "head.weight"),
                                                    ("tied", "emb.weight")]
             for row in [*tour.VOCAB, answer.WHOLE_TABLE]]


@pytest.mark.parametrize("mode, table, row", QUESTIONS)
@pytest.mark.parametrize("recompute", [False, True])
def test_an_answer_worked_out_from_the_shown_numbers_passes(mode, table, row, recompute):
    body = {"mode": mode, "table": table, "row": row}
    q = answer.question(body)
    asked = None if row == answer.WHOLE_TABLE else row
    got = from_the_page(q, table, asked, recompute)
    result = answer.check({**body, "answer": text(got)})
    assert result["verdict"] == "pass", result["diagnosis"]
    assert result["tolerance"] == q["tolerance"] <= 1e-3


@pytest.mark.parametrize("mode, table, row", [("untied", "emb.weight", "cat"), ("tied", "emb.weight", "cat"),
                                              ("untied", "head.weight", "cat")])
def test_a_typical_mistake_worked_out_from_the_shown_numbers_is_named(mode, table, row):
    """The forgotten -1 of p - y, computed from the rounded numbers, still gets its diagnosis
    (not a generic 'is off'), and the minus sign of the right answer gets 'flipped'."""
    body = {"mode": mode, "table": table, "row": row}
    q = answer.question(body)
    right = from_the_page(q, table, row, recompute=False)
    if mode == "tied":  # the lookup part without its -1: W^T p = W^T (p - y) + E[target]
        forgot = right + shown(q["E"])[q["vocab"].index(q["target"])]
    else:
        forgot = from_the_page({**q, "y": [0.0] * len(q["vocab"])}, table, row, recompute=False)
    diagnosis = answer.check({**body, "answer": text(forgot)})["diagnosis"]
    assert "forgot the target's -1" in diagnosis, diagnosis
    flipped = answer.check({**body, "answer": text(-right)})["diagnosis"]
    assert "sign is flipped" in flipped, flipped


def test_the_tolerance_is_below_every_typical_mistakes_distance():
    for mode, table, row in QUESTIONS:
        body = {"mode": mode, "table": table, "row": row}
        q = answer.question(body)
        setup, table, r = answer.read_question(body)
        expected, parts = answer.expected_and_parts(setup, table)
        n = answer.forward_numbers(setup)
        for mistake, diagnosis in answer.typical_mistakes(setup, table, parts, n):
            wrong, right = (mistake, expected) if r is None else (mistake[r], expected[r])
            if np.max(np.abs(wrong - right)) > 1e-9:  # a mistake that changes this row at all
                assert np.max(np.abs(wrong - right)) > q["tolerance"], (mode, table, row, diagnosis)


def test_the_question_says_what_is_asked():
    q = answer.question({"mode": "tied", "row": "cat"})
    assert q["what"] == "dL/dE[cat] (tied: emb.weight = head.weight, row 1)"
    assert q["y"] == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0] and q["decimals"] == 4
    assert 0 < q["tolerance"] < 1e-3


def test_a_prediction_answers_for_the_controls_it_was_made_for(book):
    prediction = book.commit({"mode": "untied", "layout": "separate tensors", "larger": "lookup", "width": 4})
    assert audit.audit({"mode": "untied", "prediction": prediction.id}, book)["right"]["layout"]
    with pytest.raises(P.BadRequest, match=r"committed for other controls \(width, context changed") as err:
        audit.audit({"mode": "untied", "width": 8, "prediction": prediction.id}, book)
    assert err.value.status == 409
    with pytest.raises(P.BadRequest, match=r"other controls \(target changed"):
        audit.audit({"mode": "untied", "target": "mat", "prediction": prediction.id}, book)
    again = book.commit({"mode": "untied", "layout": "separate tensors", "larger": "lookup", "width": 8})
    assert audit.audit({"mode": "untied", "width": 8, "prediction": again.id}, book)["setup"]["width"] == 8


@pytest.mark.parametrize("vocab, size", [("corpus", 12), ("corpus", 2), ("tour", None)])
def test_a_vocabulary_alone_gives_a_token_and_target_of_its_own(vocab, size):
    body = {"vocab": vocab} if size is None else {"vocab": vocab, "vocab_size": size}
    setup = audit.vocabulary(body)  # what the page asks for when the vocabulary changes
    assert setup["token"] in setup["vocab"] and setup["target"] in setup["vocab"]
    if vocab == "tour":
        assert setup["token"] == setup["target"] == "cat"  # the tour reads "cat" and asks for it
    else:
        assert setup["vocab"][:2] == [setup["token"], setup["target"]]


def test_a_chunk_stops_when_its_time_is_up():
    book = steps.RunBook()
    run = book.start({"steps": 50, "chunk": 50, "vocab_size": 100, "batch": 4})["run"]
    first = steps.advance(book._runs[run], seconds=0.0)  # time is up at once: one step, never zero
    assert first["step"] == 1 and len(first["points"]["tied"]) == 1
    rest = steps.advance(book._runs[run], seconds=60.0)
    assert rest["step"] == 50 and [p["step"] for p in rest["points"]["untied"]] == list(range(2, 51))


def test_the_steps_prediction_is_scored_on_the_longest_silence():
    body = dict(optimizer="sgd", lr=0.5, weight_decay=0, lazy=True, decay="touched", steps=80, chunk=40,
                vocab_size=50, batch=4, prediction="untied")
    started, chunks = run_all(body)
    assert started["prediction"] == "untied"
    assert chunks[0]["longest_return"] is None or chunks[0]["longest_return"]["prediction"] == "untied"
    back = chunks[-1]["longest_return"]
    returns = {mode: [r for c in chunks for r in c["returns"][mode]] for mode in ("tied", "untied")}
    longest = max(returns["tied"], key=lambda r: r["silence"])
    assert back["step"] == longest["step"] and back["silence"] == longest["silence"]
    untied = next(r for r in returns["untied"] if r["step"] == back["step"])
    assert (back["tied"], back["untied"]) == (longest["moved"], untied["moved"])
    tied, untied = back["tied"], back["untied"]
    further = ("about the same" if abs(tied - untied) <= 0.1 * max(tied, untied)
               else "tied" if tied > untied else "untied")
    assert back["further"] == further and back["right"] == (further == "untied")
    with pytest.raises(P.BadRequest, match="prediction: expected one of tied, untied, about the same"):
        steps.read_setup({"prediction": "rare"})


def test_the_lab_server_caps_blas_threads_while_open():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from minigrad.learn.lab.server import LabServer

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can see")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        inside = blas_threads()
        server = LabServer(port=0)
        try:
            assert set(blas_threads()) == {1}
        finally:
            server.server_close()
        assert blas_threads() == inside
