"""F.cross_entropy's PyTorch options (class probabilities, label_smoothing, ignore_index, weight,
reduction="none") and F.nll_loss: against torch forward and backward, gradchecked in float64, the
plain fused op kept for the common case, and bad arguments refused."""

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F

rng = np.random.default_rng(0)
N, C = 6, 5
LOGITS = rng.normal(size=(N, C)) * 2
IDS = np.array([0, 4, 2, 2, 1, 3])
IDS_IGNORED = np.array([0, -100, 2, 2, -100, 3])
IDS_OTHER_IGNORE = np.array([0, 7, 2, 7, 1, 3])
PROBS = rng.dirichlet(np.ones(C), size=N)
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5, 0.25])

# name: (targets, keyword options) for cross_entropy (and nll_loss where it takes them)
CASES = {
    "ids_mean": (IDS, {}),
    "ids_sum": (IDS, {"reduction": "sum"}),
    "ids_none": (IDS, {"reduction": "none"}),
    "probabilities_mean": (PROBS, {}),
    "probabilities_none": (PROBS, {"reduction": "none"}),
    "probabilities_smoothing_weight": (PROBS, {"label_smoothing": 0.2, "weight": WEIGHT}),
    "smoothing": (IDS, {"label_smoothing": 0.1}),
    "smoothing_sum": (IDS, {"label_smoothing": 0.3, "reduction": "sum"}),
    "ignore_index_default": (IDS_IGNORED, {}),
    "ignore_index_given": (IDS_OTHER_IGNORE, {"ignore_index": 7}),
    "ignore_smoothing_none": (IDS_IGNORED, {"label_smoothing": 0.25, "reduction": "none"}),
    "weight_mean": (IDS, {"weight": WEIGHT}),
    "weight_ignore_smoothing": (IDS_IGNORED, {"weight": WEIGHT, "label_smoothing": 0.1}),
}
NLL_CASES = [name for name, (t, kw) in CASES.items() if t.dtype.kind == "i" and "label_smoothing" not in kw]


def torch_loss(loss, logits, targets, kw):
    """TF.<loss> of logits (log-softmaxed first for nll_loss) with the options `kw`; then the
    backward of G, G drawn in the loss's shape (returned too)."""
    theirs = torch.tensor(logits, requires_grad=True)
    options = {k: torch.tensor(v) if k == "weight" else v for k, v in kw.items()}
    inputs = theirs.log_softmax(-1) if loss == "nll_loss" else theirs
    out = getattr(TF, loss)(inputs, torch.tensor(targets), **options)
    g = np.random.default_rng(1).normal(size=tuple(out.shape))
    out.backward(torch.tensor(g))
    return out, g, theirs.grad


@pytest.mark.parametrize("name", list(CASES))
def test_cross_entropy_matches_torch(name, oracle):
    targets, kw = CASES[name]
    out_t, g, grad_t = oracle(torch_loss, "cross_entropy", LOGITS, targets, kw)
    ours = mg.tensor(LOGITS, requires_grad=True)
    out_m = F.cross_entropy(ours, targets, **kw)
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-12, atol=1e-14)
    out_m.backward(g)
    np.testing.assert_allclose(ours.grad, grad_t, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", NLL_CASES)
def test_nll_loss_matches_torch(name, oracle):
    targets, kw = CASES[name]
    out_t, g, grad_t = oracle(torch_loss, "nll_loss", LOGITS, targets, kw)
    ours = mg.tensor(LOGITS, requires_grad=True)
    out_m = F.nll_loss(ours.log_softmax(-1), targets, **kw)
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-12, atol=1e-14)
    out_m.backward(g)
    np.testing.assert_allclose(ours.grad, grad_t, rtol=1e-10, atol=1e-14)


def torch_classes_on_axis_1(logits, targets):
    theirs = torch.tensor(logits, requires_grad=True)
    # PyTorch wants the classes on axis 1 for rank 3
    out = TF.cross_entropy(theirs.permute(0, 2, 1), torch.tensor(targets), label_smoothing=0.1,
                           reduction="none")
    out.sum().backward()
    return out, theirs.grad


def test_classes_on_the_last_axis_of_a_batch_of_sequences(oracle):
    logits = np.random.default_rng(2).normal(size=(2, 3, C))
    targets = np.array([[0, 1, -100], [4, 4, 2]])
    out_t, grad_t = oracle(torch_classes_on_axis_1, logits, targets)
    ours = mg.tensor(logits, requires_grad=True)
    out_m = F.cross_entropy(ours, targets, label_smoothing=0.1, reduction="none")
    np.testing.assert_allclose(out_m.data, out_t, rtol=1e-12)
    out_m.sum().backward()
    np.testing.assert_allclose(ours.grad, grad_t, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_cross_entropy_gradcheck(name):
    targets, kw = CASES[name]
    report = mg.gradcheck(lambda z: F.cross_entropy(z, targets, **kw),
                          [mg.tensor(LOGITS, requires_grad=True)])
    assert report.ok, str(report)


@pytest.mark.parametrize("name", NLL_CASES)
def test_nll_loss_gradcheck(name):
    targets, kw = CASES[name]
    report = mg.gradcheck(lambda x: F.nll_loss(x, targets, **kw),
                          [mg.tensor(-np.abs(LOGITS), requires_grad=True)])
    assert report.ok, str(report)


def torch_one_position(z, y, kw):
    return TF.cross_entropy(torch.tensor(z), torch.tensor(y), **kw)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.2}, {"reduction": "none"}])
def test_one_position_with_a_zero_d_target(kw, oracle):
    z, y = LOGITS[0], np.array(3)
    assert mg.gradcheck(lambda z: F.cross_entropy(z, y, **kw), [mg.tensor(z, requires_grad=True)]).ok
    ours = F.cross_entropy(mg.tensor(z), y, **kw)
    theirs = oracle(torch_one_position, z, y, kw)
    assert ours.shape == theirs.shape == ()
    np.testing.assert_allclose(ours.data, theirs, rtol=1e-12)


def test_the_common_case_keeps_the_fused_op():
    z = mg.tensor(LOGITS, requires_grad=True)
    assert F.cross_entropy(z, IDS).grad_fn.op is mg.engine.ops.CrossEntropy
    assert F.cross_entropy(z, IDS, reduction="sum").grad_fn.op is mg.engine.ops.CrossEntropy
    for targets, kw in CASES.values():
        if (set(kw) - {"reduction"}) or kw.get("reduction") == "none" or targets is not IDS:
            assert F.cross_entropy(z, targets, **kw).grad_fn.op is mg.engine.ops.SoftTargetCrossEntropy


def test_every_target_ignored_gives_nan_as_torch():
    loss = F.cross_entropy(mg.tensor(LOGITS), np.full(N, -100))
    assert np.isnan(loss.item())


def test_bad_arguments_name_themselves():
    z = mg.tensor(LOGITS)
    with pytest.raises(ValueError, match="label_smoothing must be in \\[0, 1\\], got 1.5"):
        F.cross_entropy(z, IDS, label_smoothing=1.5)
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        F.cross_entropy(z, IDS, label_smoothing=0.1, reduction="avg")
    with pytest.raises(ValueError, match="weight has shape \\(3,\\), expected \\(5,\\)"):
        F.cross_entropy(z, IDS, weight=np.ones(3))
    with pytest.raises(ValueError, match="float targets are class probabilities"):
        F.cross_entropy(z, PROBS[:, :3])
    with pytest.raises(IndexError, match=r"target 9 at targets\[1\] is out of range for 5 classes "
                                         r"\(or ignore_index=-100\)"):
        F.cross_entropy(z, np.array([0, 9, 1, 1, 1, 1]), label_smoothing=0.1)
    # -100 is a class id like any other when another id is the one ignored
    with pytest.raises(IndexError, match=r"target -100 at targets\[1\]"):
        F.cross_entropy(z, IDS_IGNORED, ignore_index=7)
    with pytest.raises(TypeError, match="nll_loss: targets must be integer class ids"):
        F.nll_loss(z, PROBS)
    with pytest.raises(ValueError, match="nll_loss: targets has shape \\(2,\\), expected \\(6,\\)"):
        F.nll_loss(z, np.array([0, 1]))
    with pytest.raises(ValueError, match="input must have a class axis"):
        F.nll_loss(mg.tensor(1.0), np.array(0))


def test_probability_targets_get_a_gradient_as_in_torch():
    targets = mg.tensor(PROBS, requires_grad=True)
    report = mg.gradcheck(lambda z, t: F.cross_entropy(z, t, label_smoothing=0.1, weight=WEIGHT),
                          [mg.tensor(LOGITS, requires_grad=True), targets])
    assert report.ok, str(report)
