"""Checking an op or module, shared by the op tests: finite differences on float64 leaves, and
PyTorch given the same values (through the `oracle` fixture: live or recorded), the same weighted
sum of the outputs backpropagated, every result compared."""

from __future__ import annotations

import numpy as np
from oracle import torch

import minigrad as mg

rng = np.random.default_rng(0)


def leaf(shape, scale=1.0):
    """A float64 leaf of standard normal values (times scale) that requires grad."""
    return mg.tensor(scale * rng.standard_normal(shape), requires_grad=True)


def check(fn, *inputs):
    """fn's backward agrees with central differences on every input (the report says where not)."""
    report = mg.gradcheck(fn, list(inputs))
    assert report.ok, str(report)


def arrays(*shapes, scale=1.0, seed=0):
    """float64 standard normal arrays (times scale) of these shapes, the same for the same seed."""
    draw = np.random.default_rng(seed)
    return [scale * draw.standard_normal(shape) for shape in shapes]


def leaves(lib, values):
    """Leaves of `lib` (mg or torch) holding `values`, each requiring grad."""
    return [lib.tensor(v, requires_grad=True) for v in values]


def torch_backward(out, seed=0):
    """Backpropagate sum(out * W) through torch's `out`, W a standard normal array of out's shape
    drawn from `seed`; returns W, for minigrad's side to use (see `backward`)."""
    weights = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    (out * torch.tensor(weights, dtype=out.dtype)).sum().backward()
    return weights


def backward(out, weights):
    """minigrad's side of torch_backward: backpropagate sum(out * W)."""
    (out * mg.tensor(weights.astype(out.dtype))).sum().backward()


def assert_close(m, t, rtol=1e-10, atol=1e-12):
    """A minigrad result (Tensor, array or RowSparse) equals torch's (an array); never passes on NaN."""
    ours = m.data if isinstance(m, mg.Tensor) else mg.engine.to_dense(m)
    assert np.all(np.isfinite(ours)), "a NaN or inf in minigrad's result"
    np.testing.assert_allclose(ours, np.asarray(t), rtol=rtol, atol=atol)
