"""The way onward: a minigrad Llama checkpoint loads into transformers' LlamaForCausalLM with the
matching config and gives the same logits, and a LlamaForCausalLM's weights load back. Skips
cleanly where transformers is not installed (`pip install -e ".[onward]"`)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.models import Llama, LlamaConfig

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

V, CONTEXT = 50, 16
rng = np.random.default_rng(0)
IDS = rng.integers(0, V, (2, CONTEXT))


def minigrad_model(tied, rng=0):
    config = LlamaConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         max_position_embeddings=CONTEXT, intermediate_size=48, rope_theta=500.0,
                         rms_norm_eps=1e-6, tie_word_embeddings=tied)
    m = Llama(config, rng=rng)
    g = np.random.default_rng(rng + 1)
    for p in m.parameters():  # weights of a trained size, so every piece changes the logits
        p.data[...] = g.normal(1.0 if p.ndim == 1 else 0.0, 0.3, p.shape)
    return m


def transformers_model(config: LlamaConfig):
    hf_config = transformers.LlamaConfig(**config.to_transformers())
    hf_config.rope_theta = config.rope_theta  # transformers 4 reads this name
    return transformers.LlamaForCausalLM(hf_config).eval()


# transformers computes the rotary angles and RMSNorm's statistics in float32: float32 agreement
RTOL, ATOL = 1e-4, 1e-4


@pytest.mark.parametrize("tied", [True, False])
def test_a_minigrad_checkpoint_runs_in_transformers_with_the_same_logits(tmp_path, tied):
    m = minigrad_model(tied)
    mg.save(m, tmp_path / "llama.safetensors")
    hf = transformers_model(m.config)
    assert hf.config.tie_word_embeddings == tied and hf.config.head_dim == m.config.head_dim
    state = {k: torch.from_numpy(v) for k, v in mg.load(tmp_path / "llama.safetensors").items()}
    hf.load_state_dict(state)  # strict: the same names, every one
    assert (hf.lm_head.weight is hf.model.embed_tokens.weight) == tied
    with torch.no_grad():
        theirs = hf(torch.tensor(IDS)).logits.numpy()
    ours = m(IDS).data
    assert np.abs(ours).max() > 1.0  # logits that differ from token to token
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("tied", [True, False])
def test_transformers_weights_come_back_into_minigrad(tied):
    hf = transformers_model(minigrad_model(tied).config)
    with torch.no_grad():  # weights of its own, as after training there
        for p in hf.parameters():
            p.normal_(0.0, 0.3)
        theirs = hf(torch.tensor(IDS)).logits.numpy()
    back = minigrad_model(tied, rng=5)
    back.load_state_dict({k: v.numpy() for k, v in hf.state_dict().items()})
    np.testing.assert_allclose(back(IDS).data, theirs, rtol=RTOL, atol=ATOL)
    assert (back.lm_head.weight is back.model.embed_tokens.weight) == tied


def test_pairs_would_not_carry_over_unpermuted():
    """Why the default is "halves": the same weights read with the other convention give other logits."""
    m = minigrad_model(True)
    pairs = Llama(LlamaConfig(**{**m.config.__dict__, "rope_style": "pairs"}))
    pairs.load_state_dict(m.state_dict())
    hf = transformers_model(m.config)
    hf.load_state_dict({k: torch.from_numpy(v) for k, v in m.state_dict().items()})
    with torch.no_grad():
        theirs = hf(torch.tensor(IDS)).logits.numpy()
    assert not np.allclose(pairs(IDS).data, theirs, rtol=RTOL, atol=ATOL)


def test_a_model_trained_with_pairs_goes_to_transformers_after_with_rope_style():
    pairs = Llama(LlamaConfig(**{**minigrad_model(True).config.__dict__, "rope_style": "pairs"}))
    pairs.load_state_dict(minigrad_model(True, rng=7).state_dict())
    halves = pairs.with_rope_style("halves")
    hf = transformers_model(halves.config)
    hf.load_state_dict({k: torch.from_numpy(v) for k, v in halves.state_dict().items()})
    with torch.no_grad():
        theirs = hf(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(pairs(IDS).data, theirs, rtol=RTOL, atol=ATOL)
