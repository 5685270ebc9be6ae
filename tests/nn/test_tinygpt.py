"""TinyGPT: nanoGPT's names, PyTorch's numbers (logits and every gradient, float64), checkpoints
that travel both ways, the row-sparse token table, and the ledger and drawing on the tied table."""

import re

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.learn.train import next_token_loss
from minigrad.models import TinyGPT
from minigrad.nn import functional as F

V, CONTEXT, D, HEADS, LAYERS = 11, 8, 12, 3, 2
rng = np.random.default_rng(0)
IDS = rng.integers(0, V, (3, CONTEXT))
TARGETS = rng.integers(0, V, (3, CONTEXT))


def model(tied=True, dtype=np.float64, rng=0, **kw):
    return TinyGPT(V, CONTEXT, D, HEADS, LAYERS, tied=tied, dtype=dtype, rng=rng, **kw)


def nanogpt_names(n_layers, tied=True):
    names = ["transformer.wte.weight", "transformer.wpe.weight"]
    for i in range(n_layers):
        for part in ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"):
            names += [f"transformer.h.{i}.{part}.weight", f"transformer.h.{i}.{part}.bias"]
    return names + ["transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"]


# ---- names and shapes ---------------------------------------------------------------------------

@pytest.mark.parametrize("tied", [True, False])
def test_state_dict_has_nanogpt_names_and_shapes(tied):
    m = model(tied)
    state = m.state_dict()
    assert list(state) == nanogpt_names(LAYERS)
    assert state["transformer.h.1.attn.c_attn.weight"].shape == (3 * D, D)
    assert state["transformer.h.0.mlp.c_fc.weight"].shape == (4 * D, D)
    assert state["transformer.wpe.weight"].shape == (CONTEXT, D)
    assert state["lm_head.weight"].shape == (V, D)
    assert (state["lm_head.weight"] is state["transformer.wte.weight"]) == tied
    assert m.aliases().get("transformer.wte.weight") == (
        ["transformer.wte.weight", "lm_head.weight"] if tied else ["transformer.wte.weight"])


def test_forward_gives_logits_for_every_position_and_is_causal():
    m = model()
    logits = m(IDS)
    assert logits.shape == (3, CONTEXT, V) and logits.dtype == np.float64
    changed = IDS.copy()
    changed[:, 5] = (changed[:, 5] + 1) % V  # a later token cannot change an earlier prediction
    later = m(changed)
    np.testing.assert_array_equal(later.data[:, :5], logits.data[:, :5])
    assert not np.allclose(later.data[:, 5:], logits.data[:, 5:])
    assert m(IDS[:, :3]).shape == (3, 3, V)  # shorter sequences are fine
    assert TinyGPT(V, CONTEXT, D, HEADS, 1).lm_head(mg.zeros(1, D)).dtype == np.float32


def test_same_seed_same_model_and_gpt2_initialisation():
    a, b = model(rng=5).state_dict(), model(rng=5).state_dict()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert abs(a["transformer.h.0.attn.c_attn.weight"].std() - 0.02) < 0.003
    assert abs(a["transformer.h.0.mlp.c_proj.weight"].std() - 0.02 / np.sqrt(2 * LAYERS)) < 0.002
    assert not a["transformer.h.0.attn.c_attn.bias"].any()
    assert (a["transformer.h.0.ln_1.weight"] == 1).all()


# ---- against PyTorch (live where it is installed, recorded where not) ------------------------------

SIZES = (V, CONTEXT, D, HEADS, LAYERS)


def torch_grads(state, tied, explicit, ids, targets):
    """nanoGPT's network holding `state`: the logits, the loss, and the gradient under every
    parameter name (both names of a tied table)."""
    from nanogpt_torch import twin_of_state

    twin = twin_of_state(SIZES, state, tied, explicit)
    logits = twin(torch.tensor(ids))
    loss = TF.cross_entropy(logits.reshape(-1, V), torch.tensor(targets).reshape(-1))
    loss.backward()
    return logits, loss.item(), {n: p.grad for n, p in twin.named_parameters(remove_duplicate=False)
                                 if p.grad is not None}


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("explicit", [False, True])
def test_logits_and_every_gradient_match_torch_in_float64(tied, explicit, fast_and_plain, oracle):
    m = model(tied)
    logits_t, loss_t, grads_t = oracle(torch_grads, m.state_dict(), tied, explicit, IDS, TARGETS)
    logits = m(IDS)
    loss = next_token_loss(logits, TARGETS)
    loss.backward()
    np.testing.assert_allclose(logits.data, logits_t, rtol=1e-11, atol=1e-13)
    assert loss.item() == pytest.approx(loss_t, rel=1e-12)
    params = dict(m._all_named_parameters())
    assert set(grads_t) == set(params)  # every parameter, under every name (both tied names)
    for name, p in params.items():
        ours = mg.engine.to_dense(p.grad)
        np.testing.assert_allclose(ours, grads_t[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_float32_model_matches_torch_float32(fast_and_plain, oracle):
    m = model(dtype=np.float32)
    logits_t, _, grads_t = oracle(torch_grads, m.state_dict(), True, False, IDS, TARGETS)
    logits = m(IDS)
    next_token_loss(logits, TARGETS).backward()
    assert logits.dtype == logits_t.dtype == np.float32
    np.testing.assert_allclose(logits.data, logits_t, rtol=1e-4, atol=1e-5)
    for name, p in m.named_parameters():
        assert p.grad.dtype == np.float32, name
        np.testing.assert_allclose(mg.engine.to_dense(p.grad), grads_t[name], rtol=1e-3, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("tied", [True, False])
def test_features_and_the_fused_head_give_the_loss_and_its_gradients(tied, fast_and_plain):
    """forward is lm_head(features); F.linear_cross_entropy on the features (how lesson 13 trains
    TinyGPT) gives model.loss's loss and every gradient: bit for bit with the fast kernels."""
    m = model(tied, dtype=np.float32)
    features = m.features(IDS)
    assert features.shape == (3, CONTEXT, D) and features.dtype == np.float32
    np.testing.assert_array_equal(m(IDS).data, m.lm_head(features).data)
    loss = m.loss(IDS, TARGETS)
    loss.backward()
    plain = {name: mg.engine.to_dense(p.grad).copy() for name, p in m.named_parameters()}
    for p in m.parameters():
        p.grad = None
    fused = F.linear_cross_entropy(m.features(IDS), m.output_table, TARGETS)
    fused.backward()
    same = np.testing.assert_array_equal if fast_and_plain == "fast kernels" else (
        lambda a, b, err_msg: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=err_msg))
    same(fused.data, loss.data, err_msg="loss")
    for name, p in m.named_parameters():
        same(mg.engine.to_dense(p.grad), plain[name], err_msg=name)
    assert any(np.abs(g).max() > 0 for g in plain.values())


def test_untied_token_table_keeps_its_row_sparse_gradient():
    m = model(tied=False)
    ids = np.array([[1, 2, 2, 7]])
    next_token_loss(m(ids), np.array([[0, 1, 2, 3]])).backward()
    grad = m.transformer.wte.weight.grad
    assert isinstance(grad, mg.RowSparse)
    assert sorted(grad.coalesce().indices.tolist()) == [1, 2, 7]
    assert isinstance(m.lm_head.weight.grad, np.ndarray)


# ---- checkpoints: minigrad -> PyTorch -> minigrad ----------------------------------------------

def torch_round_trip(state, tied, ids):
    """nanoGPT's network loads the state: its logits; then any change (as training on in PyTorch
    would make), and its logits and state after."""
    from nanogpt_torch import TorchGPT

    twin = TorchGPT(*SIZES, tied=tied).double()
    twin.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    with torch.no_grad():
        before = twin(torch.tensor(ids))
        for p in twin.parameters():
            p.mul_(1.5).add_(0.01)
        after = twin(torch.tensor(ids))
    return before, after, dict(twin.state_dict())


@pytest.mark.parametrize("tied", [True, False])
def test_checkpoint_travels_to_torch_and_back(tmp_path, tied, oracle):
    m = model(tied, rng=1)
    mg.save(m, tmp_path / "gpt.safetensors")
    before, expected, state = oracle(torch_round_trip, mg.load(tmp_path / "gpt.safetensors"), tied, IDS)
    np.testing.assert_allclose(before, m(IDS).data, rtol=1e-12, atol=1e-14)
    back = model(tied, rng=2)
    back.load_state_dict(state)
    np.testing.assert_allclose(back(IDS).data, expected, rtol=1e-12, atol=1e-14)
    mg.save(back, tmp_path / "back.safetensors")
    again = model(tied, rng=3)
    again.load_state_dict(mg.load(tmp_path / "back.safetensors"))
    np.testing.assert_array_equal(again(IDS).data, back(IDS).data)
    assert (again.lm_head.weight is again.transformer.wte.weight) == tied


# ---- errors --------------------------------------------------------------------------------------

def test_bad_ids_are_named_with_shape_and_limits():
    m = model()
    with pytest.raises(ValueError, match=r"ids has shape \(3, 9\): sequences of T=9 tokens, longer than "
                                         r"context=8"):
        m(rng.integers(0, V, (3, 9)))
    with pytest.raises(ValueError, match=r"ids has shape \(8,\), expected \(B, T\)"):
        m(IDS[0])
    with pytest.raises(IndexError, match=r"token id 11 at ids\[1, 2\] is out of range for num_embeddings=11"):
        bad = IDS.copy()
        bad[1, 2] = V
        m(bad)
    with pytest.raises(TypeError, match="ids must be integer token ids, got dtype float64"):
        m(IDS.astype(float))
    with pytest.raises(ValueError, match="d_model=12 is not divisible by n_heads=5"):
        TinyGPT(V, CONTEXT, D, 5, 1)
    with pytest.raises(ValueError, match="TinyGPT: n_layers must be a positive int, got 0"):
        TinyGPT(V, CONTEXT, D, HEADS, 0)


# ---- dropout, train and eval ---------------------------------------------------------------------

def test_dropout_acts_in_training_only():
    m = model(dropout=0.3)
    assert not np.allclose(m(IDS).data, m(IDS).data)  # fresh masks each call
    m.eval()
    np.testing.assert_array_equal(m(IDS).data, m(IDS).data)
    np.testing.assert_allclose(m(IDS).data, model(rng=0)(IDS).data, rtol=1e-12)  # same weights, p off


# ---- the ledger and the drawing on the tied table ----------------------------------------------

def test_ledger_splits_the_tied_table_into_lookup_and_classifier_paths():
    tied, untied = model(tied=True), model(tied=False)
    untied.lm_head.weight.data[...] = tied.transformer.wte.weight.data  # same values, two tables
    with mg.ledger(names=tied) as led:
        next_token_loss(tied(IDS), TARGETS).backward()
    next_token_loss(untied(IDS), TARGETS).backward()
    paths = led.path_grads("lm_head.weight")
    assert set(paths) == {"lookup transformer.wte (EmbeddingBackward)",  # named by module
                          "classifier lm_head (LinearBackward)"}
    lookup = paths["lookup transformer.wte (EmbeddingBackward)"]
    assert isinstance(lookup, mg.RowSparse)
    # the tied table's two paths are exactly the two untied tables' gradients
    np.testing.assert_allclose(lookup.to_dense(), untied.transformer.wte.weight.grad.to_dense(), rtol=1e-10)
    classifier = paths["classifier lm_head (LinearBackward)"]
    np.testing.assert_allclose(classifier, untied.lm_head.weight.grad, rtol=1e-10)
    np.testing.assert_allclose(mg.engine.to_dense(led.record("lm_head.weight").total()),
                               tied.transformer.wte.weight.grad, rtol=1e-12)
    row = int(IDS[0, 0])
    table = led.table(tied.transformer.wte.weight, rows=[row])
    assert table.norm(row, "lookup transformer.wte (EmbeddingBackward)") == pytest.approx(
        np.linalg.norm(untied.transformer.wte.weight.grad.to_dense()[row]), rel=1e-10)


def test_drawing_shows_the_tied_table_as_one_node_with_a_sparse_and_a_dense_edge():
    m = model()
    with mg.ledger(names=m) as led:
        loss = next_token_loss(m(IDS), TARGETS)
        loss.backward(retain_graph=True)
    source = mg.draw(loss, params=m, ledger=led).source
    (table,) = re.findall(r'^\s*(\w+) \[label="transformer\.wte\.weight = lm_head\.weight', source, re.M)
    into = re.findall(rf"^\s*\w+ -> {table}\b(.*)$", source, flags=re.M)
    assert len(into) == 2
    rows_read = len(np.unique(IDS))
    assert sum(f"sparse: {rows_read}/{V} rows" in e for e in into) == 1
    assert sum(f"dense {V}x{D}" in e for e in into) == 1
