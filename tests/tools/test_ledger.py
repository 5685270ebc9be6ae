"""The gradient ledger: what each path sent into each parameter, checked against numpy and
finite differences, and the seed page's vocabulary bridge audit reproduced untied and tied."""


import numpy as np
import pytest
from doc_pages import run_page
from oracle import TF, torch
from seed_bridge import CAT, CONTEXT, SEED_PRINTED, D, V, bridge, starting_weights, tied_paths, untied_paths

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from minigrad.tools.gradcheck import numerical_gradient
from minigrad.tools.ledger import EARLIER_GRAD, Ledger

# named by role and module, as a ledger given the model names them
LOOKUP, CLASSIFIER = "lookup emb (EmbeddingBackward)", "classifier head (LinearBackward)"


def bridge_loss(model: nn.Module, ids=(CAT,), target=CAT) -> mg.Tensor:
    h = model.emb(np.array(ids)) + CONTEXT
    return F.cross_entropy(model.head(h), np.full(len(ids), target))


def audited(tied: bool) -> tuple[nn.Module, Ledger]:
    model = bridge(tied)
    loss = bridge_loss(model)
    with mg.ledger(names=model) as led:
        loss.backward()
    return model, led


# ---- the untied bridge: two tensors, one path each -------------------------------------------

def test_untied_lookup_and_classifier_land_in_separate_tensors():
    model, led = audited(tied=False)
    lookup, classifier = untied_paths(*starting_weights())
    emb_paths = led.path_grads(model.emb.weight)
    head_paths = led.path_grads(model.head.weight)
    assert list(emb_paths) == [LOOKUP] and list(head_paths) == [CLASSIFIER]
    assert isinstance(emb_paths[LOOKUP], mg.RowSparse)
    np.testing.assert_allclose(emb_paths[LOOKUP].to_dense(), lookup, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(head_paths[CLASSIFIER], classifier, rtol=1e-12, atol=1e-15)


def test_layouts_name_sparse_rows_and_dense_shape():
    model, led = audited(tied=False)
    (lookup,) = led.contributions(model.emb.weight)
    (classifier,) = led.contributions(model.head.weight)
    assert lookup.layout == "sparse: 1/6 rows"
    assert classifier.layout == "dense 6x4"
    assert led.record(model.emb.weight).densified() is None
    assert isinstance(model.emb.weight.grad, mg.RowSparse)  # untied: the table's grad stays sparse


def test_seed_audit_untied_norms():
    model, led = audited(tied=False)
    lookup, classifier = untied_paths(*starting_weights())
    lookup_norm = led.table(model.emb.weight, rows=[CAT]).norm(CAT, LOOKUP)
    classifier_norm = led.table("head.weight", rows=[CAT]).norm(CAT, CLASSIFIER)
    assert lookup_norm == pytest.approx(np.linalg.norm(lookup[CAT]), rel=1e-12)
    assert classifier_norm == pytest.approx(np.linalg.norm(classifier[CAT]), rel=1e-12)
    assert round(lookup_norm, 4) == SEED_PRINTED["untied lookup"]
    assert round(classifier_norm, 4) == SEED_PRINTED["untied classifier"]


# ---- the tied bridge: one table, two paths --------------------------------------------------

def test_seed_audit_tied_shared_row_norm():
    model, led = audited(tied=True)
    lookup, classifier = tied_paths(starting_weights()[0])
    table = led.table(model.emb.weight, rows=[CAT])
    assert table.paths == [CLASSIFIER, LOOKUP]  # in the order backward delivered them
    assert table.norm(CAT, LOOKUP) == pytest.approx(np.linalg.norm(lookup[CAT]), rel=1e-12)
    assert table.norm(CAT, CLASSIFIER) == pytest.approx(np.linalg.norm(classifier[CAT]), rel=1e-12)
    shared = table.norm(CAT, "total")
    assert shared == pytest.approx(np.linalg.norm(lookup[CAT] + classifier[CAT]), rel=1e-12)
    assert round(shared, 4) == SEED_PRINTED["tied shared row"]


def test_tied_total_equals_grad_and_the_sum_of_both_paths():
    model, led = audited(tied=True)
    weight = model.emb.weight
    paths = led.path_grads(weight)
    summed = paths[LOOKUP].to_dense() + paths[CLASSIFIER]
    np.testing.assert_allclose(weight.grad, summed, rtol=1e-12, atol=0)
    table = led.table(weight)
    for row in range(V):
        assert table.norm(row, "total") == pytest.approx(np.linalg.norm(weight.grad[row]), rel=1e-12)


def test_tied_ledger_total_matches_finite_differences():
    model, led = audited(tied=True)
    probe = bridge(tied=True)  # a fresh copy to perturb, one element at a time

    def loss_at() -> float:
        with mg.no_grad():
            return float(bridge_loss(probe).item())

    numerical = numerical_gradient(loss_at, probe.emb.weight, eps=1e-6)
    np.testing.assert_allclose(led.record(model.emb.weight).total(), numerical, atol=1e-8)


def test_tied_gradient_becomes_dense_and_the_ledger_says_so():
    model, led = audited(tied=True)
    assert isinstance(model.emb.weight.grad, np.ndarray)
    note = led.record(model.emb.weight).densified()
    assert "became dense" in note and f"{CLASSIFIER} sent dense 6x4" in note
    assert LOOKUP in note and "all 6 rows" in note
    assert "note: the accumulated gradient became dense" in str(led.table(model.emb.weight))


def test_table_prints_paths_layouts_and_unstored_rows():
    model, led = audited(tied=True)
    text = str(led.table(model.emb.weight, rows=[0, CAT], labels=["the", "cat", "sat", "on", "mat", "."]))
    lines = text.splitlines()
    assert lines[0] == "gradient ledger for emb.weight = head.weight (norm of each row, by path)"
    assert lines[1].split()[:1] == ["row"] and CLASSIFIER in lines[1] and LOOKUP in lines[1]
    assert "dense 6x4" in lines[2] and "sparse: 1/6 rows" in lines[2]
    assert lines[3].startswith("0 the") and lines[3].split()[-2] == "-"  # the lookup never stored row 0
    lookup, _ = tied_paths(starting_weights()[0])
    assert lines[4].startswith("1 cat") and f"{np.linalg.norm(lookup[CAT]):.4f}" in lines[4]


# ---- what counts as a path --------------------------------------------------------------------

def test_duplicate_ids_sum_into_one_stored_row():
    emb = nn.Embedding(V, D, dtype=np.float64, rng=0)
    weights = np.arange(3 * D, dtype=np.float64).reshape(3, D)
    with mg.ledger() as led:
        (emb(np.array([1, 1, 3])) * weights).sum().backward()
    (contribution,) = led.contributions(emb.weight)
    assert contribution.layout == "sparse: 2/6 rows"
    table = led.table(emb.weight, rows=[1, 3, 5])
    assert table.norm(1, "lookup (EmbeddingBackward)") == pytest.approx(  # no module: no module name
        np.linalg.norm(weights[0] + weights[1]))
    assert table.norm(3, "total") == pytest.approx(np.linalg.norm(weights[2]))
    assert not table.stored[2, 0] and table.norm(5, "total") == 0.0


def test_one_node_sending_twice_is_one_path():
    x = mg.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True, name="x")
    with mg.ledger() as led:
        (x * x).sum().backward()
    contributions = led.contributions(x)
    assert len(contributions) == 2 and {c.path for c in contributions} == {"MulBackward"}
    np.testing.assert_allclose(led.path_grads(x)["MulBackward"], 2 * x.data)


def test_two_lookups_of_one_table_are_numbered():
    emb = nn.Embedding(V, D, dtype=np.float64, rng=0)
    with mg.ledger() as led:
        (emb(np.array([0])) + emb(np.array([2]))).sum().backward()
    assert set(led.path_grads(emb.weight)) == {"lookup (EmbeddingBackward)", "lookup #2 (EmbeddingBackward)"}


def test_roles_can_be_renamed_or_dropped():
    model = bridge(tied=True)
    with mg.ledger(names=model, roles={}) as led:
        bridge_loss(model).backward()
    assert set(led.path_grads(model.emb.weight)) == {"emb (EmbeddingBackward)", "head (LinearBackward)"}
    model.zero_grad()
    with mg.ledger(names=model, roles={"Linear": "scores"}) as led:
        bridge_loss(model).backward()
    assert set(led.path_grads(model.emb.weight)) == {"emb (EmbeddingBackward)",
                                                     "scores head (LinearBackward)"}


def test_an_earlier_grad_is_kept_so_the_total_matches_grad():
    model = bridge(tied=True)
    bridge_loss(model).backward()  # outside the ledger: .grad already holds one step
    earlier = model.emb.weight.grad.copy()
    with mg.ledger(names=model) as led:
        bridge_loss(model).backward()
    paths = led.path_grads(model.emb.weight)
    assert list(paths)[0] == EARLIER_GRAD
    np.testing.assert_array_equal(paths[EARLIER_GRAD], earlier)
    np.testing.assert_allclose(led.record(model.emb.weight).total(), model.emb.weight.grad, rtol=1e-12)


def test_nothing_is_recorded_outside_the_with_block():
    model = bridge(tied=False)
    led = mg.ledger(names=model)
    with led:
        pass
    bridge_loss(model).backward()
    assert led.params == []


def test_names_from_a_dict_and_the_leaves_that_were_reached():
    model = bridge(tied=True)
    with mg.ledger(names={"E": model.emb.weight, "W": model.head.weight}) as led:
        bridge_loss(model).backward()
    assert led.record(model.emb.weight).label == "E = W"
    assert model.emb.weight in led and len(led.params) == 1
    # without a Module the ledger cannot tell a hidden Linear from the output map: no role word
    assert "E = W: LinearBackward dense 6x4" in led.summary()
    assert "lookup (EmbeddingBackward) sparse: 1/6 rows" in led.summary()


# ---- errors -------------------------------------------------------------------------------------

def test_table_of_a_parameter_that_got_nothing_says_so():
    model, led = audited(tied=False)
    stranger = nn.Parameter(np.zeros((2, 3)))
    with pytest.raises(KeyError, match=r"of shape \(2, 3\) received no gradient while the ledger was"):
        led.table(stranger)
    with pytest.raises(KeyError, match=r"no parameter named 'emb\.bias'.*\['head\.weight', 'emb\.weight'\]"):
        led.table("emb.bias")
    with pytest.raises(TypeError, match="param must be a Tensor or a name, got int"):
        led.table(3)


def test_table_rejects_bad_rows_and_labels():
    model, led = audited(tied=True)
    with pytest.raises(IndexError, match=r"ledger.table: row 6 at rows\[1\] is out of range for emb.weight = "
                                         r"head.weight with 6 rows \(rows must be in \[0, 6\)\)"):
        led.table(model.emb.weight, rows=[1, 6])
    with pytest.raises(ValueError, match=r"labels has 2 entries, expected one per row \(6\)"):
        led.table(model.emb.weight, labels=["a", "b"])
    with pytest.raises(KeyError, match=r"no path 'nope' reached"):
        led.table(model.emb.weight, rows=[1]).norm(1, "nope")
    with pytest.raises(KeyError, match=r"row 2 is not in this table \(rows \[1\]\)"):
        led.table(model.emb.weight, rows=[1]).norm(2, "total")
    scale = mg.tensor(np.array(2.0), requires_grad=True, name="scale")
    with mg.ledger() as scalar_led:
        (scale * 3.0).backward()
    with pytest.raises(ValueError, match="ledger.table: scale is a scalar; a table needs rows"):
        scalar_led.table(scale)


def test_ledger_rejects_bad_names_and_double_entry():
    with pytest.raises(TypeError, match="expected a Module or a dict mapping names to parameters, got list"):
        mg.ledger(names=[1, 2])
    with pytest.raises(TypeError, match="the value for 'w' is a ndarray, expected a Tensor"):
        mg.ledger(names={"w": np.zeros(2)})
    led = mg.ledger()
    with led, pytest.raises(RuntimeError, match="already recording"):
        led.__enter__()


def torch_tied_bridge_grad(table, cat, context):
    """The tied bridge in torch: h = E[cat] + context, logits h E^T; the gradient of E."""
    weights = torch.tensor(table, requires_grad=True)
    h = weights[torch.tensor([cat])] + torch.tensor(context)
    TF.cross_entropy(h @ weights.T, torch.tensor([cat])).backward()
    return weights.grad


def test_tied_ledger_matches_torch(oracle):
    model, led = audited(tied=True)
    expected = oracle(torch_tied_bridge_grad, starting_weights()[0], CAT, CONTEXT)
    np.testing.assert_allclose(led.record(model.emb.weight).total(), expected, rtol=1e-10)


def test_the_docs_example_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the page renders tied.svg into the working directory
    assert run_page("ledger.md", capsys) >= 5
    assert (tmp_path / "tied.svg").exists() and (tmp_path / "tied.dot").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.svg", "tied.dot", "tied.svg"]


# ---- path names by module, and the notebook display ----------------------------------------------

def test_hidden_layers_are_named_by_module_and_only_the_output_map_is_the_classifier():
    from minigrad.models import TinyLM

    for tied in (False, True):
        model = TinyLM(V, D, hidden=5, tied=tied, dtype=np.float64, rng=0)
        with mg.ledger(names=model) as led:
            F.cross_entropy(model(np.array([1, 2, 3])), np.array([2, 3, 4])).backward()
        paths = {name: set(led.path_grads(name)) for name in ("up.weight", "down.bias", "head.weight")}
        assert paths["up.weight"] == {"up (LinearBackward)"}
        assert paths["down.bias"] == {"down (LinearBackward)"}
        assert "classifier head (LinearBackward)" in paths["head.weight"]
        assert not any("classifier" in p for name in ("up.weight", "down.bias") for p in paths[name])
        assert ("lookup emb (EmbeddingBackward)" in paths["head.weight"]) == tied


def test_a_linear_that_does_not_score_the_vocabulary_is_no_classifier():
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, D, dtype=np.float64, rng=0)
            self.proj = nn.Linear(D, V + 1, dtype=np.float64, rng=1)  # V + 1 outputs: not the vocabulary

    model = Encoder()
    with mg.ledger(names=model) as led:
        model.proj(model.emb(np.array([1]))).sum().backward()
    assert set(led.path_grads(model.proj.weight)) == {"proj (LinearBackward)"}


def test_the_ledger_and_its_tables_display_as_html_tables():
    model, led = audited(tied=True)
    page = led._repr_html_()
    assert page.startswith("<table>") and page.count("<tr>") == 1 + 2  # a header, one row per path
    first = led.record(model.emb.weight).contributions[0]
    assert f"<td style=\"text-align:right\">{first.norm:.4f}</td>" in page
    table = led.table(model.emb.weight, labels=["<the>", "cat", "sat", "on", "mat", "<eos>"])
    body = table._repr_html_()
    assert "&lt;the&gt;" in body and "<the>" not in body  # labels are escaped
    assert body.count("<tr>") == 1 + 1 + V  # header, layouts, one per row
    for r in range(V):
        assert f"<td style=\"text-align:right\">{table.norm(r, 'total'):.4f}</td>" in body
    assert "became dense" in body


# ---- printing the ledger itself ----------------------------------------------------------------

def test_print_ledger_shows_what_it_recorded_not_an_address():
    model, led = audited(tied=True)
    text = str(led)
    assert "object at 0x" not in text and "object at 0x" not in repr(led)
    assert text.splitlines()[0] == "gradient ledger: 1 parameter received gradient"
    assert led.summary() in text  # one line per parameter: its paths, layouts, norms
    assert LOOKUP in text and CLASSIFIER in text
    assert repr(led) == "<Ledger: emb.weight = head.weight (2 paths)>"


def test_print_an_empty_or_recording_ledger():
    led = mg.ledger()
    assert str(led) == "gradient ledger: nothing recorded yet"
    assert repr(led) == "<Ledger: nothing recorded yet>"
    with led:
        assert repr(led) == "<Ledger (recording): nothing recorded yet>"
