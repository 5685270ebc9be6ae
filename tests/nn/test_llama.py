"""The Llama-style model: transformers' names, PyTorch's numbers (logits and the gradient of every
parameter, tied and untied, both rotary conventions, float64), checkpoints that travel both ways,
the row-sparse token table, the ledger and drawing on the tied table, and train()."""

import dataclasses
import io
import re
from types import SimpleNamespace

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.learn.train import next_token_loss, split_windows, train
from minigrad.models import Llama, LlamaConfig
from minigrad.optim import AdamW

V, CONTEXT, D, HEADS, LAYERS, FF = 13, 8, 12, 3, 2, 20
rng = np.random.default_rng(0)
IDS = rng.integers(0, V, (3, CONTEXT))
TARGETS = rng.integers(0, V, (3, CONTEXT))


def config(**kw):
    fields = dict(vocab_size=V, hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  max_position_embeddings=CONTEXT, intermediate_size=FF)
    return LlamaConfig(**{**fields, **kw})


def model(dtype=np.float64, rng=0, spread=True, **kw):
    """A model whose weights are far from the small initial ones (so every term of every
    gradient matters) when spread."""
    m = Llama(config(**kw), dtype=dtype, rng=rng)
    if spread:
        g = np.random.default_rng(rng + 100)
        for p in m.parameters():
            p.data[...] = g.normal(1.0 if p.ndim == 1 else 0.0, 0.4, p.shape)
    return m


def llama_names(n_layers):
    names = ["model.embed_tokens.weight"]
    for i in range(n_layers):
        names += [f"model.layers.{i}.self_attn.{p}_proj.weight" for p in "qkvo"]
        names += [f"model.layers.{i}.mlp.{p}_proj.weight" for p in ("gate", "up", "down")]
        names += [f"model.layers.{i}.{n}.weight" for n in ("input_layernorm", "post_attention_layernorm")]
    return names + ["model.norm.weight", "lm_head.weight"]


# ---- names, shapes, initialisation --------------------------------------------------------------

@pytest.mark.parametrize("tied", [True, False])
def test_state_dict_has_llama_names_and_shapes(tied):
    m = Llama(config(tie_word_embeddings=tied))
    state = m.state_dict()
    assert sorted(state) == sorted(llama_names(LAYERS))
    assert state["model.layers.1.self_attn.q_proj.weight"].shape == (D, D)
    assert state["model.layers.0.mlp.gate_proj.weight"].shape == (FF, D)
    assert state["model.layers.0.mlp.down_proj.weight"].shape == (D, FF)
    assert state["model.norm.weight"].shape == (D,) and (state["model.norm.weight"] == 1).all()
    assert (state["lm_head.weight"] is state["model.embed_tokens.weight"]) == tied
    assert (m.lm_head.weight is m.model.embed_tokens.weight) == tied
    assert m.aliases()["model.embed_tokens.weight"] == (
        ["model.embed_tokens.weight", "lm_head.weight"] if tied else ["model.embed_tokens.weight"])
    assert m.num_parameters() == sum(v.size for v in state.values()) - (V * D if tied else 0)


def test_defaults_are_the_small_llamas():
    c = LlamaConfig(vocab_size=100, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=64)
    assert c.tie_word_embeddings and c.rope_style == "halves" and c.head_dim == 32
    assert c.intermediate_size == 384  # 8/3 of 128 = 341.3, up to a multiple of 64
    m = Llama(c)
    assert not any(name.endswith("bias") for name in m.state_dict())
    table = m.model.embed_tokens.weight.data
    assert table.dtype == np.float32 and abs(table.std() - 0.02) < 0.002
    np.testing.assert_array_equal(Llama(c).lm_head.weight.data, m.lm_head.weight.data)  # seeded


def test_forward_gives_logits_for_every_position_and_is_causal():
    m = model()
    logits = m(IDS)
    assert logits.shape == (3, CONTEXT, V) and logits.dtype == np.float64
    changed = IDS.copy()
    changed[:, 5] = (changed[:, 5] + 1) % V
    later = m(changed)
    np.testing.assert_array_equal(later.data[:, :5], logits.data[:, :5])
    assert not np.allclose(later.data[:, 5:], logits.data[:, 5:])
    np.testing.assert_allclose(m(IDS[:, :3]).data, logits.data[:, :3], rtol=1e-12)
    expected = next_token_loss(logits, TARGETS).item()
    np.testing.assert_allclose(m.loss(IDS, TARGETS).item(), expected, rtol=1e-12)


# ---- against PyTorch (live where it is installed, recorded where not) ------------------------------

def torch_logits_and_grads(config, state, ids, targets):
    """The PyTorch Llama of tests/helpers/llama_torch.py holding `state`: logits, loss, and every
    named parameter's gradient."""
    from llama_torch import twin_of_state

    twin = twin_of_state(config, state)
    logits = twin(torch.tensor(ids))
    loss = TF.cross_entropy(logits.reshape(-1, config["vocab_size"]), torch.tensor(targets).reshape(-1))
    loss.backward()
    return logits, loss.item(), {name: p.grad for name, p in twin.named_parameters()}


def ask_torch(oracle, m, ids=IDS, targets=TARGETS):
    return oracle(torch_logits_and_grads, dataclasses.asdict(m.config), m.state_dict(), ids, targets)


@pytest.mark.parametrize("style", ["halves", "pairs"])
@pytest.mark.parametrize("tied", [True, False])
def test_logits_and_every_gradient_match_torch_in_float64(tied, style, fast_and_plain, oracle):
    m = model(tie_word_embeddings=tied, rope_style=style)
    theirs, _, their_grads = ask_torch(oracle, m)
    logits = m(IDS)
    np.testing.assert_allclose(logits.data, theirs, rtol=1e-11, atol=1e-12)
    next_token_loss(logits, TARGETS).backward()
    assert sorted(their_grads) == sorted(n for n, _ in m.named_parameters())
    for name, p in m.named_parameters():
        ours = mg.engine.to_dense(p.grad)
        assert np.abs(ours).max() > 1e-4, name  # a gradient that carries signal
        np.testing.assert_allclose(ours, their_grads[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_float32_model_matches_torch_float32(fast_and_plain, oracle):
    m = Llama(config(), rng=3)
    theirs, expected, _ = ask_torch(oracle, m)
    np.testing.assert_allclose(m(IDS).data, theirs, rtol=1e-4, atol=1e-5)
    loss = m.loss(IDS, TARGETS)
    assert loss.dtype == theirs.dtype == np.float32 and loss.item() == pytest.approx(expected, rel=1e-5)


# ---- checkpoints: minigrad -> PyTorch -> minigrad ----------------------------------------------

def torch_changed(config, state, ids):
    """The PyTorch Llama holding `state`, after any change (as training on in PyTorch would make):
    whether it is tied, its logits, and its state."""
    from llama_torch import twin_of_state

    twin = twin_of_state(config, state)
    with torch.no_grad():
        for p in twin.parameters():
            p.mul_(1.1).add_(0.01)
        logits = twin(torch.tensor(ids))
    return twin.lm_head.weight is twin.model.embed_tokens.weight, logits, dict(twin.state_dict())


@pytest.mark.parametrize("tied", [True, False])
def test_checkpoint_travels_to_torch_and_back(tmp_path, tied, oracle):
    m = model(rng=1, tie_word_embeddings=tied)
    mg.save(m, tmp_path / "llama.safetensors")
    loaded = mg.load(tmp_path / "llama.safetensors")
    fields = dataclasses.asdict(m.config)
    theirs, _, their_grads = oracle(torch_logits_and_grads, fields, loaded, IDS, TARGETS)
    logits = m(IDS)
    np.testing.assert_allclose(theirs, logits.data, rtol=1e-12, atol=1e-13)
    next_token_loss(logits, TARGETS).backward()  # and every gradient, from the loaded file
    for name, p in m.named_parameters():
        np.testing.assert_allclose(mg.engine.to_dense(p.grad), their_grads[name], rtol=1e-9,
                                   atol=1e-12, err_msg=name)
    twin_tied, expected, state = oracle(torch_changed, fields, loaded, IDS)
    assert twin_tied == tied
    back = model(rng=2, tie_word_embeddings=tied)
    back.load_state_dict(state)
    np.testing.assert_allclose(back(IDS).data, expected, rtol=1e-12, atol=1e-13)
    assert (back.lm_head.weight is back.model.embed_tokens.weight) == tied


# ---- the token table: row-sparse gradient, ledger, drawing ----------------------------------------

def test_untied_token_table_keeps_its_row_sparse_gradient():
    m = model(tie_word_embeddings=False)
    ids = np.array([[1, 2, 2, 7]])
    next_token_loss(m(ids), np.array([[0, 1, 2, 3]])).backward()
    grad = m.model.embed_tokens.weight.grad
    assert isinstance(grad, mg.RowSparse)
    assert sorted(grad.coalesce().indices.tolist()) == [1, 2, 7]
    assert isinstance(m.lm_head.weight.grad, np.ndarray)


def test_ledger_splits_the_tied_table_into_lookup_and_classifier_paths():
    tied, untied = model(), model(tie_word_embeddings=False)
    untied.lm_head.weight.data[...] = tied.model.embed_tokens.weight.data  # same values, two tables
    with mg.ledger(names=tied) as led:
        next_token_loss(tied(IDS), TARGETS).backward()
    next_token_loss(untied(IDS), TARGETS).backward()
    paths = led.path_grads("lm_head.weight")
    lookup_name = "lookup model.embed_tokens (EmbeddingBackward)"
    classifier_name = "classifier lm_head (LinearBackward)"
    assert set(paths) == {lookup_name, classifier_name}
    assert isinstance(paths[lookup_name], mg.RowSparse)
    untied_table = untied.model.embed_tokens.weight.grad.to_dense()
    np.testing.assert_allclose(paths[lookup_name].to_dense(), untied_table, rtol=1e-10)
    np.testing.assert_allclose(paths[classifier_name], untied.lm_head.weight.grad, rtol=1e-10)
    np.testing.assert_allclose(mg.engine.to_dense(led.record("lm_head.weight").total()),
                               tied.model.embed_tokens.weight.grad, rtol=1e-12)


def test_drawing_shows_the_tied_table_as_one_node_with_a_sparse_and_a_dense_edge():
    m = model()
    with mg.ledger(names=m) as led:
        loss = next_token_loss(m(IDS), TARGETS)
        loss.backward(retain_graph=True)
    source = mg.draw(loss, params=m, ledger=led).source
    (table,) = re.findall(r'^\s*(\w+) \[label="model\.embed_tokens\.weight = lm_head\.weight', source, re.M)
    into = re.findall(rf"^\s*\w+ -> {table}\b(.*)$", source, flags=re.M)
    assert len(into) == 2
    assert sum(f"sparse: {len(np.unique(IDS))}/{V} rows" in e for e in into) == 1
    assert sum(f"dense {V}x{D}" in e for e in into) == 1
    assert "RMSNormBackward" in source and "RotaryBackward" in source and "SiLUBackward" in source


# ---- training ------------------------------------------------------------------------------------

def test_train_lowers_the_loss_of_the_tied_model():
    tokens = np.tile(np.arange(V), 40)  # a text with a pattern to learn: each token follows the last
    train_data, valid_data = split_windows(tokens, CONTEXT, every_position=True)
    m = Llama(config(), rng=0)
    history = train(m, AdamW(m.parameters(), lr=1e-2), train_data, valid_data, steps=30, batch_size=8,
                    eval_every=15, stream=io.StringIO())
    assert history.valid_loss[-1] < 0.5 * history.valid_loss[0]
    assert history.batch_loss[-5:].mean() < history.batch_loss[:5].mean()


# ---- errors --------------------------------------------------------------------------------------

def test_bad_ids_and_configs_are_named():
    m = model()
    with pytest.raises(ValueError, match=r"ids has shape \(3, 9\): sequences of T=9 tokens, longer than "
                                         r"max_position_embeddings=8"):
        m(rng.integers(0, V, (3, 9)))
    with pytest.raises(ValueError, match=r"ids has shape \(8,\), expected \(B, T\)"):
        m(IDS[0])
    with pytest.raises(IndexError, match=r"token id 13 at ids\[1, 2\] is out of range for num_embeddings=13"):
        bad = IDS.copy()
        bad[1, 2] = V
        m(bad)
    with pytest.raises(ValueError, match="hidden_size=12 is not divisible by num_attention_heads=5"):
        config(num_attention_heads=5)
    with pytest.raises(ValueError, match="head_dim=3 must be even"):
        config(num_attention_heads=4)
    with pytest.raises(ValueError, match="rope_style must be 'halves' or 'pairs', got 'gptj'"):
        config(rope_style="gptj")
    with pytest.raises(ValueError, match="num_hidden_layers must be a positive int, got 0"):
        config(num_hidden_layers=0)
    with pytest.raises(TypeError, match="pass a LlamaConfig or its fields, not both"):
        Llama(config(), vocab_size=3)
    with pytest.raises(ValueError, match="transformers' Llama rotates halves"):
        config(rope_style="pairs").to_transformers()
    with pytest.raises(ValueError, match="with_rope_style: style must be 'halves' or 'pairs'"):
        m.with_rope_style("neox")


@pytest.mark.parametrize("tied", [True, False])
def test_a_model_changes_rotary_convention_without_changing_its_function(tied):
    pairs = model(rope_style="pairs", tie_word_embeddings=tied)
    halves = pairs.with_rope_style("halves")
    assert halves.config.rope_style == "halves" and pairs.config.rope_style == "pairs"
    np.testing.assert_allclose(halves(IDS).data, pairs(IDS).data, rtol=1e-11, atol=1e-12)
    assert (halves.lm_head.weight is halves.model.embed_tokens.weight) == tied
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not np.array_equal(halves.state_dict()[q], pairs.state_dict()[q])  # rows reordered
    v = "model.layers.0.self_attn.v_proj.weight"
    np.testing.assert_array_equal(halves.state_dict()[v], pairs.state_dict()[v])  # the rest as it was
    back = halves.with_rope_style("pairs")
    for name, array in pairs.state_dict().items():
        np.testing.assert_array_equal(back.state_dict()[name], array)
    same = Llama(config(rope_style="pairs", tie_word_embeddings=tied)).with_rope_style("pairs")
    assert same.config.rope_style == "pairs"


def torch_block(config, state, x):
    from llama_torch import Layer

    theirs = Layer(SimpleNamespace(**config)).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return theirs(torch.tensor(x))


def test_one_block_on_its_own_matches_torch_and_takes_any_leading_axes(oracle):
    from minigrad.models import LlamaBlock

    c = config(rope_style="pairs")
    block = LlamaBlock(c, dtype=np.float64, rng=0)
    draw = np.random.default_rng(5)
    block.load_state_dict({k: draw.normal(1.0 if v.ndim == 1 else 0.0, 0.4, v.shape)
                           for k, v in block.state_dict().items()})
    x = np.random.default_rng(6).standard_normal((2, 3, CONTEXT, D))
    out = block(mg.tensor(x)).data
    theirs = oracle(torch_block, dataclasses.asdict(c), block.state_dict(), x[1])
    np.testing.assert_allclose(out[1], theirs, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(out[0, 2], block(mg.tensor(x[0, 2])).data, rtol=1e-12)  # (T, d) alone
