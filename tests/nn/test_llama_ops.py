"""The pieces of the Llama-style block: SiLU, RMSNorm, rotary embeddings (both conventions),
attention with masks, dropout and any leading axes, SwiGLU and CausalSelfAttention. Each is
gradchecked in float64 and compared with PyTorch (or a PyTorch reference of each convention)."""

import contextlib

import numpy as np
import pytest
from op_checks import arrays, assert_close, backward, check, leaf, leaves, torch_backward
from oracle import TF, torch

import minigrad as mg
from minigrad import nn
from minigrad.engine import ops
from minigrad.nn import functional as F

rng = np.random.default_rng(0)


# ---- SiLU ----------------------------------------------------------------------------------------

def test_silu_gradcheck_including_0d(fast_and_plain):
    check(F.silu, leaf(()))
    check(F.silu, leaf((3, 4), 3.0))
    check(lambda x: nn.SiLU()(x) * x, leaf((5,)))


def torch_silu(a):
    (x,) = leaves(torch, [a])
    out = TF.silu(x)
    out.sum().backward()
    return out, x.grad


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_silu_matches_torch_far_into_both_tails(dtype, fast_and_plain, oracle):
    a = np.concatenate([np.linspace(-8, 8, 401), [-1e4, -800.0, -100.0, 100.0, 800.0, 1e4]]).astype(dtype)
    out_t, grad_t = oracle(torch_silu, a)
    x = mg.tensor(a, requires_grad=True)
    out_m = F.silu(x)
    assert out_m.dtype == a.dtype == out_t.dtype
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=2e-6, atol=1e-6)
    assert_close(out_m, out_t, **tol)
    out_m.sum().backward()
    assert_close(x.grad, grad_t, **tol)


# ---- RMSNorm ------------------------------------------------------------------------------------

@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm_gradcheck(weighted):
    x = leaf((2, 3, 5))
    if weighted:
        check(lambda x, w: F.rms_norm(x, 5, w, eps=1e-6), x, leaf(5))
    else:
        check(lambda x: F.rms_norm(x, (5,), eps=1e-6), x)
    check(lambda x, w: F.rms_norm(x, 4, w, eps=1e-5), leaf(4), leaf(4))  # one position: x (d,)
    check(lambda x, w: F.rms_norm(x, (3, 4), w), leaf((2, 3, 4)), leaf((3, 4)))  # two axes as one


def torch_rms_norm(a, w, eps):
    x, wt = leaves(torch, [a, w])
    out = TF.rms_norm(x, (16,), wt, eps)
    return out, torch_backward(out), [x.grad, wt.grad]


def torch_rms_norm_module(a):
    """torch.nn.RMSNorm(16, eps=1e-6) in a's dtype: its parameters' names and its output on a."""
    module = torch.nn.RMSNorm(16, eps=1e-6, dtype=getattr(torch, a.dtype.name))
    return [n for n, _ in module.named_parameters()], module(torch.tensor(a))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rms_norm_matches_torch_function_and_module(dtype, fast_and_plain, oracle):
    a, w = arrays((4, 6, 16), 16, seed=1)
    a, w = (3 * a).astype(dtype), w.astype(dtype)
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == "float64" else dict(rtol=3e-6, atol=3e-6)
    for eps in (None, 1e-5):
        out_t, weights, grads_t = oracle(torch_rms_norm, a, w, eps)
        x, wm = leaves(mg, [a, w])
        out_m = F.rms_norm(x, (16,), wm, eps)
        assert out_m.dtype == a.dtype
        assert_close(out_m, out_t, **tol)
        backward(out_m, weights)
        assert_close(x.grad, grads_t[0], **tol)
        assert_close(wm.grad, grads_t[1], **tol)
    names, out_t = oracle(torch_rms_norm_module, a)
    ours = nn.RMSNorm(16, eps=1e-6, dtype=a.dtype)
    assert [n for n, _ in ours.named_parameters()] == names == ["weight"]
    assert_close(ours(mg.tensor(a)), out_t, **tol)


def test_rms_norm_removes_the_scale_of_each_position():
    x = rng.standard_normal((3, 8))
    out = F.rms_norm(mg.tensor(x), 8, eps=1e-12).data
    np.testing.assert_allclose(np.sqrt((out**2).mean(-1)), 1.0, rtol=1e-10)
    np.testing.assert_allclose(F.rms_norm(mg.tensor(7.0 * x), 8, eps=1e-12).data, out, rtol=1e-10)


def test_rms_norm_errors_name_the_shapes():
    x = mg.tensor(rng.standard_normal((2, 5)))
    with pytest.raises(ValueError, match=r"rms_norm: input has shape \(2, 5\), but normalized_shape=\(4,\)"):
        F.rms_norm(x, 4)
    with pytest.raises(ValueError, match=r"rms_norm: weight has shape \(3,\), expected normalized_shape"):
        F.rms_norm(x, 5, mg.tensor(np.ones(3)))
    with pytest.raises(ValueError, match="rms_norm: eps must be positive, got 0"):
        F.rms_norm(x, 5, eps=0)
    with pytest.raises(ValueError, match="RMSNorm: eps must be positive or None, got -1"):
        nn.RMSNorm(5, eps=-1)
    with pytest.raises(ValueError, match="RMSNorm: normalized_shape must be a positive int, got 0"):
        nn.RMSNorm(0)


# ---- rotary position embeddings ------------------------------------------------------------------

def halves_order(d):
    """The entries of a "pairs" vector in "halves" order: firsts of the pairs, then seconds."""
    return np.r_[np.arange(0, d, 2), np.arange(1, d, 2)]


@pytest.mark.parametrize("style", ["halves", "pairs"])
def test_rotary_gradcheck(style, fast_and_plain):
    check(lambda x: F.rotary_embedding(x, style=style), leaf((2, 5, 6)))
    check(lambda x: F.rotary_embedding(x, np.array([3, 1, 4]), theta=10.0, style=style) * x, leaf((3, 4)))
    check(lambda x: nn.RotaryEmbedding(4, 100.0, style)(x, np.array([[0, 1], [5, 9]])), leaf((2, 2, 4)))


def torch_rotary(a, positions, style):
    """The reference of tests/helpers/llama_torch.py for `style`: its output, W and the gradient of
    sum(out * W); and the other convention's output."""
    from llama_torch import ROTARY

    (xt,) = leaves(torch, [a])
    out = ROTARY[style](xt, torch.tensor(positions), 500.0)
    weights = torch_backward(out)
    other = ROTARY["pairs" if style == "halves" else "halves"](xt, torch.tensor(positions), 500.0)
    return out, weights, xt.grad, other


@pytest.mark.parametrize("style", ["halves", "pairs"])
def test_rotary_matches_the_torch_reference_of_its_convention(style, fast_and_plain, oracle):
    (a,) = arrays((2, 3, 7, 8), seed=2)
    positions = np.random.default_rng(3).integers(0, 50, (2, 1, 7))  # per sequence, shared by the heads
    out_t, weights, grad_t, other = oracle(torch_rotary, a, positions, style)
    x = mg.tensor(a, requires_grad=True)
    out_m = F.rotary_embedding(x, positions, theta=500.0, style=style)
    assert_close(out_m, out_t)
    backward(out_m, weights)
    assert_close(x.grad, grad_t)
    assert not np.allclose(out_m.data, other)  # the conventions do differ


def test_the_two_conventions_are_one_rotation_with_the_entries_reordered():
    x = rng.standard_normal((5, 8))
    order = halves_order(8)
    pairs = F.rotary_embedding(mg.tensor(x), style="pairs").data
    halves = F.rotary_embedding(mg.tensor(x[:, order]), style="halves").data
    np.testing.assert_allclose(halves, pairs[:, order], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("style", ["halves", "pairs"])
def test_rotary_keeps_lengths_and_scores_depend_on_relative_position(style):
    q, k = rng.standard_normal(8), rng.standard_normal(8)

    def at(v, p):
        return F.rotary_embedding(mg.tensor(v[None]), np.array([p]), style=style).data[0]

    np.testing.assert_allclose(np.linalg.norm(at(q, 13)), np.linalg.norm(q), rtol=1e-13)
    np.testing.assert_allclose(at(q, 7) @ at(k, 3), at(q, 24) @ at(k, 20), rtol=1e-10)  # both 4 apart
    assert not np.isclose(at(q, 7) @ at(k, 3), at(q, 7) @ at(k, 5))
    np.testing.assert_array_equal(at(q, 0), q)  # position 0 turns by nothing


def test_rotary_errors_name_what_was_wrong():
    x = mg.tensor(rng.standard_normal((4, 6)))
    with pytest.raises(ValueError, match="rotary_embedding: style must be one of"):
        F.rotary_embedding(x, style="interleaved")
    with pytest.raises(ValueError, match="must be even and positive"):
        F.rotary_embedding(mg.tensor(rng.standard_normal((4, 5))))
    with pytest.raises(TypeError, match="positions must be integer positions"):
        F.rotary_embedding(x, np.arange(4.0))
    with pytest.raises(ValueError, match=r"positions of shape \(3,\) do not fit x of shape \(4, 6\)"):
        F.rotary_embedding(x, np.arange(3))
    with pytest.raises(ValueError, match=r"positions of shape \(2, 4\) do not fit x of shape \(4, 6\)"):
        F.rotary_embedding(x, np.zeros((2, 4), np.int64))  # one sequence of x, positions for two
    with pytest.raises(ValueError, match=r"RotaryEmbedding: x has shape \(4, 6\), expected .*dim=8"):
        nn.RotaryEmbedding(8)(x)
    with pytest.raises(ValueError, match="RotaryEmbedding: dim must be even"):
        nn.RotaryEmbedding(7)


# ---- attention: masks, dropout, leading axes ------------------------------------------------------

def bool_mask(shape, p=0.4):
    mask = rng.random(shape) >= p
    mask[..., 0] = True  # every query sees some key, except where a test empties a row itself
    return mask


@pytest.mark.parametrize("kind", ["bool", "float", "float that learns"])
def test_attention_with_a_mask_gradcheck(kind, fast_and_plain):
    q, k, v = leaf((2, 3, 4)), leaf((2, 5, 4)), leaf((2, 5, 3))
    if kind == "bool":
        mask = bool_mask((3, 5))
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask), q, k, v)
    elif kind == "float":
        mask = rng.standard_normal((2, 1, 5))
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), q, k, v)
    else:
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, leaf((3, 5)))


def test_attention_any_leading_axes_gradcheck(fast_and_plain):
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), leaf((4, 3)), leaf((4, 3)),
          leaf((4, 2)))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), leaf((2, 1, 2, 3, 2)),
          leaf((2, 1, 2, 3, 2)), leaf((2, 1, 2, 3, 2)))


def test_attention_dropout_gradcheck_with_a_fixed_seed_and_off_at_zero(fast_and_plain):
    q, k, v = leaf((2, 4, 3)), leaf((2, 4, 3)), leaf((2, 4, 3))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True, rng=5),
          q, k, v)
    plain = F.scaled_dot_product_attention(q, k, v, is_causal=True).data
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True,
                                                                 rng=5).data, plain)
    dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True, rng=5).data
    assert not np.allclose(dropped, plain)
    assert (F.scaled_dot_product_attention(q, k, v, dropout_p=1.0, rng=5).data == 0).all()


def torch_attention(q, k, v, mask):
    """SDPA with this mask (a float one learns), scale 0.3: output, W, and the gradients of
    sum(out * W) for q, k, v (and a float mask)."""
    inputs = leaves(torch, [q, k, v] + ([mask] if mask.dtype.kind == "f" else []))
    t_mask = inputs[3] if len(inputs) == 4 else torch.tensor(mask)
    out = TF.scaled_dot_product_attention(*inputs[:3], attn_mask=t_mask, scale=0.3)
    return out, torch_backward(out), [t.grad for t in inputs]


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("leading", [(), (3,), (2, 3), (2, 1, 3)], ids=str)
def test_attention_with_a_mask_matches_torch(kind, leading, fast_and_plain, oracle):
    values = arrays((*leading, 6, 4), (*leading, 7, 4), (*leading, 7, 5), (6, 7), seed=4)
    if kind == "bool":
        mask = np.random.default_rng(5).random((6, 7)) >= 0.4
        mask[..., 0] = True
        mask[2] = False  # a query that may see nothing: zeros (PyTorch), not NaN
        values[3] = mask
    out_t, weights, grads_t = oracle(torch_attention, *values)
    inputs = leaves(mg, values[:3]) + (leaves(mg, values[3:]) if kind == "float" else [mask])
    out_m = F.scaled_dot_product_attention(*inputs[:3], attn_mask=inputs[3], scale=0.3)
    assert_close(out_m, out_t)
    backward(out_m, weights)
    for m, t in zip(inputs, grads_t, strict=kind == "float"):
        assert_close(m.grad, t)
    if kind == "bool":
        assert (out_m.data[..., 2, :] == 0).all() and (inputs[0].grad[..., 2, :] == 0).all()


def test_attention_bool_mask_is_the_additive_mask_of_zeros_and_minus_inf(fast_and_plain):
    q, k, v = leaf((2, 5, 4)), leaf((2, 5, 4)), leaf((2, 5, 3))
    mask = bool_mask((2, 5, 5))
    additive = np.where(mask, 0.0, -np.inf)
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, mask).data,
                               F.scaled_dot_product_attention(q, k, v, additive).data, rtol=1e-13)
    causal = np.tril(np.ones((5, 5), bool))
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, causal).data,
                               F.scaled_dot_product_attention(q, k, v, is_causal=True).data, rtol=1e-13)


@pytest.mark.parametrize("kind", ["causal", "bool", "float", "float that learns", "dropout"])
def test_fast_attention_twin_computes_what_the_plain_op_computes(kind, small_row_blocks):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    arrays = [f32(2, 3, 8, 4), f32(2, 3, 8, 4), f32(2, 3, 8, 4)]
    mask = {"causal": None, "bool": bool_mask((2, 1, 8, 8)), "float": f32(8, 8), "dropout": None,
            "float that learns": f32(3, 8, 8)}[kind]
    kwargs = {"is_causal": kind in ("causal", "dropout"), "dropout_p": 0.25 if kind == "dropout" else 0.0}
    results = []
    for fast in (True, False):
        tensors = [mg.tensor(a, requires_grad=True) for a in arrays]
        m = mg.tensor(mask, requires_grad=True) if kind == "float that learns" else mask
        with contextlib.nullcontext() if fast else mg.kernels.plain_only():
            out = ops.ScaledDotProductAttention.apply(*tensors, m, rng=np.random.default_rng(3), **kwargs)
            out.backward(np.linspace(-1, 1, out.data.size, dtype=np.float32).reshape(out.shape))
        learned = [m.grad] if kind == "float that learns" else []
        results.append([out.data] + [t.grad for t in tensors] + learned)
    for a, b in zip(*results, strict=True):
        assert a.dtype == b.dtype == np.float32 and np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_attention_errors_name_what_was_wrong():
    q = mg.tensor(rng.standard_normal((2, 3, 4)))
    with pytest.raises(ValueError, match="pass attn_mask or is_causal=True, not both"):
        F.scaled_dot_product_attention(q, q, q, np.ones((3, 3), bool), is_causal=True)
    with pytest.raises(ValueError, match=r"attn_mask has shape \(4, 3\), which does not broadcast to the "
                                         r"scores' shape \(2, 3, 3\)"):
        F.scaled_dot_product_attention(q, q, q, np.ones((4, 3), bool))
    with pytest.raises(ValueError, match=r"attn_mask has shape \(5, 2, 3, 3\), which does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, np.ones((5, 2, 3, 3), bool))  # would make 5 outputs
    with pytest.raises(TypeError, match="attn_mask must be bool .* got dtype int64"):
        F.scaled_dot_product_attention(q, q, q, np.ones((3, 3), np.int64))
    with pytest.raises(ValueError, match="dropout_p must be a probability in"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(ValueError, match="do not fit"):
        F.scaled_dot_product_attention(q, q[:1], q[:1])


def test_the_plain_op_called_without_a_mask_returns_three_gradients():
    q, k, v = leaf((2, 3, 4)), leaf((2, 3, 4)), leaf((2, 3, 4))
    ops.ScaledDotProductAttention.apply(q, k, v, is_causal=True).sum().backward()
    assert all(t.grad.shape == (2, 3, 4) for t in (q, k, v))


# ---- SwiGLU and CausalSelfAttention -------------------------------------------------------------

def torch_module(name, args, state, a):
    """llama_torch's module `name`(*args) in float64 holding `state`: its output on a, W, and the
    gradients of sum(out * W) for a and for each parameter by name."""
    import llama_torch

    module = getattr(llama_torch, name)(*args).double()
    module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    (x,) = leaves(torch, [a])
    out = module(x)
    weights = torch_backward(out)
    return out, weights, x.grad, {n: p.grad for n, p in module.named_parameters()}


def assert_module_matches_torch(oracle, ours, theirs, input_shape):
    """The torch module theirs = (class name in llama_torch, its arguments) given our weights by
    name: the outputs, the input's gradient and every parameter's gradient must agree."""
    (a,) = arrays(input_shape, seed=6)
    out_t, weights, grad_t, param_grads = oracle(torch_module, *theirs, ours.state_dict(), a)
    x = mg.tensor(a, requires_grad=True)
    out_m = ours(x)
    assert_close(out_m, out_t)
    backward(out_m, weights)
    assert_close(x.grad, grad_t)
    assert sorted(param_grads) == sorted(n for n, _ in ours.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, param_grads[name])


def test_swiglu_matches_torch_and_gradchecks(oracle):
    ours = nn.SwiGLU(6, 10, dtype=np.float64, rng=0)
    names = ["gate_proj.weight", "up_proj.weight", "down_proj.weight"]
    assert [n for n, _ in ours.named_parameters()] == names
    assert_module_matches_torch(oracle, ours, ("MLP", (6, 10)), (2, 3, 6))
    check(lambda x: nn.SwiGLU(3, 5, dtype=np.float64, rng=1)(x), leaf((2, 3)))


@pytest.mark.parametrize("style", ["halves", "pairs"])
def test_causal_self_attention_matches_torch(style, fast_and_plain, oracle):
    ours = nn.CausalSelfAttention(8, 2, rotary=nn.RotaryEmbedding(4, 10000.0, style), dtype=np.float64, rng=0)
    assert_module_matches_torch(oracle, ours, ("Attention", (8, 2, 4, 10000.0, style)), (3, 5, 8))


def test_causal_self_attention_takes_any_leading_axes_and_is_causal():
    attn = nn.CausalSelfAttention(8, 2, rotary=nn.RotaryEmbedding(4), dtype=np.float64, rng=0)
    x = rng.standard_normal((2, 3, 5, 8))
    out = attn(mg.tensor(x)).data
    assert out.shape == (2, 3, 5, 8)
    np.testing.assert_allclose(out[1, 2], attn(mg.tensor(x[1, 2])).data, rtol=1e-12)  # (T, d) alone
    changed = x.copy()
    changed[..., 3:, :] += 1.0  # later positions cannot change earlier outputs
    np.testing.assert_array_equal(attn(mg.tensor(changed)).data[..., :3, :], out[..., :3, :])
    positions = np.tile(np.arange(5) + 7, (2, 3, 1))  # every sequence shifted by 7: same scores
    np.testing.assert_allclose(attn(mg.tensor(x), positions).data, out, rtol=1e-10)
    check(lambda x: attn(x), leaf((2, 3, 8)))


def test_causal_self_attention_errors():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by n_heads=3"):
        nn.CausalSelfAttention(10, 3)
    with pytest.raises(ValueError, match="rotary turns 6 dimensions, but each head has head_dim=4"):
        nn.CausalSelfAttention(8, 2, rotary=nn.RotaryEmbedding(6))
    assert nn.CausalSelfAttention(10, 3, head_dim=4).q_proj.weight.shape == (12, 10)
