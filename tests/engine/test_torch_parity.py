"""Forward and backward against PyTorch (live where it is installed, recorded where not)."""

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

CASES = {
    "matmul_tanh": (lambda a, b: (a @ b).tanh().sum(), [(2, 3, 4), (4, 5)]),
    "broadcast_mul_div": (lambda a, b: (a * b / (b * b + 1.0)).sum(), [(3, 1, 4), (2, 4)]),
    "softmax": (lambda a: (a.softmax(-1) * a).sum(), [(3, 5)]),
    "log_softmax": (lambda a: (a.log_softmax(-1) ** 2).sum(), [(3, 5)]),
    "sigmoid_exp": (lambda a: (a.sigmoid() + (a * 0.5).exp()).mean(), [(4, 3)]),
    "max_axis": (lambda a: a.max(1).sum() if isinstance(a, mg.Tensor) else a.amax(1).sum(), [(4, 3)]),
    "reshape_permute": (lambda a: (a.reshape(4, 6).T.tanh() * 2.0).sum(), [(2, 3, 4)]),
}


def forward_backward(lib, name, arrays):
    """CASES[name] on leaves of `lib` (mg or torch) holding `arrays`: the output and each leaf's grad."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = CASES[name][0](*leaves)
    out.backward()
    return out, [leaf.grad for leaf in leaves]


def torch_forward_backward(name, arrays):
    return forward_backward(torch, name, arrays)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_pytorch(name, oracle):
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s) for s in CASES[name][1]]
    out_m, grads_m = forward_backward(mg, name, arrays)
    out_t, grads_t = oracle(torch_forward_backward, name, arrays)
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-10)
    for m, t in zip(grads_m, grads_t, strict=True):
        np.testing.assert_allclose(m, t, rtol=1e-9, atol=1e-12)


def torch_logsigmoid(x):
    t = torch.tensor(x, requires_grad=True)
    out = TF.logsigmoid(t)
    (out * torch.arange(x.size)).sum().backward()
    return out, t.grad


def test_logsigmoid_matches_pytorch(oracle):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=12) * 4, [-800.0, -40.0, 40.0, 800.0]])
    m = mg.tensor(x, requires_grad=True)
    out_m = F.logsigmoid(m)
    (out_m * np.arange(x.size)).sum().backward()
    out_t, grad_t = oracle(torch_logsigmoid, x)
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-12)
    np.testing.assert_allclose(m.grad, grad_t, rtol=1e-12, atol=1e-300)


def torch_gelu_grad(x, approximate):
    t = torch.tensor(x, requires_grad=True)
    TF.gelu(t, approximate=approximate).sum().backward()
    return t.grad


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_pytorch(approximate, oracle):
    x = np.random.default_rng(2).normal(size=(5, 4)) * 2
    m = mg.tensor(x, requires_grad=True)
    F.gelu(m, approximate=approximate).sum().backward()
    np.testing.assert_allclose(m.grad, oracle(torch_gelu_grad, x, approximate), rtol=1e-9, atol=1e-12)


def torch_cross_entropy(logits, targets, reduction):
    t = torch.tensor(logits, requires_grad=True)
    loss = TF.cross_entropy(t, torch.tensor(targets), reduction=reduction)
    loss.backward()
    return loss, t.grad


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_matches_pytorch(reduction, oracle):
    rng = np.random.default_rng(3)
    logits, targets = rng.normal(size=(6, 7)) * 3, rng.integers(0, 7, size=6)
    m = mg.tensor(logits, requires_grad=True)
    lm = F.cross_entropy(m, targets, reduction=reduction)
    lm.backward()
    loss_t, grad_t = oracle(torch_cross_entropy, logits, targets, reduction)
    np.testing.assert_allclose(lm.data, loss_t, rtol=1e-12)
    np.testing.assert_allclose(m.grad, grad_t, rtol=1e-9, atol=1e-14)


def torch_linear_grads(x, w, b):
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    (TF.linear(*leaves) ** 2).sum().backward()
    return [t.grad for t in leaves]


def test_linear_matches_pytorch(oracle):
    rng = np.random.default_rng(4)
    arrays = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4)), rng.normal(size=5)
    leaves = [mg.tensor(a, requires_grad=True) for a in arrays]
    (F.linear(*leaves) ** 2).sum().backward()
    for m, t in zip(leaves, oracle(torch_linear_grads, *arrays), strict=True):
        np.testing.assert_allclose(m.grad, t, rtol=1e-9)
