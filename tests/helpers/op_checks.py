"""Checking an op or module, shared by the op tests: finite differences on float64 leaves, and
PyTorch given the same values, the same weighted sum of the outputs backpropagated, every
result compared."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

rng = np.random.default_rng(0)


def leaf(shape, scale=1.0):
    """A float64 leaf of standard normal values (times scale) that requires grad."""
    return mg.tensor(scale * rng.standard_normal(shape), requires_grad=True)


def check(fn, *inputs):
    """fn's backward agrees with central differences on every input (the report says where not)."""
    report = mg.gradcheck(fn, list(inputs))
    assert report.ok, str(report)


def torch_pair(shape, scale=1.0):
    """(a minigrad leaf, a torch leaf) holding the same float64 values; skips without torch."""
    torch = pytest.importorskip("torch")
    a = scale * rng.standard_normal(shape)
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def backward_both(out_m, out_t):
    """Backpropagate sum(out * W) through both, W one random array of out's shape."""
    import torch

    weights = rng.standard_normal(out_m.shape)
    (out_m * weights).sum().backward()
    (out_t * torch.tensor(weights)).sum().backward()


def assert_close(m, t, rtol=1e-10, atol=1e-12):
    """A minigrad result (Tensor, array or RowSparse) equals a torch one; never passes on NaN."""
    ours = m.data if isinstance(m, mg.Tensor) else mg.engine.to_dense(m)
    assert np.all(np.isfinite(ours)), "a NaN or inf in minigrad's result"
    np.testing.assert_allclose(ours, t.detach().numpy(), rtol=rtol, atol=atol)
