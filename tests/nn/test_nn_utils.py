"""nn.utils.clip_grad_norm_ and clip_grad_value_ against torch.nn.utils, RowSparse gradients
clipped without densifying; and zero_grad(set_to_none=...) on optimizers and modules."""

import math

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad import nn, optim
from minigrad.engine import RowSparse, to_dense
from minigrad.nn.utils import clip_grad_norm_, clip_grad_value_

ORDERS = [2.0, 1, 3.5, math.inf, "inf", 0, -math.inf, -1.5]


def dense_grads(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(5).astype(dtype),
            np.array(-1.5, dtype=dtype)]


def params_with(grads):
    """minigrad Parameters with these gradients, plus one without a gradient."""
    params = []
    for g in grads:
        p = nn.Parameter(np.zeros(to_dense(g).shape, dtype=to_dense(g).dtype))
        p.grad = g.copy() if isinstance(g, np.ndarray) else RowSparse(g.indices, g.values.copy(), g.shape)
        params.append(p)
    return params + [nn.Parameter(np.zeros(2))]


def torch_params_with(grads):
    """torch Parameters with these (dense) gradients, plus one without a gradient."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.from_numpy(g).dtype))
        p.grad = torch.from_numpy(np.array(g))
        params.append(p)
    return params + [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))]


def torch_clip_grad_norm(grads, max_norm, norm_type):
    """torch.nn.utils.clip_grad_norm_ on parameters with these gradients: (the total norm, each
    parameter's gradient after, None for the one without)."""
    params = torch_params_with(grads)
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    return total, [p.grad for p in params]


def dense(grads):
    return [np.array(to_dense(g)) for g in grads]


def table_grad(V=50, d=3, rows=(7, 7, 2, 31)):
    """A RowSparse of a (V, d) table with a repeated row and most rows absent."""
    values = np.arange(1.0, 1.0 + len(rows) * d).reshape(len(rows), d) / 7
    return RowSparse(np.array(rows), values, (V, d))


def refuse_densify(monkeypatch):
    def refuse(self):
        raise AssertionError("the RowSparse gradient was densified")
    monkeypatch.setattr(RowSparse, "to_dense", refuse)


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
@pytest.mark.parametrize("norm_type", ORDERS)
def test_clip_grad_norm_matches_torch(norm_type, max_norm, oracle):
    grads = dense_grads()
    expected, their_grads = oracle(torch_clip_grad_norm, grads, max_norm, norm_type)
    ours = params_with(grads)
    total = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    assert isinstance(total, mg.Tensor) and total.shape == ()
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    for p, q in zip(ours, their_grads, strict=True):
        if q is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad, q, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("norm_type", ORDERS)
def test_clip_grad_norm_of_row_sparse_gradients_matches_torch_without_densifying(norm_type, monkeypatch,
                                                                                 oracle):
    grads = [table_grad(), dense_grads()[0]]
    # torch sees the dense sums of the repeated rows
    expected, their_grads = oracle(torch_clip_grad_norm, dense(grads), 0.25, norm_type)
    ours = params_with(grads)
    refuse_densify(monkeypatch)
    total = clip_grad_norm_(ours, 0.25, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    table = ours[0].grad
    assert isinstance(table, RowSparse) and table.indices.size <= 4, "the gradient kept its rows"
    monkeypatch.undo()
    np.testing.assert_allclose(table.to_dense(), their_grads[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ours[1].grad, their_grads[1], rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_of_a_million_row_table_touches_only_the_rows_read(monkeypatch):
    table = nn.Embedding(1_000_000, 8, sparse=True)
    table(mg.tensor([[3, 3, 999_999]])).sum().backward()
    refuse_densify(monkeypatch)
    total = clip_grad_norm_(table.parameters(), 1.0)
    assert total.item() == pytest.approx(math.sqrt(8 * 2**2 + 8), rel=1e-6)  # row 3 read twice
    grad = table.weight.grad
    assert sorted(grad.coalesce().indices.tolist()) == [3, 999_999]
    np.testing.assert_allclose(np.abs(grad.coalesce().values).sum(), (16 + 8) / (total.item() + 1e-6),
                               rtol=1e-6)


def test_clip_grad_norm_float32_gives_a_float32_total_like_torch(oracle):
    grads = dense_grads(np.float32)
    expected, their_grads = oracle(torch_clip_grad_norm, grads, 0.1, 2.0)
    ours = params_with(grads)
    total = clip_grad_norm_(ours, 0.1)
    assert total.dtype == np.float32 and expected.dtype == np.float32
    np.testing.assert_allclose(total.item(), expected, rtol=1e-6)
    for p, q in zip(ours[:3], their_grads):
        assert p.grad.dtype == np.float32
        np.testing.assert_allclose(p.grad, q, rtol=1e-6)


def test_clip_grad_norm_scales_in_place_as_torch_mul_does():
    p = nn.Parameter(np.zeros(3))
    p.grad = grad = np.array([3.0, 4.0, 0.0])
    clip_grad_norm_(p, 1.0)  # one Tensor is accepted as well as an iterable
    assert p.grad is grad
    np.testing.assert_allclose(grad, np.array([0.6, 0.8, 0.0]) * 5 / (5 + 1e-6))


def test_clip_grad_norm_with_no_gradients_returns_zero():
    total = clip_grad_norm_([nn.Parameter(np.zeros(2))], 1.0)
    assert total.item() == 0.0 and total.dtype == np.float32  # torch.tensor(0.0)


def test_clip_grad_norm_nonfinite(oracle):
    grads = [np.array([1.0, np.nan]), np.array([np.inf, 2.0])]
    with pytest.raises(RuntimeError, match=r"clip_grad_norm_: the total norm of order 2.0 of the gradients "
                                           r"is nan, not finite \(first: parameter 1 of shape \(2,\)\)"):
        clip_grad_norm_([nn.Parameter(np.zeros(3))] + params_with(grads), 1.0, error_if_nonfinite=True)
    for order in (2.0, math.inf):
        ours = params_with(grads[1:])
        total = clip_grad_norm_(ours, 1.0, order)  # without the check: scaled by it, as torch does
        expected, their_grads = oracle(torch_clip_grad_norm, grads[1:], 1.0, order)
        assert total.item() == expected.item() == math.inf
        np.testing.assert_array_equal(ours[0].grad, their_grads[0])


def test_clip_grad_norm_argument_errors():
    p = params_with([np.ones(2)])
    with pytest.raises(ValueError, match="clip_grad_norm_: max_norm must be >= 0, got -1.0"):
        clip_grad_norm_(p, -1.0)
    with pytest.raises(ValueError, match="clip_grad_norm_: max_norm must be >= 0, got nan"):
        clip_grad_norm_(p, float("nan"))
    with pytest.raises(TypeError, match="clip_grad_norm_: max_norm must be a number, got str '1'"):
        clip_grad_norm_(p, "1")
    with pytest.raises(ValueError, match="clip_grad_norm_: norm_type must be a number or 'inf', got 'two'"):
        clip_grad_norm_(p, 1.0, norm_type="two")
    with pytest.raises(TypeError, match=r"clip_grad_norm_: parameters must be a Tensor or an iterable of "
                                        r"Tensors, got a Linear; pass model.parameters\(\)"):
        clip_grad_norm_(nn.Linear(2, 2), 1.0)
    with pytest.raises(TypeError, match="clip_grad_norm_: parameter 1 is a ndarray, not a Tensor"):
        clip_grad_norm_([p[0], np.ones(2)], 1.0)


def torch_clip_grad_value(grads, clip_value):
    params = torch_params_with(grads)
    torch.nn.utils.clip_grad_value_(params, clip_value)
    return [p.grad for p in params]


def test_clip_grad_value_matches_torch_and_clips_a_row_sparse_gradient_by_its_row_sums(monkeypatch, oracle):
    grads = dense_grads() + [table_grad()]
    their_grads = oracle(torch_clip_grad_value, dense(grads), 0.7)
    ours = params_with(grads)
    refuse_densify(monkeypatch)
    assert clip_grad_value_(ours, 0.7) is None
    table = ours[3].grad
    assert isinstance(table, RowSparse) and table.coalesced and table.indices.tolist() == [2, 7, 31]
    monkeypatch.undo()
    for p, q in zip(ours, their_grads, strict=True):
        if q is not None:
            np.testing.assert_array_equal(to_dense(p.grad), q)


def test_clip_grad_value_argument_errors():
    p = params_with([np.ones(2)])
    with pytest.raises(ValueError, match="clip_grad_value_: clip_value must be >= 0, got -0.5"):
        clip_grad_value_(p, -0.5)
    with pytest.raises(TypeError, match="clip_grad_value_: clip_value must be a number, got NoneType"):
        clip_grad_value_(p, None)


# ---- zero_grad(set_to_none=...) ----------------------------------------------------------------
def torch_zero_grad_then_accumulate(weight, bias, x, via):
    """A torch Linear holding weight and bias: backward of sum(out), zero_grad(set_to_none=False)
    (on the module or an SGD), backward of sum(out ** 2); whether weight.grad survived the zeroing as
    a tensor, and the gradients after."""
    twin = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        twin.weight.copy_(torch.from_numpy(weight))
        twin.bias.copy_(torch.from_numpy(bias))
    zero = twin.zero_grad if via == "module" else torch.optim.SGD(twin.parameters(), lr=0.1).zero_grad
    twin(torch.from_numpy(x)).sum().backward()
    zero(set_to_none=False)
    kept = twin.weight.grad is not None
    (twin(torch.from_numpy(x)) ** 2).sum().backward()
    return kept, [p.grad for p in twin.parameters()]


@pytest.mark.parametrize("via", ["module", "optimizer"])
def test_zero_grad_set_to_none_false_zeroes_in_place_then_accumulates_like_torch(via, oracle):
    model = nn.Linear(3, 2, dtype=np.float64, rng=0)
    x = np.arange(6.0).reshape(2, 3)
    kept, their_grads = oracle(torch_zero_grad_then_accumulate, model.weight.data, model.bias.data, x, via)
    zero = model.zero_grad if via == "module" else optim.SGD(model.parameters(), lr=0.1).zero_grad
    model(mg.tensor(x)).sum().backward()
    held = model.weight.grad
    zero(set_to_none=False)
    assert model.weight.grad is held and not held.any(), "zeroed in place, as torch does"
    assert kept
    (model(mg.tensor(x)) ** 2).sum().backward()
    for p, q in zip(model.parameters(), their_grads, strict=True):
        np.testing.assert_allclose(p.grad, q, rtol=1e-12)
    zero()  # the default, set_to_none=True
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("via", ["module", "optimizer"])
def test_zero_grad_set_to_none_false_keeps_a_table_gradient_sparse(via):
    table = nn.Embedding(10, 2, sparse=True)
    opt = optim.Adam(table.parameters(), lr=0.1)
    table(mg.tensor([1, 4])).sum().backward()
    before = table.weight.data.copy()
    (table.zero_grad if via == "module" else opt.zero_grad)(set_to_none=False)
    grad = table.weight.grad
    assert isinstance(grad, RowSparse) and grad.shape == (10, 2) and grad.indices.size == 0
    opt.step()  # a gradient naming no row: nothing moves
    np.testing.assert_array_equal(table.weight.data, before)
    table(mg.tensor([4])).sum().backward()
    np.testing.assert_array_equal(to_dense(table.weight.grad)[4], [1.0, 1.0])


def test_zeroed_keeps_each_gradient_layout():
    from minigrad.engine import zeroed

    assert zeroed(None) is None
    held = np.ones((2, 3))
    assert zeroed(held) is held and not held.any()
    scalar = zeroed(np.float64(2.5))  # a 0-d sum can come back as a numpy scalar
    assert scalar.shape == () and scalar == 0.0
    frozen = np.ones(3)
    frozen.flags.writeable = False
    fresh = zeroed(frozen)
    assert fresh is not frozen and not fresh.any() and frozen.all(), "a read-only array is not written"
    sparse = zeroed(table_grad())
    assert isinstance(sparse, RowSparse) and sparse.shape == (50, 3) and sparse.indices.size == 0
