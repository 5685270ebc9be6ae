"""Forward and backward against PyTorch, where it is installed (skipped otherwise)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F

torch = pytest.importorskip("torch")


def pair(array):
    return mg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


rng = np.random.default_rng(0)
CASES = {
    "matmul_tanh": (lambda a, b: (a @ b).tanh().sum(), [(2, 3, 4), (4, 5)]),
    "broadcast_mul_div": (lambda a, b: (a * b / (b * b + 1.0)).sum(), [(3, 1, 4), (2, 4)]),
    "softmax": (lambda a: (a.softmax(-1) * a).sum(), [(3, 5)]),
    "log_softmax": (lambda a: (a.log_softmax(-1) ** 2).sum(), [(3, 5)]),
    "sigmoid_exp": (lambda a: (a.sigmoid() + (a * 0.5).exp()).mean(), [(4, 3)]),
    "max_axis": (lambda a: a.max(1).sum() if isinstance(a, mg.Tensor) else a.amax(1).sum(), [(4, 3)]),
    "reshape_permute": (lambda a: (a.reshape(4, 6).T.tanh() * 2.0).sum() if isinstance(a, mg.Tensor)
                        else (a.reshape(4, 6).T.tanh() * 2.0).sum(), [(2, 3, 4)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_pytorch(name):
    fn, shapes = CASES[name]
    arrays = [rng.normal(size=s) for s in shapes]
    ours, theirs = zip(*(pair(a) for a in arrays))
    out_m, out_t = fn(*ours), fn(*theirs)
    np.testing.assert_allclose(out_m.data, out_t.detach().numpy(), rtol=1e-10)
    out_m.backward()
    out_t.backward()
    for m, t in zip(ours, theirs):
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_logsigmoid_matches_pytorch():
    x = np.concatenate([rng.normal(size=12) * 4, [-800.0, -40.0, 40.0, 800.0]])
    m, t = pair(x)
    out_m, out_t = F.logsigmoid(m), torch.nn.functional.logsigmoid(t)
    np.testing.assert_allclose(out_m.data, out_t.detach().numpy(), rtol=1e-12)
    (out_m * np.arange(x.size)).sum().backward()
    (out_t * torch.arange(x.size)).sum().backward()
    np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_pytorch(approximate):
    x = rng.normal(size=(5, 4)) * 2
    m, t = pair(x)
    F.gelu(m, approximate=approximate).sum().backward()
    torch.nn.functional.gelu(t, approximate=approximate).sum().backward()
    np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_matches_pytorch(reduction):
    logits, targets = rng.normal(size=(6, 7)) * 3, rng.integers(0, 7, size=6)
    m, t = pair(logits)
    lm = F.cross_entropy(m, targets, reduction=reduction)
    lt = torch.nn.functional.cross_entropy(t, torch.tensor(targets), reduction=reduction)
    np.testing.assert_allclose(lm.data, lt.detach().numpy(), rtol=1e-12)
    lm.backward()
    lt.backward()
    np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_linear_matches_pytorch():
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4)), rng.normal(size=5)
    (xm, xt), (wm, wt), (bm, bt) = pair(x), pair(w), pair(b)
    (F.linear(xm, wm, bm) ** 2).sum().backward()
    (torch.nn.functional.linear(xt, wt, bt) ** 2).sum().backward()
    for m, t in [(xm, xt), (wm, wt), (bm, bt)]:
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-9)
