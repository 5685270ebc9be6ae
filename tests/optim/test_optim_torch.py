"""100 training steps here and in PyTorch (live where it is installed, recorded where not), from the
same weights on the same batches. The embedding's gradient is a RowSparse here and dense there: by
default it must mean the same thing, rows absent from a batch included."""

import numpy as np
import pytest
from oracle import torch

from minigrad import nn, optim
from minigrad.nn import functional as F

V, D, STEPS = 12, 5, 100
rng = np.random.default_rng(0)
TABLE, HEAD, BIAS = rng.normal(size=(V, D)), rng.normal(size=(V, D)) * 0.3, rng.normal(size=V) * 0.1
# ids read only rows 0..5, so rows 6..11 of the table never appear in a lookup gradient
BATCHES = [(rng.integers(0, 6, size=8), rng.integers(0, V, size=8)) for _ in range(STEPS)]


def ours(make_optimizer, tied=False, dtype=np.float64):
    emb = nn.Embedding(V, D, sparse=True, dtype=dtype)
    head = nn.Linear(D, V, bias=not tied, dtype=dtype)
    emb.weight.data[...] = TABLE
    if tied:
        head.weight = emb.weight
    else:
        head.weight.data[...], head.bias.data[...] = HEAD, BIAS
    opt = make_optimizer(emb, head)
    for ids, targets in BATCHES:
        opt.zero_grad()
        F.cross_entropy(head(emb(ids)), targets).backward()
        opt.step()
    return emb, head


def theirs(oracle, recipe, options, tied=False, sparse=False, dtype="float64"):
    """The same run in torch, its optimizers made by `recipe` with `options`; returns the
    parameters after it (a tied table once)."""
    return oracle(torch_run, recipe, options, tied, sparse, dtype, TABLE, HEAD, BIAS, BATCHES)


def torch_optimizers(recipe, options, emb, head):
    if recipe == "groups":
        groups = [{"params": [emb.weight], "lr": 0.02, "weight_decay": 0.0},
                  {"params": [head.weight, head.bias]}]
        return [torch.optim.AdamW(groups, **options)]
    if recipe == "SparseAdam":  # the table's rows with SparseAdam, the head with Adam
        return [torch.optim.SparseAdam([emb.weight], **options),
                torch.optim.Adam([head.weight, head.bias], **options)]
    return [getattr(torch.optim, recipe)(params(emb, head), **options)]


def torch_run(recipe, options, tied, sparse, dtype, table, head_weight, bias, batches):
    dtype = getattr(torch, dtype)
    emb = torch.nn.Embedding(V, D, sparse=sparse, dtype=dtype)
    head = torch.nn.Linear(D, V, bias=not tied, dtype=dtype)
    with torch.no_grad():
        emb.weight.copy_(torch.tensor(table))
        if tied:
            head.weight = emb.weight
        else:
            head.weight.copy_(torch.tensor(head_weight))
            head.bias.copy_(torch.tensor(bias))
    optimizers = torch_optimizers(recipe, options, emb, head)
    for ids, targets in batches:
        for opt in optimizers:
            opt.zero_grad()
        torch.nn.functional.cross_entropy(head(emb(torch.tensor(ids))), torch.tensor(targets)).backward()
        for opt in optimizers:
            opt.step()
    return [p.detach() for p in params(emb, head)]


def params(emb, head):
    """Each parameter once: a tied table is one parameter, listed once."""
    listed = [emb.weight, head.weight] + ([head.bias] if head.bias is not None else [])
    return [p for i, p in enumerate(listed) if all(p is not q for q in listed[:i])]


def assert_same(our_model, their_params, **tolerance):
    for mine, yours in zip(params(*our_model), their_params, strict=True):
        np.testing.assert_allclose(mine.data, yours, **tolerance)


CONFIGS = {
    "sgd_momentum_wd": ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    "sgd_dampening": ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    "sgd_nesterov_wd": ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    "adam_wd": ("Adam", dict(lr=0.01, weight_decay=0.01)),
    "adam_betas_eps": ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-3)),
    "adamw": ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    "adamw_defaults": ("AdamW", dict()),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_sparse_embedding_in_dense_mode_matches_pytorch(name, oracle):
    cls, options = CONFIGS[name]
    mine = ours(lambda emb, head: getattr(optim, cls)(params(emb, head), **options))
    assert_same(mine, theirs(oracle, cls, options), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adam_wd", "adamw"])
def test_adam_in_threaded_row_blocks_matches_pytorch_and_the_plain_form(small_row_blocks, name, oracle):
    from minigrad.engine import kernels

    cls, options = CONFIGS[name]

    def run():
        return ours(lambda emb, head: getattr(optim, cls)(params(emb, head), **options), tied=True)

    in_blocks = run()
    with kernels.plain_only():
        plain = run()
    for mine, reference in zip(params(*in_blocks), params(*plain), strict=True):
        assert mine.data.tobytes() == reference.data.tobytes()
    assert_same(in_blocks, theirs(oracle, cls, options, tied=True), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["sgd_momentum_wd", "adamw"])
def test_tied_embedding_matches_pytorch(name, oracle):
    cls, options = CONFIGS[name]
    mine = ours(lambda emb, head: getattr(optim, cls)(params(emb, head), **options), tied=True)
    assert mine[0].weight is mine[1].weight
    assert_same(mine, theirs(oracle, cls, options, tied=True), rtol=1e-10, atol=1e-12)


def test_parameter_groups_match_pytorch(oracle):
    def groups(emb, head):
        return [{"params": [emb.weight], "lr": 0.02, "weight_decay": 0.0},
                {"params": [head.weight, head.bias]}]

    mine = ours(lambda emb, head: optim.AdamW(groups(emb, head), lr=0.01, weight_decay=0.1))
    assert_same(mine, theirs(oracle, "groups", dict(lr=0.01, weight_decay=0.1)), rtol=1e-10, atol=1e-12)


def test_float32_training_matches_pytorch(oracle):
    mine = ours(lambda emb, head: optim.AdamW(params(emb, head), lr=0.01), dtype=np.float32)
    yours = theirs(oracle, "AdamW", dict(lr=0.01), dtype="float32")
    assert mine[0].weight.dtype == yours[0].dtype == np.float32
    assert_same(mine, yours, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("eps, tolerance", [(1e-14, 1e-10), (1e-8, 1e-4)])
def test_lazy_adam_matches_sparse_adam(eps, tolerance, oracle):
    # The two differ only in where eps sits: SparseAdam adds it to sqrt(v) before the bias
    # correction, Adam after, a relative difference of about eps / sqrt(v_hat * (1 - beta2^t))
    # per step. With a negligible eps they agree to rounding.
    mine = ours(lambda emb, head: optim.Adam(params(emb, head), lr=0.01, eps=eps, lazy=True))
    yours = theirs(oracle, "SparseAdam", dict(lr=0.01, eps=eps), sparse=True)
    np.testing.assert_array_equal(mine[0].weight.data[6:], TABLE[6:])  # never read: never stepped
    assert_same(mine, yours, rtol=tolerance, atol=tolerance / 10)
    dense = ours(lambda emb, head: optim.Adam(params(emb, head), lr=0.01))
    assert np.abs(dense[0].weight.data - mine[0].weight.data).max() > 1e-2  # lazy is not dense Adam
