"""The ops and modules TinyGPT is built from: gradchecked in float64, compared with PyTorch."""

import numpy as np
import pytest
from op_checks import arrays, assert_close, backward, check, leaf, leaves, torch_backward
from oracle import TF, torch

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F

rng = np.random.default_rng(0)


def causal(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)


# ---- gradchecks (float64, central differences) -------------------------------------------------

@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_gradcheck(affine, fast_and_plain):
    x = leaf((2, 3, 5))
    w, b = (leaf(5), leaf(5)) if affine else (None, None)
    inputs = [x] + ([w, b] if affine else [])
    check(lambda x, *wb: F.layer_norm(x, 5, *wb, eps=1e-5) if wb else F.layer_norm(x, 5), *inputs)


def test_layer_norm_over_two_axes_gradcheck(fast_and_plain):
    check(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), leaf((2, 3, 4)), leaf((3, 4)), leaf((3, 4)))


def test_masked_fill_gradcheck_and_zero_gradient_where_filled():
    mask = rng.random((3, 4)) < 0.4
    x = leaf((2, 3, 4))
    check(lambda x: x.masked_fill(mask, 2.5) * x, x)
    x.grad = None
    x.masked_fill(mask, 0.0).sum().backward()
    np.testing.assert_array_equal(x.grad, np.broadcast_to(~mask, x.shape).astype(float))


def test_causal_softmax_with_minus_inf_gradcheck():
    T = 4
    check(lambda s: (s.masked_fill(causal(T), float("-inf")).softmax(-1) * s).sum(), leaf((2, T, T)))


def test_where_gradcheck_broadcasts():
    cond = rng.random((3, 4)) < 0.5
    check(lambda a, b: F.where(cond, a, b), leaf((3, 1)), leaf((4,)))


@pytest.mark.parametrize("causal_mask", [True, False])
def test_scaled_dot_product_attention_gradcheck(causal_mask, fast_and_plain):
    q, k, v = leaf((2, 3, 4)), leaf((2, 5, 4)), leaf((2, 5, 3))
    if causal_mask:
        k, v = leaf((2, 3, 4)), leaf((2, 3, 3))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal_mask), q, k, v)


def test_scaled_dot_product_attention_is_the_masked_softmax_written_out(fast_and_plain):
    q, k, v = leaf((2, 2, 5, 4)), leaf((2, 2, 5, 4)), leaf((2, 2, 5, 3))
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = (q @ k.transpose(-2, -1)) * (1 / np.sqrt(4))
    plain = scores.masked_fill(causal(5), float("-inf")).softmax(dim=-1) @ v
    np.testing.assert_allclose(fused.data, plain.data, rtol=1e-12)
    weights = rng.standard_normal(fused.shape)
    grads = []
    for out in (fused, plain):
        for t in (q, k, v):
            t.grad = None
        (out * weights).sum().backward()
        grads.append([t.grad.copy() for t in (q, k, v)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_split_chunk_narrow_gradcheck():
    check(lambda x: sum((p * (i + 1.0)).sum() for i, p in enumerate(x.split(2, dim=1))), leaf((3, 5)))
    check(lambda x: sum((p * p * (i + 1.0)).sum() for i, p in enumerate(x.chunk(3, dim=-1))), leaf((2, 7)))
    check(lambda x: x.split([1, 3], dim=0)[1] * 2.0, leaf((4, 2)))


def test_shape_ops_gradcheck():
    check(lambda x: x.unsqueeze(1).squeeze(1).flatten() * x.flatten(), leaf((2, 3)))
    check(lambda x: x.squeeze().unsqueeze(-1).view(3, 2) ** 2, leaf((1, 6, 1)))


def test_sqrt_abs_gradcheck():
    check(lambda x: (x * x + 0.5).sqrt(), leaf((3, 4)))
    check(lambda x: (x + np.sign(x.data) * 0.1).abs(), leaf((3, 4)))  # away from the kink


def test_gelu_gradcheck_both_forms(fast_and_plain):
    check(lambda x: F.gelu(x), leaf((3, 4), 2.0))
    check(lambda x: nn.GELU("tanh")(x), leaf((3, 4), 2.0))


def test_dropout_gradcheck_with_a_fixed_mask():
    x = leaf((4, 5))
    check(lambda x: F.dropout(x, 0.3, training=True, rng=7), x)


# ---- against PyTorch (live where it is installed, recorded where not) ------------------------------

def torch_layer_norm(x, w, b):
    module = torch.nn.LayerNorm(8, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(w))
        module.bias.copy_(torch.tensor(b))
    (xt,) = leaves(torch, [x])
    out = module(xt)
    weights = torch_backward(out)
    return out, weights, [xt.grad, module.weight.grad, module.bias.grad]


def test_layer_norm_module_matches_torch(fast_and_plain, oracle):
    a, w, b = arrays((3, 4, 8), 8, 8, seed=1)
    a *= 3.0
    out_t, weights, grads_t = oracle(torch_layer_norm, a, w, b)
    x, ours = mg.tensor(a, requires_grad=True), nn.LayerNorm(8, dtype=np.float64)
    with mg.no_grad():
        ours.weight.copy_(w)
        ours.bias.copy_(b)
    out_m = ours(x)
    assert_close(out_m, out_t)
    backward(out_m, weights)
    for m, t in zip((x.grad, ours.weight.grad, ours.bias.grad), grads_t, strict=True):
        assert_close(m, t)


def torch_attention(q, k, v):
    qkv = leaves(torch, [q, k, v])
    out = TF.scaled_dot_product_attention(*qkv, is_causal=True)
    return out, torch_backward(out), [t.grad for t in qkv]


def test_scaled_dot_product_attention_matches_torch(fast_and_plain, oracle):
    values = arrays((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 5), seed=2)
    out_t, weights, grads_t = oracle(torch_attention, *values)
    qkv = leaves(mg, values)
    out_m = F.scaled_dot_product_attention(*qkv, is_causal=True)
    assert_close(out_m, out_t)
    backward(out_m, weights)
    for m, t in zip(qkv, grads_t, strict=True):
        assert_close(m.grad, t)


def torch_masked_softmax(s, mask):
    return torch.softmax(torch.tensor(s).masked_fill(torch.tensor(mask), float("-inf")), dim=-1)


def test_fully_masked_row_gives_what_torch_gives(oracle):
    (s,) = arrays((2, 4), seed=3)
    mask = np.array([[False, True, True, False], [True, True, True, True]])
    with np.errstate(invalid="ignore"):
        ours = F.softmax(mg.tensor(s).masked_fill(mask, float("-inf")), dim=-1)
    theirs = oracle(torch_masked_softmax, s, mask)
    np.testing.assert_array_equal(np.isnan(ours.data), np.isnan(theirs))
    assert np.isnan(ours.data[1]).all()
    assert_close(ours.data[0], theirs[0])
    assert ours.data[0, 1] == 0.0  # exactly zero, not exp(-1e9)


def torch_gelu(a, approximate):
    (x,) = leaves(torch, [a])
    out = TF.gelu(x, approximate=approximate)
    out.sum().backward()
    return out, x.grad


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gelu_matches_torch(approximate, dtype, fast_and_plain, oracle):
    a = np.linspace(-6, 6, 2001).astype(dtype)
    out_t, grad_t = oracle(torch_gelu, a, approximate)
    x = mg.tensor(a, requires_grad=True)
    out_m = F.gelu(x, approximate=approximate)
    assert out_m.dtype == a.dtype == out_t.dtype
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    assert_close(out_m, out_t, **tol)
    out_m.sum().backward()
    assert_close(x.grad, grad_t, **tol)


SPLITS = [("split", 4, 1), ("chunk", 4, 1), ("chunk", 3, 0)]  # (method, size or chunks, dim)


def torch_splits(a):
    return [[p for p in getattr(torch.tensor(a), method)(n, dim=dim)] for method, n, dim in SPLITS]


def test_split_chunk_match_torch_sizes(oracle):
    (a,) = arrays((3, 10), seed=4)
    for (method, n, dim), theirs in zip(SPLITS, oracle(torch_splits, a), strict=True):
        ours = getattr(mg.tensor(a), method)(n, dim=dim)
        assert [p.shape for p in ours] == [q.shape for q in theirs]
        for p, q in zip(ours, theirs):
            assert_close(p, q)


def test_dropout_is_seeded_scaled_and_off_in_eval():
    layer = nn.Dropout(0.25, rng=3)
    x = mg.ones(2000, dtype=np.float64)
    out = layer(x).data
    assert set(np.unique(out)) == {0.0, 1 / 0.75}
    assert abs((out == 0).mean() - 0.25) < 0.04
    np.testing.assert_array_equal(F.dropout(x, 0.25, rng=3).data, F.dropout(x, 0.25, rng=3).data)
    assert layer.eval()(x) is x
    assert nn.Dropout()(x) is x  # p=0 by default
    assert (F.dropout(x, 1.0, rng=0).data == 0).all()


# ---- modules ----------------------------------------------------------------------------------

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(3, 3, rng=i) for i in range(2)])
        self.parts = nn.ModuleDict({"norm": nn.LayerNorm(3), "drop": nn.Dropout(0.5)})
        self.seq = nn.Sequential(nn.Linear(3, 4, rng=5), nn.GELU(), nn.Linear(4, 2, rng=6))


def test_containers_name_parameters_as_torch_does():
    names = [n for n, _ in Net().named_parameters()]
    assert names == ["blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                     "parts.norm.weight", "parts.norm.bias", "seq.0.weight", "seq.0.bias",
                     "seq.2.weight", "seq.2.bias"]


def test_containers_index_iterate_and_chain():
    net = Net()
    assert len(net.blocks) == 2 and net.blocks[-1] is net.blocks[1]
    assert list(net.parts) == ["norm", "drop"] and net.parts["norm"] is net.parts.norm
    assert "drop" in net.parts and "conv" not in net.parts
    x = mg.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    expected = net.seq[2](net.seq[1](net.seq[0](x)))
    np.testing.assert_array_equal(net.seq(x).data, expected.data)


def test_train_and_eval_reach_every_submodule():
    net = Net()
    assert net.eval() is net
    assert not any(m.training for _, m in net.named_modules())
    net.train()
    assert all(m.training for _, m in net.named_modules())


def test_container_errors_name_what_was_wrong():
    with pytest.raises(TypeError, match="ModuleList: can only hold Modules, got int at index 0"):
        nn.ModuleList([3])
    with pytest.raises(IndexError, match="index 2 is out of range for 2 modules"):
        Net().blocks[2]
    with pytest.raises(KeyError, match="no module named 'conv'"):
        Net().parts["conv"]
    with pytest.raises(TypeError, match="ModuleDict: 'x' must be a Module, got float"):
        nn.ModuleDict({"x": 1.0})


def test_op_errors_name_arguments_and_shapes():
    x = mg.zeros(2, 3)
    with pytest.raises(ValueError, match=r"normalized_shape=\(4,\) must be its trailing axes"):
        F.layer_norm(x, 4)
    with pytest.raises(ValueError, match=r"weight has shape \(2,\), expected normalized_shape \(3,\)"):
        F.layer_norm(x, 3, mg.ones(2))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast to the tensor's shape"):
        x.masked_fill(np.ones((3, 3), bool), 0.0)
    with pytest.raises(TypeError, match="mask must be a bool array, got dtype int64"):
        x.masked_fill(np.ones((2, 3), int), 0.0)
    with pytest.raises(ValueError, match=r"sections \[1, 1\] add up to 2, but dim 1 has size 3"):
        x.split([1, 1], dim=1)
    with pytest.raises(IndexError, match=r"split\(\): dim 2 is out of range for shape \(2, 3\)"):
        x.split(1, dim=2)
    with pytest.raises(ValueError, match=r"shapes q \(2, 3\), k \(2, 4\), v \(2, 3\) do not fit"):
        F.scaled_dot_product_attention(x, mg.zeros(2, 4), x)
    with pytest.raises(ValueError, match="dropout: p must be a probability in"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="LayerNorm: normalized_shape must be a positive int"):
        nn.LayerNorm(0)


def test_shape_op_errors_name_the_argument():
    x = mg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"narrow\(\): start=2, length=2 does not fit dim 1 of size 3"):
        x.narrow(1, 2, 2)
    with pytest.raises(ValueError, match="chunk\\(\\): chunks must be a positive int, got 0"):
        x.chunk(0)
    with pytest.raises(ValueError, match="split\\(\\): split_size must be a positive int, got 0"):
        x.split(0)
    with pytest.raises(IndexError, match=r"squeeze\(\): dim -3 is out of range for shape \(2, 3\)"):
        x.squeeze(-3)
    with pytest.raises(TypeError, match="argmax\\(\\): dim must be an int, got 1.5"):
        x.argmax(dim=1.5)
    with pytest.raises(TypeError, match="where: condition must be a bool array, got dtype float64"):
        F.where(np.zeros(3), x, x)
    with pytest.raises(ValueError, match="GELU: approximate must be 'none' or 'tanh', got 'fast'"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="layer_norm: eps must be positive, got 0"):
        F.layer_norm(x, 3, eps=0)
