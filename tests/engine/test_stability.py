"""Softmax, log-softmax and cross-entropy stay finite and exact for huge logits."""

import numpy as np

import minigrad as mg
from minigrad.nn import functional as F


def test_softmax_of_logits_around_1e4_is_finite_and_exact():
    z = mg.tensor(np.array([[1e4, 1e4 + 1.0, 1e4 - 2.0]]), requires_grad=True)
    p = z.softmax(-1)
    expected = np.exp([-1.0, 0.0, -3.0]) / np.exp([-1.0, 0.0, -3.0]).sum()
    np.testing.assert_allclose(p.data[0], expected, rtol=1e-12)
    (p * np.array([1.0, 2.0, 3.0])).sum().backward()
    assert np.all(np.isfinite(z.grad))


def test_log_softmax_and_cross_entropy_at_1e4_in_float32():
    z = mg.tensor(np.array([[1e4, -1e4, 0.0]], dtype=np.float32), requires_grad=True)
    assert np.all(np.isfinite(z.log_softmax(-1).data))
    loss = F.cross_entropy(z, np.array([1]))
    assert np.isfinite(loss.item()) and loss.item() == np.float32(2e4)
    loss.backward()
    np.testing.assert_allclose(z.grad, [[1.0, -1.0, 0.0]], atol=1e-6)  # p - y


def test_cross_entropy_gradient_is_p_minus_y_over_n():
    logits = np.random.default_rng(4).normal(size=(4, 6))
    targets = np.array([0, 5, 2, 2])
    z = mg.tensor(logits, requires_grad=True)
    F.cross_entropy(z, targets).backward()
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = np.eye(6)[targets]
    np.testing.assert_allclose(z.grad, (p - y) / 4, rtol=1e-12)
