"""PyTorch's everyday ops (issue 24): each gradchecked in float64 (0-d included where the op
allows) and compared with torch, forward and backward; ties and zeros where PyTorch defines the
gradient by a rule; bad arguments refused with a message naming them."""

from types import SimpleNamespace

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

MG = SimpleNamespace(F=F, lib=mg)
TORCH = SimpleNamespace(F=TF, lib=torch)


# name: (fn(ns, *tensors), input shapes, (low, high) of the uniform draws)
CASES = {
    "sin": (lambda ns, x: x.sin(), [(3, 4)], (-3, 3)),
    "cos": (lambda ns, x: x.cos(), [(3, 4)], (-3, 3)),
    "erf": (lambda ns, x: x.erf(), [(3, 4)], (-2, 2)),
    "exp2": (lambda ns, x: x.exp2(), [(3, 4)], (-2, 2)),
    "log2": (lambda ns, x: x.log2(), [(3, 4)], (0.2, 3)),
    "rsqrt": (lambda ns, x: x.rsqrt(), [(3, 4)], (0.2, 3)),
    "sign": (lambda ns, x: x.sign() * x, [(3, 4)], (-2, 2)),
    "softplus": (lambda ns, x: ns.F.softplus(x), [(3, 4)], (-4, 4)),
    "softplus_beta_threshold": (lambda ns, x: ns.F.softplus(x, beta=2.0, threshold=3.0), [(3, 4)], (-3, 3)),
    "leaky_relu": (lambda ns, x: ns.F.leaky_relu(x, 0.2), [(3, 4)], (-2, 2)),
    "clamp_numbers": (lambda ns, x: x.clamp(-0.5, 0.7), [(3, 4)], (-2, 2)),
    "clamp_min_only": (lambda ns, x: x.clamp(min=0.1), [(3, 4)], (-2, 2)),
    "clip_max_only": (lambda ns, x: x.clip(max=0.3), [(3, 4)], (-2, 2)),
    "clamp_tensor_bounds": (lambda ns, x, lo, hi: x.clamp(lo, hi), [(3, 4), (4,), (3, 1)], (-2, 2)),
    "maximum": (lambda ns, a, b: a.maximum(b), [(3, 4), (4,)], (-2, 2)),
    "minimum": (lambda ns, a, b: ns.lib.minimum(a, b), [(3, 1), (4,)], (-2, 2)),
    "scalar_pow_tensor": (lambda ns, x: 2.5 ** x, [(3, 4)], (-2, 2)),
    "tensor_pow_tensor": (lambda ns, a, b: a ** b, [(3, 4), (4,)], (0.3, 2)),
    "logsumexp": (lambda ns, x: x.logsumexp(1), [(3, 4)], (-3, 3)),
    "logsumexp_dims_keepdim": (lambda ns, x: x.logsumexp((0, 2), keepdim=True), [(2, 3, 4)], (-3, 3)),
    "prod_all": (lambda ns, x: x.prod(), [(3, 4)], (0.5, 1.5)),
    "prod_dim": (lambda ns, x: x.prod(1, keepdim=True), [(3, 4)], (-2, 2)),
    "min_all": (lambda ns, x: x.min(), [(3, 4)], (-2, 2)),
    "amin_dim": (lambda ns, x: x.amin(1), [(3, 4)], (-2, 2)),
    "amax_dims": (lambda ns, x: x.amax((0, 1)), [(3, 4, 2)], (-2, 2)),
    "var_default": (lambda ns, x: x.var(1), [(3, 4)], (-2, 2)),
    "var_all_unbiased_false": (lambda ns, x: x.var(unbiased=False), [(3, 4)], (-2, 2)),
    "std_correction": (lambda ns, x: x.std(0, correction=0, keepdim=True), [(3, 4)], (-2, 2)),
    "std_all": (lambda ns, x: x.std(), [(3, 4)], (-2, 2)),
    "flip": (lambda ns, x: x.flip(0, 2) * x, [(2, 3, 4)], (-2, 2)),
    "expand": (lambda ns, x: x.expand(2, 3, 4) * ns.lib.arange(24.0, dtype=ns.lib.float64).reshape(2, 3, 4),
               [(3, 1)], (-2, 2)),
    "expand_keep": (lambda ns, x: x.expand(-1, 5).sin(), [(3, 1)], (-2, 2)),
    "unflatten": (lambda ns, x: x.unflatten(1, (2, -1)).sum(-1) * x[:, :2], [(3, 6)], (-2, 2)),
    "float_cast_round_trip": (lambda ns, x: x.float().double() * x, [(3, 4)], (-2, 2)),
    "to_dtype": (lambda ns, x: x.to(ns.lib.float32).to(ns.lib.float64).exp(), [(3, 4)], (-2, 2)),
}

# ops whose 0-d form PyTorch allows, gradchecked on a 0-d input too
ZERO_D = {
    "sin": lambda x: x.sin(), "cos": lambda x: x.cos(), "erf": lambda x: x.erf(),
    "exp2": lambda x: x.exp2(), "log2": lambda x: (x * x + 0.5).log2(),
    "rsqrt": lambda x: (x * x + 0.5).rsqrt(), "softplus": lambda x: F.softplus(x, beta=1.5),
    "leaky_relu": lambda x: F.leaky_relu(x), "clamp": lambda x: x.clamp(-10.0, 10.0),
    "maximum": lambda x: x.maximum(mg.tensor(-10.0, dtype=np.float64)),
    "minimum": lambda x: x.minimum(mg.tensor(10.0, dtype=np.float64)),
    "rpow": lambda x: 3.0 ** x, "pow_tensor": lambda x: (x * x + 0.5) ** x,
    "logsumexp": lambda x: x.logsumexp(0), "prod": lambda x: x.prod(), "min": lambda x: x.min(),
    "amin": lambda x: x.amin(), "var": lambda x: x.var(correction=0) + x, "flip": lambda x: x.flip(0),
    "expand": lambda x: x.expand(3, 2), "squeeze": lambda x: x.squeeze(0) * x,
    "cast": lambda x: x.float().double(),
}


def _inputs(shapes, low, high, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=s) for s in shapes]


# a pass through float32 rounds to ~1e-7, which central differences with eps=1e-6 would magnify
# to ~0.1: those cases step wider and allow float32's error (still far below a wrong gradient)
THROUGH_FLOAT32 = {"float_cast_round_trip", "to_dtype", "cast"}


def _gradcheck(fn, leaves, name):
    wide = dict(eps=1e-3, atol=1e-4, rtol=1e-4) if name in THROUGH_FLOAT32 else {}
    report = mg.gradcheck(fn, leaves, **wide)
    assert report.ok, str(report)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_float64(name):
    fn, shapes, (low, high) = CASES[name]
    leaves = [mg.tensor(a, requires_grad=True) for a in _inputs(shapes, low, high)]
    _gradcheck(lambda *xs: fn(MG, *xs), leaves, name)


@pytest.mark.parametrize("name", list(ZERO_D))
def test_gradcheck_zero_d(name):
    x = mg.tensor(np.float64(0.37), requires_grad=True)
    _gradcheck(ZERO_D[name], [x], name)


def torch_case(name, arrays):
    """CASES[name] in torch, and the gradients of sum(out * W), W drawn in out's shape (returned too)."""
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = CASES[name][0](TORCH, *leaves)
    weights = np.random.default_rng(2).normal(size=tuple(out.shape))
    (out * torch.tensor(weights)).sum().backward()
    return out, [leaf.grad for leaf in leaves], weights


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_forward_and_backward(name, oracle):
    fn, shapes, (low, high) = CASES[name]
    arrays = _inputs(shapes, low, high, seed=1)
    out_t, grads_t, weights = oracle(torch_case, name, arrays)
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    out_m = fn(MG, *ours)
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-10, atol=1e-12)
    (out_m * mg.tensor(weights)).sum().backward()
    for m, t in zip(ours, grads_t, strict=True):
        np.testing.assert_allclose(m.grad, t, rtol=1e-9, atol=1e-12)


# ---- where PyTorch's gradient is a rule, not a limit: ties, bounds, zeros ---------------------------

RULES = {  # name: fn(ns, *tensors)
    "maximum": lambda ns, a, b: a.maximum(b),
    "minimum": lambda ns, a, b: a.minimum(b),
    "clamp": lambda ns, x: x.clamp(1.0, 2.0),
    "clamp_tensor_bounds": lambda ns, x, lo, hi: x.clamp(lo, hi),
    "prod_dim": lambda ns, x: x.prod(1),
    "prod_all": lambda ns, x: x.prod(),
    "min_all": lambda ns, x: x.min(),
    "amin_dim": lambda ns, x: x.amin(1),
    "leaky_relu": lambda ns, x: ns.F.leaky_relu(x),
    "sign": lambda ns, x: x.sign(),
    "pow": lambda ns, a, b: a ** b,
}


def grads(ns, name, arrays):
    """RULES[name] on float64 leaves of ns.lib holding `arrays`: the output and the gradients of its sum."""
    leaves = [ns.lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = RULES[name](ns, *leaves)
    out.sum().backward()
    return out.detach(), [leaf.grad for leaf in leaves]


def torch_grads(name, arrays):
    return grads(TORCH, name, arrays)


def _grads_both(oracle, name, *arrays):
    """minigrad's gradients and torch's, after checking that the outputs are equal."""
    out_m, ours = grads(MG, name, arrays)
    out_t, theirs = oracle(torch_grads, name, arrays)
    np.testing.assert_array_equal(out_m.data, out_t)
    return ours, theirs


@pytest.mark.parametrize("which", ["maximum", "minimum"])
def test_ties_split_the_gradient_as_torch(which, oracle):
    ours, theirs = _grads_both(oracle, which, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0])
    for m, t in zip(ours, theirs):
        np.testing.assert_array_equal(m, t)
    np.testing.assert_array_equal(ours[0] + ours[1], [1.0, 1.0, 1.0])  # nothing lost at the tie


def test_clamp_at_and_across_its_bounds_as_torch(oracle):
    x = [0.0, 1.0, 1.5, 2.0, 3.0]
    ours, theirs = _grads_both(oracle, "clamp", x)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], [0, 1, 1, 1, 0])  # a value on a bound keeps G
    # tensor bounds, with a row where min > max (the result is max there, as torch)
    lo, hi = [1.0, 1.0, 3.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0]
    ours, theirs = _grads_both(oracle, "clamp_tensor_bounds", x, lo, hi)
    for m, t in zip(ours, theirs):
        np.testing.assert_array_equal(m, t)


def test_prod_with_zeros_as_torch(oracle):
    rows = [[0.0, 2.0, 3.0], [0.0, 0.0, 2.0], [1.0, 2.0, 3.0]]
    ours, theirs = _grads_both(oracle, "prod_dim", rows)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0][0], [6.0, 0.0, 0.0])  # only the zero's slope survives
    ours, theirs = _grads_both(oracle, "prod_all", [[0.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_min_and_amin_share_ties_as_torch(oracle):
    for name in ("min_all", "amin_dim"):
        ours, theirs = _grads_both(oracle, name, [[1.0, 1.0, 3.0], [2.0, 0.5, 0.5]])
        np.testing.assert_array_equal(ours[0], theirs[0])


def test_leaky_relu_and_sign_at_zero_as_torch(oracle):
    for name in ("leaky_relu", "sign"):
        ours, theirs = _grads_both(oracle, name, [0.0, -1.0, 2.0])
        np.testing.assert_array_equal(ours[0], theirs[0])


def test_pow_of_zero_base_as_torch(oracle):
    ours, theirs = _grads_both(oracle, "pow", [0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    for m, t in zip(ours, theirs):
        np.testing.assert_array_equal(m, t)


def test_logsumexp_of_large_and_minus_inf_entries():
    x = mg.tensor([[1000.0, 1000.0], [-np.inf, 0.0], [-np.inf, -np.inf]], dtype=np.float64)
    out = x.logsumexp(1).data
    np.testing.assert_allclose(out[:2], [1000.0 + np.log(2.0), 0.0])
    assert out[2] == -np.inf


def torch_var_of_one_entry(correction):
    return torch.tensor([2.0], dtype=torch.float64).var(correction=correction).item()


def test_var_with_too_few_entries_is_nan_or_inf_as_torch(oracle):
    for correction in (1, 2):
        ours = mg.tensor([2.0], dtype=np.float64).var(correction=correction).item()
        np.testing.assert_equal(ours, oracle(torch_var_of_one_entry, correction))


# ---- shapes and dtypes that PyTorch defines --------------------------------------------------------

def test_squeeze_of_a_zero_d_tensor_returns_it():
    x = mg.tensor(2.0)
    assert x.squeeze().shape == () and x.squeeze(0).shape == () and x.squeeze(-1).item() == 2.0
    with pytest.raises(IndexError, match=r"squeeze\(\): dim 1 is out of range"):
        x.squeeze(1)


def test_flip_copies_and_expand_views():
    x = mg.tensor(np.arange(3.0).reshape(3, 1))
    flipped = x.flip(0)
    assert not np.shares_memory(flipped.data, x.data)
    np.testing.assert_array_equal(flipped.data[:, 0], [2.0, 1.0, 0.0])
    expanded = x.expand(2, 3, 4)
    assert expanded.shape == (2, 3, 4) and np.shares_memory(expanded.data, x.data)
    assert x.expand_as(mg.zeros(3, 5)).shape == (3, 5)


def test_dtype_conversions():
    x = mg.tensor([1.5, -2.0, 0.0])
    assert mg.float32 == np.float32 and mg.long == np.int64 and mg.bool == np.bool_
    assert x.dtype == mg.float32 and x.double().dtype == mg.float64 and x.half().dtype == mg.float16
    assert x.long().dtype == mg.int64 and x.long().tolist() == [1, -2, 0]
    assert x.int().dtype == mg.int32 and x.bool().tolist() == [True, True, False]
    assert x.to(mg.float64).dtype == np.float64 and x.to("float64").dtype == np.float64
    assert x.to(mg.tensor([1], dtype=np.int64)).dtype == np.int64
    assert x.to(mg.float32) is x and x.to("cpu") is x and x.to(mg.float32, copy=True) is not x
    assert x.type() == "float32" and x.type(mg.int64).dtype == np.int64
    assert mg.tensor([1, 2]).float().dtype == np.float32


MIXED = {  # name: fn(ns, int tensor)
    "clamp": lambda ns, t: t.clamp(0.5, 1.5),
    "maximum": lambda ns, t: t.maximum(ns.lib.tensor(0.5) if ns is TORCH else 0.5),
    "clamp_max_int": lambda ns, t: t.clamp(max=1),
    "sin": lambda ns, t: t.sin(),
    "erf": lambda ns, t: t.erf(),
    "exp2": lambda ns, t: t.exp2(),
    "logsumexp": lambda ns, t: t.logsumexp(0),
    "rpow": lambda ns, t: 2.5 ** t,
    "float_rsqrt": lambda ns, t: t.float().rsqrt(),
}


def torch_mixed(name):
    return MIXED[name](TORCH, torch.tensor([0, 1, 2]))


def test_mixed_dtypes_promote_as_torch(oracle):
    for name, fn in MIXED.items():
        out_m, out_t = fn(MG, mg.tensor([0, 1, 2])), oracle(torch_mixed, name)
        assert out_m.dtype == out_t.dtype, name
        np.testing.assert_allclose(out_m.data, out_t, rtol=1e-6, err_msg=name)


def test_float_cast_carries_the_gradient_back_in_the_input_dtype():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * mg.tensor([3.0, 4.0], dtype=np.float64)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, [3.0, 4.0])


def test_casts_to_integers_and_bools_leave_the_graph():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    assert not x.long().requires_grad and not x.bool().requires_grad


def test_manual_seed_repeats_randn_and_init():
    mg.manual_seed(7)
    a, layer_a = mg.randn(4), mg.nn.Linear(3, 2)
    mg.manual_seed(7)
    b, layer_b = mg.randn(4), mg.nn.Linear(3, 2)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(layer_a.weight.data, layer_b.weight.data)
    assert not np.array_equal(mg.randn(4).data, a.data)  # the stream goes on


def test_activation_modules():
    x = mg.tensor([-1.0, 0.5])
    np.testing.assert_array_equal(mg.nn.ReLU()(x).data, [0.0, 0.5])
    np.testing.assert_allclose(mg.nn.Tanh()(x).data, np.tanh([-1.0, 0.5]), rtol=1e-6)
    np.testing.assert_allclose(mg.nn.Sigmoid()(x).data, 1 / (1 + np.exp([1.0, -0.5])), rtol=1e-6)
    assert "ReLU" in repr(mg.nn.Sequential(mg.nn.Linear(2, 2), mg.nn.ReLU()))


# ---- errors ----------------------------------------------------------------------------------------

def test_bad_arguments_are_refused_with_their_name():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match="clamp\\(\\): at least one of min and max"):  # as torch
        x.clamp()
    with pytest.raises(ValueError, match="softplus: beta must be nonzero"):
        F.softplus(x, beta=0)
    with pytest.raises(TypeError, match="prod\\(\\): dim must be one int"):
        x.prod((0, 1))
    with pytest.raises(IndexError, match="logsumexp\\(\\): dim 2 is out of range"):
        x.logsumexp(2)
    with pytest.raises(TypeError, match="var\\(\\): got both unbiased= and correction="):
        x.var(unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="flip\\(\\): dims \\(0, -2\\) name an axis twice"):
        x.flip(0, -2)
    with pytest.raises(ValueError, match=r"expand\(\): shape \(2, 2\) cannot be expanded to \(3, 2\)"):
        x.expand(3, 2)
    with pytest.raises(ValueError, match=r"expand\(\): 1 sizes \(4,\) are fewer"):
        x.expand(4)
    with pytest.raises(ValueError, match=r"unflatten\(\): sizes \(3, -1\) do not split dim 1 of size 2"):
        x.unflatten(1, (3, -1))
    with pytest.raises(TypeError, match="to\\(\\): dtype must be a bool, integer or float dtype"):
        x.to("complex64")
    with pytest.raises(ValueError, match="to\\(\\): minigrad runs on the CPU only, got device='cuda'"):
        x.to("cuda")
    with pytest.raises(TypeError, match="manual_seed: seed must be a non-negative int"):
        mg.manual_seed(1.5)
    with pytest.raises(TypeError, match="maximum\\(\\): other must be a tensor or a number"):
        x.maximum(None)
    with pytest.raises(TypeError, match="~: needs bool or integer tensors, got dtype float32"):
        _ = ~x
