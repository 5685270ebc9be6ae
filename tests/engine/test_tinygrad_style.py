"""Op-by-op comparisons with torch in the style of tinygrad's test suite (test/test_ops.py):
`helper_test_op` draws float32 inputs, runs one function on torch tensors and (the same one, or
minigrad's spelling) on minigrad tensors, and compares the forward (shape, dtype, values) and the
gradient of `.sum()` for every input. The cases are our own, over the ops issue 24 asks for and
the everyday ones around them: elementwise, reductions, matmul, softmax, shapes, cat/stack, where,
losses. PyTorch's side is live where it is installed and recorded where not (helpers/oracle.py),
so the inputs are smaller than tinygrad's (9 x 13 rather than 45 x 65) to keep the recording small."""

import math

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F


def inputs(shapes, vals=None, low=-2.0, high=2.0):
    """float32 draws in [low, high) of each shape, or the given values (floats as float32)."""
    if vals is None:
        rng = np.random.default_rng(0)
        return [rng.uniform(low, high, size=s).astype(np.float32) for s in shapes]
    return [np.asarray(v, dtype=np.float32 if np.asarray(v).dtype.kind == "f" else None) for v in vals]


def run(lib, fn, arrays, forward_only):
    """fn on `lib`'s tensors (mg or torch) holding `arrays`; then the gradient of out.sum() for every
    float input (None where it gets none)."""
    leaves = [lib.tensor(a, requires_grad=not forward_only and a.dtype.kind == "f") for a in arrays]
    out = fn(*leaves)
    if forward_only:
        return out.detach(), []
    out.sum().backward()
    return out.detach(), [leaf.grad for leaf in leaves]


def torch_op(name, arrays, forward_only):
    return run(torch, CASES[name][1], arrays, forward_only)


def helper_test_op(
    oracle,
    name,
    shapes,
    torch_fn,
    minigrad_fn=None,
    *,
    vals=None,
    low=-2.0,
    high=2.0,
    forward_only=False,
    atol=1e-6,
    rtol=1e-3,
    grad_atol=1e-4,
    grad_rtol=1e-3,
):
    arrays = inputs(shapes, vals, low, high)
    out_t, grads_t = oracle(torch_op, name, arrays, forward_only)
    out_m, grads_m = run(mg, minigrad_fn or torch_fn, arrays, forward_only)
    _compare("forward", out_m.data, out_t, atol, rtol)
    for i, (m, t) in enumerate(zip(grads_m, grads_t, strict=True)):
        if t is not None:
            _compare(f"gradient of input {i}", np.asarray(m), t, grad_atol, grad_rtol)


def _compare(what, ours, theirs, atol, rtol):
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, torch {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype}, torch {theirs.dtype}"
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=what)


CASES = {
    # elementwise
    "clip": ([(9, 13)], lambda x: x.clip(-1.3, 1.2), None, {}),
    "clip_min_above_max": ([(9, 13)], lambda x: x.clip(3, 0), None, {}),
    "clip_zero_width": ([(9, 13)], lambda x: x.clip(0.1, 0.1), None, {}),
    "clip_max_only": ([(9, 13)], lambda x: x.clip(None, 0.3), None, {}),
    "clip_min_only": ([(9, 13)], lambda x: x.clip(-0.2, None), None, {}),
    "clamp_tensor_bounds": ([(9, 13), (13,), (9, 1)], lambda x, lo, hi: x.clamp(lo, hi), None, {}),
    "clamp_0d": ([()], lambda x: x.clamp(-1.0, 1.0), None, {}),
    "maximum": ([(9, 13), (9, 13)], torch.maximum, mg.maximum, {}),
    "maximum_0d": ([(), ()], torch.maximum, mg.maximum, {}),
    "maximum_ties": (
        None,
        torch.maximum,
        mg.maximum,
        {"vals": [[1.0, 0.0, 3.0, -4.0], [-1.0, -2.0, 3.0, 0.0]]},
    ),
    "maximum_broadcast": ([(9, 13), (13,)], lambda x, y: x.maximum(y), None, {}),
    "minimum": ([(9, 13), (9, 13)], torch.minimum, mg.minimum, {}),
    "minimum_0d": ([(), ()], torch.minimum, mg.minimum, {}),
    "minimum_ties": (
        None,
        torch.minimum,
        mg.minimum,
        {"vals": [[1.0, 0.0, 3.0, -4.0], [-1.0, -2.0, 3.0, 0.0]]},
    ),
    "relu_as_maximum": (
        None,
        lambda x: torch.maximum(x, torch.zeros_like(x)),
        lambda x: x.maximum(0.0),
        {"vals": [[-1.0, 0.0, 1.0]]},
    ),
    "sin": ([(9, 13)], lambda x: x.sin(), None, {}),
    "sin_0d": ([()], lambda x: x.sin(), None, {}),
    "cos": ([(9, 13)], lambda x: x.cos(), None, {}),
    "cos_0d": ([()], lambda x: x.cos(), None, {}),
    "erf": ([(9, 13)], torch.erf, lambda x: x.erf(), {}),
    "erf_far": ([(9, 13)], torch.erf, lambda x: x.erf(), {"low": 5, "high": 10}),
    "softplus": ([(9, 13)], TF.softplus, F.softplus, {"grad_atol": 1e-6}),
    "softplus_beta": ([(9, 13)], lambda x: TF.softplus(x, beta=3), lambda x: F.softplus(x, beta=3), {}),
    "softplus_small_beta": (
        [(9, 13)],
        lambda x: TF.softplus(x, beta=1 / 3),
        lambda x: F.softplus(x, beta=1 / 3),
        {},
    ),
    "softplus_very_negative": ([(9, 13)], TF.softplus, F.softplus, {"low": -400, "high": -300}),
    "softplus_past_threshold": ([(9, 13)], TF.softplus, F.softplus, {"low": 300, "high": 400}),
    "softplus_0d": ([()], TF.softplus, F.softplus, {}),
    "exp2": ([(9, 13)], torch.exp2, lambda x: x.exp2(), {}),
    "exp2_0d": ([()], torch.exp2, lambda x: x.exp2(), {}),
    "log2": ([(9, 13)], torch.log2, lambda x: x.log2(), {"low": 0.1, "high": 3}),
    "log2_0d": ([()], torch.log2, lambda x: x.log2(), {"low": 0.1, "high": 3}),
    "rsqrt": ([(9, 13)], lambda x: x.rsqrt(), None, {"low": 0.1, "high": 3}),
    "rsqrt_0d": ([()], lambda x: x.rsqrt(), None, {"low": 0.1, "high": 3}),
    "leaky_relu": ([(9, 13)], lambda x: TF.leaky_relu(x, 0.01), lambda x: F.leaky_relu(x, 0.01), {}),
    "leaky_relu_0d": ([()], lambda x: TF.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2), {}),
    "sign": ([(9, 13)], torch.sign, lambda x: x.sign(), {}),
    "sign_exact": (None, torch.sign, lambda x: x.sign(), {"vals": [[-1.0, 0.0, 1.0]]}),
    "sign_0d": ([()], torch.sign, lambda x: x.sign(), {}),
    "relu": ([(16, 16)], lambda x: x.relu(), None, {}),
    "sigmoid": ([(9, 13)], torch.sigmoid, lambda x: x.sigmoid(), {}),
    "tanh": ([(9, 13)], lambda x: x.tanh(), None, {}),
    "abs": ([(9, 13)], torch.abs, lambda x: x.abs(), {}),
    "exp": ([(9, 13)], torch.exp, lambda x: x.exp(), {}),
    "log": ([(9, 13)], torch.log, lambda x: x.log(), {"low": 0.1, "high": 3}),
    "sqrt": ([(9, 13)], lambda x: x.sqrt(), None, {"low": 0.1, "high": 3}),
    "gelu_tanh": (
        [(9, 13)],
        lambda x: TF.gelu(x, approximate="tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
        {},
    ),
    # powers
    "scalar_pow_tensor": ([(9, 13)], lambda x: 2.0**x, None, {}),
    "scalar_pow_tensor_fraction": ([(9, 13)], lambda x: 0.7**x, None, {}),
    "scalar_pow_tensor_big": ([(9, 13)], lambda x: 8.0**x, None, {}),
    "scalar_pow_tensor_one": ([(9, 13)], lambda x: 1.0**x, None, {}),
    "scalar_pow_tensor_0d": ([()], lambda x: 2.0**x, None, {}),
    "int_pow_tensor": ([(9, 13)], lambda x: 3**x, None, {}),
    "zero_pow_tensor": (None, lambda x: 0**x, None, {"vals": [[0.0, 1.0, 2.0, 3.0]]}),
    "negative_pow_tensor": (None, lambda x: (-2.0) ** x, None, {"vals": [[-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]]}),
    "tensor_pow_tensor": ([(9, 13), (9, 13)], lambda x, y: x**y, None, {"low": 0.1, "high": 2}),
    "tensor_pow_method": ([(9, 13), (9, 13)], lambda x, y: x.pow(y), None, {"low": 0.1, "high": 2}),
    "tensor_pow_broadcast": ([(4, 1), (1, 5)], torch.pow, lambda x, y: x**y, {"low": 0.1, "high": 3}),
    "zero_pow_zero": (None, lambda x, y: x**y, None, {"vals": [[0.0], [0.0]]}),
    "zero_pow_positive": (None, lambda x, y: x**y, None, {"vals": [[0.0], [0.3]]}),
    "tensor_pow_number": ([(9, 13)], lambda x: x**3, None, {}),
    # reductions
    "logsumexp_0": ([(9, 13)], lambda x: torch.logsumexp(x, dim=0), lambda x: x.logsumexp(0), {}),
    "logsumexp_keepdim": (
        [(9, 13)],
        lambda x: torch.logsumexp(x, dim=0, keepdim=True),
        lambda x: x.logsumexp(0, True),
        {},
    ),
    "logsumexp_1": ([(9, 13)], lambda x: torch.logsumexp(x, dim=1), lambda x: x.logsumexp(1), {}),
    "logsumexp_1d": ([(45,)], lambda x: torch.logsumexp(x, dim=0), lambda x: x.logsumexp(0), {}),
    "logsumexp_0d": ([()], lambda x: torch.logsumexp(x, dim=0), lambda x: x.logsumexp(0), {}),
    "logsumexp_0d_minus_one": ([()], lambda x: torch.logsumexp(x, dim=-1), lambda x: x.logsumexp(-1), {}),
    "logsumexp_function": (
        [(4, 5, 6)],
        lambda x: torch.logsumexp(x, dim=(0, 2)),
        lambda x: mg.logsumexp(x, (0, 2)),
        {},
    ),
    "prod_all": (None, lambda x: x.prod(), None, {"vals": [[1.0, 2.0, 3.0]]}),
    "prod_dim": ([(3, 4, 5, 6)], lambda x: x.prod(dim=3), None, {}),
    "prod_dim_keepdim": ([(3, 4, 5, 6)], lambda x: x.prod(dim=1, keepdim=True), None, {}),
    "prod_0d": ([()], lambda x: x.prod(), None, {}),
    "prod_0d_dim": ([()], lambda x: x.prod(0), None, {}),
    "prod_with_zeros": (
        None,
        lambda x: x.prod(1),
        None,
        {"vals": [[[0.0, 2.0, 3.0], [0.0, 0.0, 2.0], [1.0, 2.0, 3.0]]]},
    ),
    "min": ([(45, 3)], lambda x: x.min(), None, {}),
    "min_scaled": ([(45, 3)], lambda x: x.min().mul(0.5), lambda x: x.min() * 0.5, {}),
    "min_0d": ([()], lambda x: x.min(), None, {}),
    "min_ties": (None, lambda x: x.min(), None, {"vals": [[[1.0, 1.0, 3.0, 1.0]]]}),
    "amin_dim": ([(3, 4, 5)], lambda x: x.amin(1), None, {}),
    "amax_dims": ([(3, 4, 5)], lambda x: x.amax((0, 2)), None, {}),
    "max_ties": (
        None,
        lambda x: x.max().mul(0.5),
        lambda x: x.max() * 0.5,
        {"vals": [[[1.0, 1.0, 0.0, 1.0]]]},
    ),
    "var": ([(5, 6, 7)], lambda x: x.var(), None, {}),
    "var_correction_0": ([(5, 6, 7)], lambda x: x.var(correction=0), None, {}),
    "var_correction_5": ([(5, 6, 7)], lambda x: x.var(correction=5), None, {}),
    "var_dim": ([(5, 6, 7)], lambda x: x.var(0), None, {}),
    "var_dims_list": ([(5, 6, 7)], lambda x: x.var([1, 2]), None, {}),
    "var_keepdim": ([(5, 6, 7)], lambda x: x.var(0, keepdim=True, correction=0), None, {}),
    "std": ([(5, 6, 7)], lambda x: x.std(), None, {}),
    "std_dim": ([(5, 6, 7)], lambda x: x.std(2), None, {}),
    "std_dims_correction": ([(5, 6, 7)], lambda x: x.std([1, 2], correction=0), None, {}),
    "std_keepdim": ([(5, 6, 7)], lambda x: x.std(keepdim=True), None, {}),
    "sum_axes": ([(3, 4, 5, 6)], lambda x: x.sum(axis=(1, 3)), None, {}),
    "mean": ([(3, 4, 5, 6)], lambda x: x.mean(), None, {}),
    "argmin": ([(10, 20)], lambda x: x.argmin(1), None, {"forward_only": True}),
    "argmin_first_of_ties": (
        None,
        lambda x: x.argmin(),
        None,
        {"vals": [[3.0, 2.0, 2.0]], "forward_only": True},
    ),
    # matmul and softmax
    "matmul": ([(64, 64), (64, 64)], lambda x, y: x.matmul(y), lambda x, y: x @ y, {"atol": 1e-4}),
    "matmul_batched_broadcast": ([(4, 9, 13), (13, 9)], lambda x, y: x @ y, None, {"atol": 1e-4}),
    "softmax": ([(9, 13)], lambda x: x.softmax(1), None, {"atol": 1e-7, "grad_atol": 1e-7}),
    "log_softmax": ([(10, 10, 10)], lambda x: x.log_softmax(0), None, {"atol": 1e-6, "grad_atol": 1e-6}),
    # shapes
    "flip_first": ([(4, 3, 6, 6)], lambda x: x.flip((0,)), None, {}),
    "flip_several": ([(4, 3, 6, 6)], lambda x: x.flip((0, 1, 3)), None, {}),
    "flip_twice": ([(4, 3, 6, 6)], lambda x: x.flip((0, 1, 3)).flip(0), None, {}),
    "flip_last": ([(4, 3, 6, 6)], lambda x: x.flip((-1,)), None, {}),
    "flip_none": ([(4, 3, 6, 6)], lambda x: x.flip(()), None, {}),
    "flip_0d": ([()], lambda x: x.flip(()), None, {}),
    "flip_function": ([(4, 3)], lambda x: torch.flip(x, (1,)), lambda x: mg.flip(x, (1,)), {}),
    "expand": ([(4, 3, 1, 6)], lambda x: x.expand((4, 3, 2, 6)), None, {}),
    "expand_all_ones": ([(1, 1, 1, 1)], lambda x: x.expand((4, 3, 2, 6)), None, {}),
    "expand_new_axes": ([(4, 3, 1, 6)], lambda x: x.expand((6, 1, 4, 3, 2, 6)), None, {}),
    "expand_to_empty": ([(4, 3, 1, 6)], lambda x: x.expand((4, 3, 0, 6)), None, {}),
    "expand_0d": ([()], lambda x: x.expand((4, 3, 2, 6)), None, {}),
    "expand_minus_one": ([(3, 1)], lambda x: x.expand(-1, 4), None, {}),
    "unflatten_first": ([(4, 3, 6, 6)], lambda x: x.unflatten(0, (2, 2)), None, {}),
    "unflatten_last": ([(4, 3, 6, 6)], lambda x: x.unflatten(-1, (3, 2, 1)), None, {}),
    "squeeze_dim": ([(4, 3, 1, 6)], lambda x: x.squeeze(2), None, {}),
    "squeeze_0d_dim": ([()], lambda x: x.squeeze(0), None, {}),
    "squeeze_0d_minus_one": ([()], lambda x: x.squeeze(-1), None, {}),
    "squeeze_0d": ([()], lambda x: x.squeeze(), None, {}),
    "unsqueeze": ([(4, 3, 6)], lambda x: x.unsqueeze(-1), None, {}),
    "permute": ([(3, 4, 5, 6)], lambda x: x.permute((3, 2, 1, 0)), None, {}),
    "reshape": ([(4, 3, 6, 6)], lambda x: x.reshape((-1, 3, 6, 6)), None, {}),
    "slice": ([(7, 5, 10)], lambda x: x[1:5:2, 3, ::4], None, {}),
    "cat": (
        [(4, 5, 3), (4, 5, 3), (4, 5, 3)],
        lambda x, y, z: torch.cat((x, y, z), 1),
        lambda x, y, z: mg.cat((x, y, z), 1),
        {},
    ),
    "stack": (
        [(4, 5), (4, 5)],
        lambda x, y: torch.stack((x, y), -1),
        lambda x, y: mg.stack((x, y), dim=-1),
        {},
    ),
    "where": (
        [(10, 10), (10,), (10,)],
        lambda c, a, b: torch.where(c > 0.5, a, b),
        lambda c, a, b: mg.where(c > 0.5, a, b),
        {},
    ),
    "masked_fill": ([(32, 10)], lambda x: x.masked_fill((x > 0.1).detach(), -math.inf), None, {}),
    "multiply_by_mask": ([(4,)], lambda x: x * (x < 0), None, {}),
    # comparisons and logic: bool tensors
    "cmp_lt": ([(3, 4, 5), (5,)], lambda x, y: x < y, None, {"forward_only": True}),
    "cmp_ge_number": ([(3, 4)], lambda x: x >= 0.5, None, {"forward_only": True}),
    "cmp_eq_method": (
        None,
        lambda x, y: x.eq(y),
        None,
        {"vals": [[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], "forward_only": True},
    ),
    "cmp_reflected": (None, lambda x: 2.0 > x, None, {"vals": [[0.0, 1.0, 2.0, 3.0]], "forward_only": True}),
    "invert_bool": (None, lambda x: ~(x > 1), None, {"vals": [[0.0, 1.0, 2.0]], "forward_only": True}),
    "and_masks": (
        None,
        lambda x: (1 < x) & (x < 2),
        None,
        {"vals": [[1.2, 1.2, 1.2, 3.2]], "forward_only": True},
    ),
    "any_all": ([(3, 4)], lambda x: (x > 0).any(1) | (x > 1).all(1), None, {"forward_only": True}),
    # dtypes
    "float_of_float": ([(3, 3)], lambda x: x.float(), None, {}),
    "float_of_int": (None, lambda x: x.float(), None, {"vals": [[0, 1, 2, 3]], "forward_only": True}),
    "int_of_float": ([(3, 3)], lambda x: x.int(), None, {"forward_only": True}),
    "bool_of_float": ([(3, 3)], lambda x: x.bool(), None, {"forward_only": True}),
    "double_and_back": ([(3, 3)], lambda x: (x.double() * 2).float(), None, {}),
    "to_dtype": ([(3, 3)], lambda x: x.to(torch.float64), lambda x: x.to(mg.float64), {}),
    # losses
    "cross_entropy_probabilities": ([(32, 10), (32, 10)], TF.cross_entropy, F.cross_entropy, {}),
    "cross_entropy_ids": (
        [(32, 10)],
        lambda x: TF.cross_entropy(x, torch.arange(32) % 10),
        lambda x: F.cross_entropy(x, np.arange(32) % 10),
        {},
    ),
    **{
        f"cross_entropy_{r}": (
            [(32, 10), (32, 10)],
            lambda x, y, r=r: TF.cross_entropy(x, y, reduction=r),
            lambda x, y, r=r: F.cross_entropy(x, y, reduction=r),
            {},
        )
        for r in ("mean", "sum", "none")
    },
    **{
        f"cross_entropy_smoothing_{ls}": (
            [(32, 10), (32, 10)],
            lambda x, y, ls=ls: TF.cross_entropy(x, y, label_smoothing=ls),
            lambda x, y, ls=ls: F.cross_entropy(x, y, label_smoothing=ls),
            {},
        )
        for ls in (0.0, 0.3, 0.7, 1.0)
    },
    "cross_entropy_ids_smoothing": (
        [(32, 10)],
        lambda x: TF.cross_entropy(x, torch.arange(32) % 10, label_smoothing=0.2),
        lambda x: F.cross_entropy(x, np.arange(32) % 10, label_smoothing=0.2),
        {},
    ),
    "cross_entropy_ignore_index": (
        [(6, 4)],
        lambda x: TF.cross_entropy(x, torch.tensor([0, 1, -100, 3, 1, -100])),
        lambda x: F.cross_entropy(x, np.array([0, 1, -100, 3, 1, -100])),
        {},
    ),
    **{
        f"nll_loss_{r}": (
            [(32, 10)],
            lambda x, r=r: TF.nll_loss(TF.log_softmax(x, dim=1), torch.arange(32) % 10, reduction=r),
            lambda x, r=r: F.nll_loss(x.log_softmax(1), np.arange(32) % 10, reduction=r),
            {},
        )
        for r in ("mean", "sum", "none")
    },
    "nll_loss_weight": (
        [(32, 10), (10,)],
        lambda x, w: TF.nll_loss(TF.log_softmax(x, dim=1), torch.arange(32) % 10, weight=w.detach()),
        lambda x, w: F.nll_loss(x.log_softmax(1), np.arange(32) % 10, weight=w.detach()),
        {},
    ),
    "nll_loss_ignore_index": (
        None,
        lambda x: TF.nll_loss(TF.log_softmax(x, dim=1), torch.tensor([0, 1, 2]), ignore_index=1),
        lambda x: F.nll_loss(x.log_softmax(1), np.array([0, 1, 2]), ignore_index=1),
        {"vals": [[[2.0, 0.5, -1.0], [1.5, 2.5, -0.5], [0.0, -2.0, 1.0]]]},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_torch(name, oracle):
    shapes, torch_fn, minigrad_fn, options = CASES[name]
    helper_test_op(oracle, name, shapes, torch_fn, minigrad_fn, **options)


def test_the_case_list_covers_the_issue_ops():
    wanted = [
        "clip",
        "cross_entropy",
        "maximum",
        "minimum",
        "logsumexp",
        "prod",
        "pow_tensor",
        "flip",
        "min",
        "expand",
        "softplus",
        "sin",
        "cos",
        "erf",
        "nll_loss",
        "smoothing",
        "ignore_index",
        "_none",
        "exp2",
        "log2",
        "rsqrt",
        "std",
        "var",
        "unflatten",
        "argmin",
        "leaky_relu",
        "sign",
        "invert",
        "squeeze_0d",
        "matmul",
        "softmax",
        "cat",
        "stack",
        "where",
    ]
    assert [w for w in wanted if not any(w in name for name in CASES)] == []
    assert len(CASES) >= 114
