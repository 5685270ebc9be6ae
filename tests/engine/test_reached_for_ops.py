"""Ops PyTorch users reach for that tinygrad's op tests showed missing: tan, the hyperbolic and
inverse trigonometric functions, log10, floor / ceil / trunc / round, lerp, logaddexp, isclose;
the activations elu, selu, celu, hardtanh, relu6, hardsigmoid, hardswish, softsign, mish;
F.normalize and F.pad; eye and linspace; sort, argsort and topk; repeat_interleave and roll;
attention with fewer key/value heads (enable_gqa); and the RuntimeError PyTorch raises for an
integer tensor to a negative power. Each differentiable one gradchecked in float64 (0-d
included) and compared with torch (live or recorded) forward and backward; bad arguments
refused with a message naming them."""

import numpy as np
import pytest
from op_checks import check
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

rng = np.random.default_rng(5)
MATRIX = rng.normal(size=(4, 5)) * 2

# name: fn(lib, F, *inputs) for minigrad or torch alike
CASES = {}


def case(name, fn):
    CASES[name] = fn
    return name


def _run(lib, functional, name, values):
    """CASES[name] on leaves holding `values` (float ones require grad), and the gradient of
    sum(w * out) for each input, w seeded; the output may be a pair, whose first part is used."""
    leaves = [lib.tensor(v, requires_grad=v.dtype.kind == "f") for v in values]
    out = CASES[name](lib, functional, *leaves)
    weights = np.random.default_rng(2).normal(size=tuple(out.shape))
    if out.requires_grad:
        (out * lib.tensor(weights)).sum().backward()
    return out, [getattr(t, "grad", None) for t in leaves]


def torch_case(name, values):
    return _run(torch, TF, name, values)


def _against_torch(oracle, name, *values, rtol=1e-10, atol=1e-12):
    values = [np.asarray(v) for v in values]
    out_t, grads_t = oracle(torch_case, name, values)
    out_m, grads_m = _run(mg, F, name, values)
    assert out_m.shape == out_t.shape and out_m.dtype == out_t.dtype
    assert out_t.size == 0 or not np.isnan(out_t).all(), "a comparison of only NaN compares nothing"
    np.testing.assert_allclose(out_m.data, out_t, rtol=rtol, atol=atol)
    for mine, theirs, value in zip(grads_m, grads_t, values, strict=True):
        if value.dtype.kind == "f" and out_m.requires_grad:
            np.testing.assert_allclose(np.zeros(value.shape) if mine is None else mine,
                                       np.zeros(value.shape) if theirs is None else theirs,
                                       rtol=rtol, atol=atol)


def _leaf(value):
    return mg.tensor(np.asarray(value, np.float64), requires_grad=True)


# ---- tan, the hyperbolic and inverse functions, log10 ----------------------------------------------

# name: inputs inside its domain (asin's and atanh's (-1, 1), acosh's (1, inf), log10's (0, inf))
UNARY = {
    "tan": rng.uniform(-1.4, 1.4, (3, 4)), "sinh": rng.normal(size=(3, 4)) * 3,
    "cosh": rng.normal(size=(3, 4)) * 3, "asin": rng.uniform(-0.95, 0.95, (3, 4)),
    "acos": rng.uniform(-0.95, 0.95, (3, 4)), "atan": rng.normal(size=(3, 4)) * 3,
    "asinh": rng.normal(size=(3, 4)) * 3, "acosh": rng.uniform(1.05, 9, (3, 4)),
    "atanh": rng.uniform(-0.95, 0.95, (3, 4)), "log10": rng.uniform(0.05, 50, (3, 4)),
}
for _name in UNARY:
    case(_name, lambda lib, TF, x, name=_name: getattr(x, name)())


@pytest.mark.parametrize("name", list(UNARY))
def test_a_unary_function_matches_torch(name, oracle):
    _against_torch(oracle, name, UNARY[name])


@pytest.mark.parametrize("name", list(UNARY))
def test_a_unary_function_gradchecks_zero_d_too(name):
    x = UNARY[name]
    check(lambda t: getattr(t, name)(), _leaf(x))
    check(lambda t: getattr(t, name)(), _leaf(x[0, 0]))


@pytest.mark.parametrize("name", list(UNARY))
def test_a_unary_function_of_ints_is_float32(name):
    assert getattr(mg.tensor([2, 3]), name)().dtype == np.float32


def test_outside_the_domain_is_nan_as_torch():
    outside = np.array([-2.0, 2.0])
    for name in ("asin", "acos", "atanh"):
        assert np.isnan(getattr(mg.tensor(outside), name)().data).all()
    assert np.isnan(mg.tensor([0.5]).acosh().data).all()
    assert mg.tensor([1.0, -1.0]).atanh().data.tolist() == [np.inf, -np.inf]


# ---- floor, ceil, trunc, round ------------------------------------------------------------------------

EDGES = np.array([1.499, 1.5, 1.501, 1.0, 2.1, 0.0, -5.0, -2.499, -2.5, -2.501, 2.5, -1.5, 1e12, -0.5])
ROUNDING = {how: case(how, lambda lib, TF, x, how=how: getattr(x, how)())
            for how in ("floor", "ceil", "trunc", "round")}
case("round_2", lambda lib, TF, x: x.round(decimals=2))


@pytest.mark.parametrize("name", [*ROUNDING, "round_2"])
def test_rounding_matches_torch_with_a_zero_gradient(name, oracle):
    _against_torch(oracle, name, EDGES)
    _against_torch(oracle, name, MATRIX * 10)


def test_round_takes_a_half_to_the_even_neighbour_and_ints_stay_ints():
    assert mg.tensor([0.5, 1.5, 2.5, -2.5]).round().data.tolist() == [0.0, 2.0, 2.0, -2.0]
    x = _leaf([0.3, 2.7])
    (x.floor() * 3 + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # the step passes 0, the other path 1
    ints = mg.tensor([3, -4])
    for how in ROUNDING:
        assert getattr(ints, how)().dtype == np.int64
        assert getattr(ints, how)().data.tolist() == [3, -4]


# ---- lerp, logaddexp, isclose -------------------------------------------------------------------------

case("lerp", lambda lib, TF, a, b, w: a.lerp(b, w))
case("lerp_number", lambda lib, TF, a, b: a.lerp(b, 0.3))
case("logaddexp", lambda lib, TF, a, b: a.logaddexp(b))


def test_lerp_matches_torch(oracle):
    a, b, w = rng.normal(size=(3, 3, 4, 5))
    _against_torch(oracle, "lerp", a, b, w)
    _against_torch(oracle, "lerp_number", a, b)
    check(lambda s, e, w: s.lerp(e, w), _leaf(a[0]), _leaf(b[0]), _leaf(w[0]))
    check(lambda s, e: s.lerp(e, 0.7), _leaf(1.5), _leaf(-2.0))


def test_logaddexp_matches_torch_without_overflow(oracle):
    _against_torch(oracle, "logaddexp", MATRIX, MATRIX.T[:1].T)
    _against_torch(oracle, "logaddexp", np.array([1.0, 2000, 30000, -800]), np.array([-1.0, 2, 3, -801]))
    check(lambda a, b: a.logaddexp(b), _leaf(MATRIX), _leaf(MATRIX[:, :1]))
    check(lambda a, b: a.logaddexp(b), _leaf(0.3), _leaf(-1.2))


def torch_logaddexp_of_infinities(a, b):
    return torch.logaddexp(torch.tensor(a), torch.tensor(b))


def test_logaddexp_of_infinities_is_torchs(oracle):
    a, b = np.array([-np.inf, np.inf, -np.inf, 5.0]), np.array([-np.inf, np.inf, 1.0, np.inf])
    np.testing.assert_array_equal(mg.tensor(a).logaddexp(b).data, oracle(torch_logaddexp_of_infinities, a, b))


def torch_isclose(a, b, kwargs):
    return torch.tensor(a).isclose(torch.tensor(b), **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"atol": 0.0}, {"rtol": 0.01}, {"equal_nan": True}])
def test_isclose_matches_torch(kwargs, oracle):
    a = np.array([1.0, 1e-7, 1e-8, np.nan, np.inf, 100.0, -np.inf])
    b = np.array([1.0 + 1e-6, 0.0, 0.0, np.nan, np.inf, 100.5, np.inf])
    ours = mg.tensor(a).isclose(mg.tensor(b), **kwargs)
    assert ours.dtype == np.bool_
    np.testing.assert_array_equal(ours.data, oracle(torch_isclose, a, b, kwargs))


# ---- activations --------------------------------------------------------------------------------------

ACTIVATIONS = {
    "elu": lambda lib, TF, x: TF.elu(x), "elu_alpha": lambda lib, TF, x: TF.elu(x, alpha=0.1),
    "selu": lambda lib, TF, x: TF.selu(x), "celu": lambda lib, TF, x: TF.celu(x, alpha=0.5),
    "hardtanh": lambda lib, TF, x: TF.hardtanh(x, -1.5, 2.0), "relu6": lambda lib, TF, x: TF.relu6(x),
    "hardsigmoid": lambda lib, TF, x: TF.hardsigmoid(x), "hardswish": lambda lib, TF, x: TF.hardswish(x),
    "softsign": lambda lib, TF, x: TF.softsign(x), "mish": lambda lib, TF, x: TF.mish(x),
}
for _name, _fn in ACTIVATIONS.items():
    case(_name, _fn)
WIDE = np.linspace(-8.3, 8.1, 24).reshape(4, 6)  # every piece of each, no input at a kink


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_an_activation_matches_torch(name, oracle):
    # PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32, even in float64
    # (measured: 3e-8 relative); every other gradient here agrees to 1e-10
    rtol = 1e-7 if name == "hardsigmoid" else 1e-10
    _against_torch(oracle, name, WIDE, rtol=rtol)
    _against_torch(oracle, name, np.array(-0.7), rtol=rtol)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_an_activation_gradchecks_zero_d_too(name):
    check(lambda x: ACTIVATIONS[name](mg, F, x), _leaf(WIDE))
    check(lambda x: ACTIVATIONS[name](mg, F, x), _leaf(0.4))


def torch_at_the_bounds(x):
    t = torch.tensor(x, requires_grad=True)
    TF.hardtanh(t, -1.0, 1.0).sum().backward()
    u = torch.tensor(x, requires_grad=True)
    TF.elu(u).sum().backward()
    return t.grad, u.grad


def test_hardtanh_passes_no_gradient_at_its_bounds_and_elu_none_nan_far_out(oracle):
    x = np.array([-1.0, 1.0, 0.0, 800.0, -800.0])
    hard, elu = _leaf(x), _leaf(x)
    F.hardtanh(hard).sum().backward()
    F.elu(elu).sum().backward()
    theirs_hard, theirs_elu = oracle(torch_at_the_bounds, x)
    np.testing.assert_array_equal(hard.grad, theirs_hard)
    np.testing.assert_array_equal(elu.grad, theirs_elu)


def test_activations_refuse_bad_arguments():
    with pytest.raises(ValueError, match=r"hardtanh: min_val \(2\) cannot be greater than max_val \(1\)"):
        F.hardtanh(mg.zeros(2), 2, 1)
    with pytest.raises(RuntimeError, match="celu: alpha must be nonzero"):
        F.celu(mg.zeros(2), 0.0)


# ---- F.normalize, F.pad ------------------------------------------------------------------------------

NORMALIZE = {(p, dim): case(f"normalize_{p}_{dim}", lambda lib, TF, x, p=p, dim=dim: TF.normalize(x, p, dim))
             for p, dim in [(2.0, 1), (2.0, 0), (1.0, -1), (3.0, 1), (0, 1), (-1.0, 1), (float("inf"), 0)]}


@pytest.mark.parametrize("p, dim", list(NORMALIZE))
def test_normalize_matches_torch(p, dim, oracle):
    x = MATRIX.copy()
    if p > 0:
        x[1] = 0.0  # a row of zeros stays zeros, its gradient finite
    _against_torch(oracle, NORMALIZE[p, dim], x)


def torch_normalize_half(x):
    t = torch.tensor(x, requires_grad=True)
    out = TF.normalize(t, dim=1)
    out.sum().backward()
    return out, t.grad


def test_normalize_of_half_entries_above_256_reduces_in_float32(oracle):
    x = np.array([[300.0, 200.0, -100.0, 50.0], [0.001, 0.002, -0.001, 0.0005]], np.float16)
    t = mg.tensor(x, requires_grad=True)
    out = F.normalize(t, dim=1)
    out.sum().backward()
    theirs, theirs_grad = oracle(torch_normalize_half, x)
    assert out.dtype == t.grad.dtype == np.float16
    np.testing.assert_allclose(out.data.astype(np.float32), theirs.astype(np.float32), rtol=1e-3)
    np.testing.assert_allclose(t.grad.astype(np.float32), theirs_grad.astype(np.float32),
                               rtol=1e-2, atol=1e-3)


def test_normalize_gradchecks_and_makes_unit_rows():
    check(lambda x: F.normalize(x, dim=-1), _leaf(MATRIX))
    rows = F.normalize(mg.tensor(MATRIX), dim=1).data
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-12)


PADS = {"last": ((1, 2), 0.0), "two_axes": ((0, 1, 2, 0), -1.5), "crop": ((-1, 2, 1, -2), 0.0),
        "three_axes": ((1, 1, 0, 0, 2, 1), 3.0)}
for _name, (_pad, _value) in PADS.items():
    case(f"pad_{_name}", lambda lib, TF, x, pad=_pad, value=_value: TF.pad(x, pad, value=value))


@pytest.mark.parametrize("name", list(PADS))
def test_pad_matches_torch(name, oracle):
    _against_torch(oracle, f"pad_{name}", rng.normal(size=(2, 3, 4)))


def test_pad_gradchecks_and_names_a_bad_pad():
    check(lambda x: F.pad(x, (1, -1, 2, 0), value=2.0), _leaf(MATRIX))
    with pytest.raises(RuntimeError, match=r"pad: pad has 3 entries; it needs pairs"):
        F.pad(mg.zeros(2, 3), (1, 1, 1))
    with pytest.raises(RuntimeError, match=r"pad: pad has 4 entries, more than 2 per axis of the tensor's "
                                           r"shape \(3,\)"):
        F.pad(mg.zeros(3), (1, 1, 1, 1))
    with pytest.raises(mg.ShapeError, match=r"pad: cropping 2 and 2 from axis 0 of shape \(3,\)"):
        F.pad(mg.zeros(3), (-2, -2))
    with pytest.raises(NotImplementedError, match="mode 'reflect' is not supported"):
        F.pad(mg.zeros(3), (1, 1), mode="reflect")


# ---- eye, linspace ----------------------------------------------------------------------------------

def torch_eye_and_linspace(n, m, start, end, steps, int_dtype):
    dtype = torch.int32 if int_dtype else torch.float32
    return torch.eye(n, m), torch.linspace(start, end, steps, dtype=dtype)


@pytest.mark.parametrize("n, m, start, end, steps, int_dtype", [
    (3, 5, 5, 10, 3, False), (4, 4, -5.5, 5.5, 10, False), (0, 0, 5, 10, 0, False), (1, 3, 5, 10, 1, False),
    (5, 2, 5, -5, 20, True), (2, 2, 5, 10, 20, True)])
def test_eye_and_linspace_match_torch(n, m, start, end, steps, int_dtype, oracle):
    eye_t, line_t = oracle(torch_eye_and_linspace, n, m, start, end, steps, int_dtype)
    eye, line = mg.eye(n, m), mg.linspace(start, end, steps, dtype=mg.int32 if int_dtype else mg.float32)
    assert eye.dtype == eye_t.dtype and line.dtype == line_t.dtype
    np.testing.assert_array_equal(eye.data, eye_t)
    np.testing.assert_allclose(line.data, line_t, rtol=1e-6, atol=1e-6)  # float32 endpoints rounding


def test_eye_and_linspace_refuse_negative_sizes():
    with pytest.raises(RuntimeError, match="eye: n must be >= 0, got -1"):
        mg.eye(-1)
    with pytest.raises(RuntimeError, match="linspace: steps must be >= 0, got -1"):
        mg.linspace(1, 2, -1)
    with pytest.raises(RuntimeError, match="linspace: dtype bool is not supported"):
        mg.linspace(1, 2, 3, dtype=mg.bool)


# ---- sort, argsort, topk --------------------------------------------------------------------------------

for _dim in (0, 1, -1):
    for _descending in (False, True):
        case(f"sort_{_dim}_{_descending}", lambda lib, TF, x, dim=_dim, d=_descending: x.sort(dim, d)[0])
        case(f"sort_ids_{_dim}_{_descending}",
             lambda lib, TF, x, dim=_dim, d=_descending: x.sort(dim=dim, descending=d, stable=True)[1])
for _k, _dim, _largest in [(3, -1, True), (4, 0, True), (2, 1, False), (0, 1, True)]:
    case(f"topk_{_k}_{_dim}_{_largest}",
         lambda lib, TF, x, k=_k, dim=_dim, lg=_largest: x.topk(k, dim, lg)[0])
    case(f"topk_ids_{_k}_{_dim}_{_largest}",
         lambda lib, TF, x, k=_k, dim=_dim, lg=_largest: x.topk(k, dim, lg)[1])
CUBE = rng.normal(size=(5, 6, 4))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_values_indices_and_gradient(dim, descending, oracle):
    _against_torch(oracle, f"sort_{dim}_{descending}", CUBE)
    _against_torch(oracle, f"sort_ids_{dim}_{descending}", CUBE)


@pytest.mark.parametrize("k, dim, largest", [(3, -1, True), (4, 0, True), (2, 1, False), (0, 1, True)])
def test_topk_matches_torch(k, dim, largest, oracle):
    _against_torch(oracle, f"topk_{k}_{dim}_{largest}", CUBE)
    _against_torch(oracle, f"topk_ids_{k}_{dim}_{largest}", CUBE)


def torch_stable_sorts(x):
    t = torch.tensor(x)
    return (t.sort(stable=True)[1], t.sort(stable=True, descending=True)[1],
            t.argsort(descending=True, stable=True))


def test_equal_entries_keep_their_order_and_nan_is_largest_as_torch(oracle):
    for x in (np.array([0.0, 1.0] * 9), np.array([3.0, np.nan, 1.0, np.inf, -np.inf, np.nan, 1.0])):
        up, down, arg_down = oracle(torch_stable_sorts, x)
        np.testing.assert_array_equal(mg.tensor(x).sort()[1].data, up)
        np.testing.assert_array_equal(mg.tensor(x).sort(descending=True).indices.data, down)
        np.testing.assert_array_equal(mg.tensor(x).argsort(descending=True).data, arg_down)


def test_sort_and_topk_gradcheck_and_take_zero_d_and_empty():
    check(lambda x: x.sort(1, descending=True).values * x, _leaf(CUBE[:, :, 0]))
    check(lambda x: x.topk(2, 0).values, _leaf(CUBE[:, :, 0]))
    values, indices = mg.tensor(3.0).sort()
    assert values.shape == indices.shape == () and indices.dtype == np.int64 and values.item() == 3.0
    assert mg.tensor(np.zeros((0, 5))).sort(0).values.shape == (0, 5)
    assert mg.tensor(np.zeros((2, 0))).topk(0).indices.shape == (2, 0)


def test_topk_names_a_k_out_of_range():
    with pytest.raises(RuntimeError, match=r"topk\(\): k=4 is out of range for dim 0 of size 3"):
        mg.zeros(3).topk(4)
    with pytest.raises(IndexError, match=r"sort\(\): dim 2 is out of range"):
        mg.zeros(3, 2).sort(2)


# ---- repeat_interleave, roll ----------------------------------------------------------------------------

INTERLEAVE = {(r, d): case(f"interleave_{r}_{d}", lambda lib, TF, x, r=r, d=d: x.repeat_interleave(r, d))
              for r, d in [(3, None), (2, 0), (2, 1), (2, -1), (0, 1)]}
case("interleave_counts", lambda lib, TF, x, counts: x.repeat_interleave(counts, 0))


@pytest.mark.parametrize("repeats, dim", list(INTERLEAVE))
def test_repeat_interleave_matches_torch(repeats, dim, oracle):
    _against_torch(oracle, INTERLEAVE[repeats, dim], MATRIX)


def test_repeat_interleave_by_counts_gradchecks_and_names_bad_counts(oracle):
    _against_torch(oracle, "interleave_counts", MATRIX, np.array([1, 0, 3, 2]))
    check(lambda x: x.repeat_interleave(np.array([2, 0, 1, 3]), 0), _leaf(MATRIX))
    check(lambda x: x.repeat_interleave(3), _leaf(0.5))
    with pytest.raises(mg.ShapeError, match=r"repeat_interleave\(\): repeats has shape \(2,\); expected an "
                                            r"int or one count per entry along dim 0 \(4\)"):
        mg.zeros(4, 5).repeat_interleave(np.array([1, 2]), 0)
    with pytest.raises(ValueError, match="repeats must not be negative"):
        mg.zeros(2).repeat_interleave(-1, 0)


ROLLS = {"flat": (1, None), "flat_tuple": ((3,), None), "dim0": (1, 0), "two_dims": ((1, -2), (0, 1)),
         "negative": (-7, -1)}
for _name, (_shifts, _dims) in ROLLS.items():
    case(f"roll_{_name}", lambda lib, TF, x, s=_shifts, d=_dims: x.roll(s, d))


@pytest.mark.parametrize("name", list(ROLLS))
def test_roll_matches_torch(name, oracle):
    _against_torch(oracle, f"roll_{name}", MATRIX)


def test_roll_gradchecks_and_takes_empty_axes():
    check(lambda x: x.roll((2, 1), (1, 0)) * x, _leaf(MATRIX))
    check(lambda x: x.roll(1), _leaf(2.0))
    assert mg.zeros(2, 0, 3).roll(1, 1).shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match=r"roll\(\): shifts \[1, 2\] and dims \[0\] must have the same "
                                           r"length"):
        mg.zeros(2, 4).roll((1, 2), 0)


# ---- attention with fewer key/value heads; an integer tensor to a negative power ------------------------

case("gqa", lambda lib, TF, q, k, v: TF.scaled_dot_product_attention(q, k, v, enable_gqa=True))
case("gqa_causal", lambda lib, TF, q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                            enable_gqa=True))


@pytest.mark.parametrize("name, kv_heads", [("gqa", 2), ("gqa", 1), ("gqa_causal", 2), ("gqa", 6)])
def test_grouped_query_attention_matches_torch(name, kv_heads, oracle):
    draw = np.random.default_rng(kv_heads)
    q = draw.normal(size=(2, 6, 5, 4))
    k, v = draw.normal(size=(2, kv_heads, 5, 4)), draw.normal(size=(2, kv_heads, 5, 3))
    _against_torch(oracle, name, q, k, v)


def test_grouped_query_attention_gradchecks_and_needs_heads_that_divide():
    draw = np.random.default_rng(0)
    q, k, v = (_leaf(draw.normal(size=s)) for s in [(4, 3, 2), (2, 3, 2), (2, 3, 2)])
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)
    with pytest.raises(mg.ShapeError, match=r"with enable_gqa, k's 3 heads \(axis -3 of shape "
                                            r"\(1, 3, 5, 4\)\) must divide q's 4 heads"):
        F.scaled_dot_product_attention(mg.zeros(1, 4, 5, 4), mg.zeros(1, 3, 5, 4), mg.zeros(1, 3, 5, 4),
                                       enable_gqa=True)


def torch_error_class(which):
    try:
        if which == "pow":
            torch.tensor([2, 3]) ** -2
        else:
            TF.scaled_dot_product_attention(torch.zeros(1, 3, 2), torch.zeros(1, 3, 2), torch.zeros(1, 3, 2),
                                            attn_mask=torch.ones(3, 3, dtype=torch.bool), is_causal=True)
    except Exception as error:  # any class: which one it is is the answer
        return type(error).__name__
    return ""


def test_refusals_pytorch_raises_runtime_error_for_are_argument_errors(oracle):
    with pytest.raises(mg.ArgumentError, match=r"pow: an integer tensor \(int64\) to a negative integer "
                                               r"power \(-2\) is not allowed"):
        mg.tensor([2, 3]) ** -2
    with pytest.raises(mg.ArgumentError, match="pass attn_mask or is_causal=True, not both"):
        F.scaled_dot_product_attention(mg.zeros(1, 3, 2), mg.zeros(1, 3, 2), mg.zeros(1, 3, 2),
                                       attn_mask=np.ones((3, 3), bool), is_causal=True)
    assert oracle(torch_error_class, "pow") == oracle(torch_error_class, "attention") == "RuntimeError"
    assert issubclass(mg.ArgumentError, ValueError) and issubclass(mg.ArgumentError, RuntimeError)
    assert issubclass(mg.ShapeError, mg.ArgumentError)
    assert (mg.tensor([2, 3]) ** 2).data.tolist() == [4, 9]  # a power >= 0 stays an int
    np.testing.assert_allclose((mg.tensor([2, 4]) ** -1.0).data, [0.5, 0.25])  # a float power makes floats


# ---- std_mean, var_mean, sum and prod with a dtype --------------------------------------------------

for _kwargs_name, _kwargs in {"all": {}, "dim": {"dim": 1}, "dims": {"dim": (0, 2)},
                              "keep": {"dim": -1, "keepdim": True, "correction": 0}}.items():
    for _which in ("std_mean", "var_mean"):
        case(f"{_which}_{_kwargs_name}",
             lambda lib, TF, x, which=_which, kw=_kwargs: lib.stack(list(getattr(lib, which)(x, **kw))))


@pytest.mark.parametrize("which", ["std_mean", "var_mean"])
@pytest.mark.parametrize("kwargs_name", ["all", "dim", "dims", "keep"])
def test_std_mean_and_var_mean_match_torch(which, kwargs_name, oracle):
    _against_torch(oracle, f"{which}_{kwargs_name}", CUBE)


case("sum_float64", lambda lib, TF, x: x.float().sum(dtype=lib.float64))
case("prod_float64", lambda lib, TF, x: x.float().prod(dtype=lib.float64))


@pytest.mark.parametrize("name", ["sum_float64", "prod_float64"])
def test_sum_and_prod_take_a_dtype(name, oracle):
    _against_torch(oracle, name, MATRIX[:2], rtol=1e-7)  # float32 entries, summed in float64
    assert mg.tensor([1, 2]).sum(dtype=mg.float32).dtype == np.float32


# ---- diagonal, diag, masked_select, nonzero, meshgrid, scatter_add -------------------------------

DIAGONALS = {(offset, d1, d2): case(f"diagonal_{offset}_{d1}_{d2}",
                                    lambda lib, TF, x, o=offset, a=d1, b=d2: x.diagonal(o, a, b))
             for offset, d1, d2 in [(0, 0, 1), (1, 0, 1), (-2, 0, 1), (7, 0, 1), (0, -2, -1), (1, 2, 0)]}


@pytest.mark.parametrize("offset, dim1, dim2", list(DIAGONALS))
def test_diagonal_matches_torch(offset, dim1, dim2, oracle):
    _against_torch(oracle, DIAGONALS[offset, dim1, dim2], CUBE)


DIAGS = {k: case(f"diag_{k}", lambda lib, TF, x, k=k: x.diag(k)) for k in (0, 2, -1)}


@pytest.mark.parametrize("k", list(DIAGS))
def test_diag_matches_torch_both_ways(k, oracle):
    _against_torch(oracle, DIAGS[k], MATRIX[0])
    _against_torch(oracle, DIAGS[k], MATRIX)


def test_diagonal_and_diag_gradcheck_and_name_bad_axes():
    check(lambda x: x.diagonal(1, 0, 2), _leaf(CUBE[:, :3]))
    check(lambda x: x.diag(1), _leaf(MATRIX[0]))
    with pytest.raises(RuntimeError, match=r"diagonal\(\): dim1 and dim2 are both axis 1"):
        mg.zeros(2, 3).diagonal(0, 1, -1)
    with pytest.raises(mg.ShapeError, match=r"diag\(\): the tensor has shape \(2, 3, 4\); it must be 1-D"):
        mg.zeros(2, 3, 4).diag()


case("masked_select", lambda lib, TF, x, mask: x.masked_select(mask))


def test_masked_select_matches_torch_broadcasting_the_mask(oracle):
    _against_torch(oracle, "masked_select", MATRIX, MATRIX > 0.5)
    _against_torch(oracle, "masked_select", MATRIX, np.array([True, False, True, True, False]))
    with pytest.raises(TypeError, match=r"masked_select\(\): mask must be a bool tensor"):
        mg.zeros(3).masked_select(np.ones(3))


def torch_nonzero(x):
    t = torch.tensor(x)
    return t.nonzero(), t.nonzero(as_tuple=True)


@pytest.mark.parametrize("x", [MATRIX > 0.5, CUBE[:, :, 0] * (CUBE[:, :, 1] > 0), np.array(2.5),
                               np.array(0.0)], ids=["bool", "float", "0-d", "0-d zero"])
def test_nonzero_matches_torch(x, oracle):
    theirs, theirs_tuple = oracle(torch_nonzero, x)
    ours = mg.tensor(x).nonzero()
    assert ours.dtype == np.int64 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.data, theirs)
    for mine, their in zip(mg.tensor(x).nonzero(as_tuple=True), theirs_tuple, strict=True):
        np.testing.assert_array_equal(mine.data, their)


def _grids(lib, indexing, *vectors):
    return lib.stack([g * 1 for g in lib.meshgrid(*vectors, indexing=indexing)])  # * 1: copies


for _indexing in ("ij", "xy"):
    case(f"meshgrid_{_indexing}", lambda lib, TF, x, y, z, ind=_indexing: _grids(lib, ind, x, y, z))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_torch(indexing, oracle):
    _against_torch(oracle, f"meshgrid_{indexing}", np.array([0.0, 1, 2]), np.array([3.0, 4, 5, 6]),
                   np.array([7.0, 8]))


def test_meshgrid_names_a_bad_argument():
    with pytest.raises(RuntimeError, match="meshgrid: indexing must be 'ij' or 'xy', got 'ji'"):
        mg.meshgrid(mg.zeros(2), indexing="ji")
    with pytest.raises(mg.ShapeError, match=r"meshgrid: each tensor must be 0-d or 1-D, got shape \(2, 2\)"):
        mg.meshgrid(mg.zeros(2, 2))


SCATTERS = {dim: case(f"scatter_add_{dim}",
                      lambda lib, TF, x, index, src, dim=dim: x.scatter_add(dim, index, src))
            for dim in (0, 1, -1)}


@pytest.mark.parametrize("dim", list(SCATTERS))
def test_scatter_add_matches_torch(dim, oracle):
    draw = np.random.default_rng(6)
    index = draw.integers(0, 4, (3, 4, 4))  # repeated places add up
    _against_torch(oracle, SCATTERS[dim], CUBE, index, draw.normal(size=(3, 4, 4)))


def test_scatter_add_gradchecks_and_names_a_bad_index():
    index = np.array([[0, 2, 0], [1, 1, 2]])
    check(lambda a, src: a.scatter_add(1, index, src) ** 2, _leaf(MATRIX[:2, :3]), _leaf(MATRIX[2:4, 1:4]))
    with pytest.raises(mg.ShapeError, match=r"scatter_add\(\): index has shape \(3,\), which does not fit"):
        mg.zeros(2, 3).scatter_add(1, np.zeros(3, np.int64), mg.zeros(2, 3))
    with pytest.raises(IndexError, match=r"scatter_add: index 3 at index\[0, 1\] is out of range for dim 1"):
        mg.zeros(2, 3).scatter_add(1, np.array([[0, 3]]), mg.zeros(2, 3))
    with pytest.raises(RuntimeError, match="src has dtype float64, the tensor float32"):
        mg.zeros(2, 3).scatter_add(1, np.array([[0, 1]]), mg.zeros(2, 3, dtype=np.float64))


# ---- //, %, fmod, div(rounding_mode=) -------------------------------------------------------------------

NUMERATORS, DENOMINATORS = [-4, 7, 5, 4, -7, 8, -9, 0, 1], [2, -3, 8, -2, 3, 5, -5, 3, 0.1]
INT_DENOMINATORS = [2, -3, 8, -2, 3, 5, -5, 3, 7]
DIVISIONS = {"floordiv": lambda lib, TF, a, b: a // b, "mod": lambda lib, TF, a, b: a % b,
             "fmod": lambda lib, TF, a, b: a.fmod(b),
             "div_floor": lambda lib, TF, a, b: a.div(b, rounding_mode="floor"),
             "div_trunc": lambda lib, TF, a, b: a.div(b, rounding_mode="trunc"),
             "rmod": lambda lib, TF, a, b: 3.5 % b, "rfloordiv": lambda lib, TF, a, b: 7 // b}
for _name, _fn in DIVISIONS.items():
    case(_name, _fn)


# torch's // has no backward, nor has its number % tensor: those are compared without gradients
WITHOUT_BACKWARD = ("floordiv", "rfloordiv", "rmod")


@pytest.mark.parametrize("name", [n for n in DIVISIONS if n not in WITHOUT_BACKWARD])
def test_rounded_division_and_remainders_match_torch_with_gradients(name, oracle):
    _against_torch(oracle, name, np.array(NUMERATORS, float), np.array(DENOMINATORS, float))


def torch_forward_only(name, a, b):
    with torch.no_grad():
        return CASES[name](torch, TF, torch.tensor(a), torch.tensor(b))


@pytest.mark.parametrize("name", WITHOUT_BACKWARD)
def test_floor_division_and_a_number_mod_a_tensor_match_torch(name, oracle):
    a, b = np.array(NUMERATORS, float), np.array(DENOMINATORS, float)
    np.testing.assert_array_equal(CASES[name](mg, F, mg.tensor(a), mg.tensor(b)).data,
                                  oracle(torch_forward_only, name, a, b))


def torch_integer_divisions(a, b):
    ta, tb = torch.tensor(a), torch.tensor(b)
    return (ta // tb, ta % tb, ta.fmod(tb), ta.div(tb, rounding_mode="trunc"), ta // 3, 7 % tb,
            (ta.double() // tb.double()))


def test_integer_divisions_stay_integers_as_torch(oracle):
    a, b = np.array(NUMERATORS), np.array(INT_DENOMINATORS)
    ta, tb = mg.tensor(a), mg.tensor(b)
    ours = (ta // tb, ta % tb, ta.fmod(tb), ta.div(tb, rounding_mode="trunc"), ta // 3, 7 % tb,
            ta.double() // tb.double())
    for mine, theirs in zip(ours, oracle(torch_integer_divisions, a, b), strict=True):
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine.data, theirs)


def test_remainders_gradcheck_and_division_by_zero_is_torchs():
    check(lambda a, b: a % b, _leaf([-3.3, 4.1, 2.6]), _leaf([2.0, -1.5, 0.7]))
    check(lambda a, b: a.fmod(b) * b, _leaf([-3.3, 4.1, 2.6]), _leaf([2.0, -1.5, 0.7]))
    check(lambda a, b: a % b, _leaf(5.3), _leaf(2.0))
    x = _leaf([5.0, -7.0])
    (x // 2 + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # // passes 0
    assert np.isnan((mg.tensor([5.0]) % 0).data).all() and (mg.tensor([5.0]) // 0).data.tolist() == [np.inf]
    with pytest.raises(RuntimeError, match="integer division by zero"):
        mg.tensor([5]) // 0
    with pytest.raises(RuntimeError, match="integer fmod by zero"):
        mg.tensor([5]).fmod(0)
    with pytest.raises(RuntimeError, match="rounding_mode must be None, 'floor' or 'trunc', got 'round'"):
        mg.tensor([5.0]).div(2, rounding_mode="round")
