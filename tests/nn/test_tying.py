"""Weight tying: one table, two paths (read by lookup, said by the head), one summed gradient."""

import re
from pathlib import Path

import numpy as np
import pytest
from oracle import TF, torch
from tiny_lm import IDS, TARGETS, TinyLM, lm_loss

import minigrad as mg
from minigrad.engine import AccumulateGrad, FunctionNode, RowSparse, to_dense
from minigrad.tools.gradcheck import numerical_gradient


def leaves(seed=0):
    rng = np.random.default_rng(seed)
    E, W, b = rng.normal(size=(7, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=4) * 0.1
    return [mg.tensor(a, requires_grad=True) for a in (E, W, b)]


def constant(t):
    return mg.tensor(t.data.copy())


def test_tied_gradient_matches_finite_differences_of_the_full_loss():
    report = mg.gradcheck(lambda E, W, b: lm_loss(E, E, W, b), leaves())
    assert report.ok, str(report)


def test_tied_module_gradient_matches_finite_differences():
    model = TinyLM(tied=True)
    model.loss().backward()

    def loss_at():
        with mg.no_grad():
            return float(model.loss().data)

    table = model.emb.weight
    np.testing.assert_allclose(table.grad, numerical_gradient(loss_at, table, 1e-6), atol=1e-8)


def test_tied_gradient_is_the_sum_of_the_lookup_path_and_the_projection_path():
    E, W, b = leaves()
    lm_loss(E, E, W, b).backward()
    tied = E.grad

    E_read, _, _ = leaves()  # the head says through a constant copy: only the lookup path
    lm_loss(E_read, constant(E_read), W, b).backward()
    E_say, _, _ = leaves()  # the lookup reads a constant copy: only the projection path
    lm_loss(constant(E_say), E_say, W, b).backward()

    assert isinstance(E_read.grad, RowSparse)  # a lookup names rows ...
    assert isinstance(E_say.grad, np.ndarray)  # ... a classifier touches every row
    assert isinstance(tied, np.ndarray)
    np.testing.assert_allclose(tied, E_read.grad.to_dense() + E_say.grad, rtol=1e-12, atol=1e-15)
    # rows never read still learn, but only through the head
    unread = [2, 5, 6]
    np.testing.assert_array_equal(tied[unread], E_say.grad[unread])
    assert np.abs(tied[unread]).min() > 0


def test_the_tied_parameter_appears_once_in_parameters():
    model = TinyLM(tied=True)
    params = list(model.parameters())
    assert len(params) == 3
    assert [p is model.emb.weight for p in params].count(True) == 1
    assert model.head.weight is model.emb.weight


def test_one_accumulate_grad_node_with_two_incoming_edges():
    model = TinyLM(tied=True)
    loss = model.loss()
    sink = model.emb.weight._grad_node()
    assert isinstance(sink, AccumulateGrad)
    senders, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or not isinstance(node, FunctionNode):
            continue
        seen.add(id(node))
        senders += [node.name for child in node.next_nodes if child is sink]
        stack += [child for child in node.next_nodes if child is not None]
    assert sorted(senders) == ["EmbeddingBackward", "LinearBackward"]


def test_grad_is_sparse_while_only_lookups_contributed_and_dense_once_the_head_did():
    model = TinyLM(tied=True)
    read_only = (model.mix(model.emb(IDS)).tanh() ** 2.0).sum()  # the head is never used
    read_only.backward()
    first = model.emb.weight.grad
    assert isinstance(first, RowSparse) and first.indices.tolist() == [0, 1, 3, 4]
    sparse_part = first.to_dense()

    model.loss().backward()  # a second backward adds the full loss: now the head contributes
    assert isinstance(model.emb.weight.grad, np.ndarray)

    full = TinyLM(tied=True)
    full.loss().backward()
    np.testing.assert_allclose(model.emb.weight.grad, sparse_part + full.emb.weight.grad, rtol=1e-12)


def test_untied_tables_keep_their_own_layouts():
    model = TinyLM(tied=False)
    model.loss().backward()
    assert isinstance(model.emb.weight.grad, RowSparse)
    assert isinstance(model.head.weight.grad, np.ndarray)


def test_the_tying_page_runs_and_prints_what_it_says(tmp_path, monkeypatch, capsys):
    page = (Path(__file__).resolve().parents[2] / "docs" / "tying.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 5
    monkeypatch.chdir(tmp_path)  # the page saves a checkpoint in the working directory
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/tying.md", "exec"), namespace)
    printed = capsys.readouterr().out
    for claim in ["['emb.weight']", "{'emb.weight': ['emb.weight', 'head.weight']}",
                  "RowSparse(rows=4, shape=(1000, 16), dtype=float32, coalesced)", "[1 2 5 7]",
                  "288 bytes instead of 64000", "ndarray (1000, 16)", "['emb.weight', 'head.weight']",
                  "the state ties 'emb.weight' and 'head.weight' (one shared array), but the model"]:
        assert claim in printed
        assert claim in page


def torch_tiny_lm(state, tied, ids, targets):
    """tiny_lm's TinyLM in torch (a sparse Embedding, as ours): the loss, and for each named
    parameter (a tied table once) whether its gradient is sparse, and its values."""
    emb = torch.nn.Embedding(7, 4, sparse=True)
    mix, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 7, bias=False)
    if tied:
        head.weight = emb.weight
    theirs = torch.nn.ModuleDict({"emb": emb, "mix": mix, "head": head}).double()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.from_numpy(state[name]))
    logits = head(torch.tanh(mix(emb(torch.from_numpy(ids)))))
    loss = TF.cross_entropy(logits.reshape(-1, 7), torch.from_numpy(targets).reshape(-1))
    loss.backward()
    return loss.item(), {name: (p.grad.is_sparse, p.grad) for name, p in theirs.named_parameters()}


@pytest.mark.parametrize("tied", [True, False])
def test_gradients_match_pytorch(tied, oracle):
    ours = TinyLM(tied=tied)
    ours.loss().backward()
    loss, grads = oracle(torch_tiny_lm, ours.state_dict(), tied, IDS, TARGETS)
    np.testing.assert_allclose(ours.loss().data, loss, rtol=1e-12)
    assert [n for n, _ in ours.named_parameters()] == list(grads)
    our_params = dict(ours.named_parameters())
    for name, (sparse, expected) in grads.items():
        grad = our_params[name].grad
        assert isinstance(grad, RowSparse) == sparse  # same layout as PyTorch
        np.testing.assert_allclose(to_dense(grad), expected, rtol=1e-9, atol=1e-14)
