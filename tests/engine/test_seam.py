"""The seam: minigrad.use(...) runs a learner's Function (or the plain op, or its fast twin) in
place of an op, names whose ran, restores the outer set, and refuses what cannot be an op."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.engine import RowSparse, ops, seam


class MyEmbedding(mg.Function):
    """A learner's lookup: the same numbers as minigrad's, written differently."""

    @staticmethod
    def forward(ctx, weight, ids, sparse=True, padding_idx=None):
        ctx.shape, ctx.ids = weight.shape, ids.copy()
        return weight[ids]

    @staticmethod
    def backward(ctx, grad):
        ids = ctx.ids.reshape(-1)
        rows = grad.reshape(ids.size, -1)
        unique, where = np.unique(ids, return_inverse=True)
        sums = np.zeros((unique.size, rows.shape[1]), rows.dtype)
        np.add.at(sums, where, rows)
        return RowSparse(unique, sums, ctx.shape), None


class DropsRepeats(MyEmbedding):
    """The classic mistake: `grad[ids] = rows` keeps only one of a repeated id's rows."""

    @staticmethod
    def backward(ctx, grad):
        dense = np.zeros(ctx.shape, grad.dtype)
        dense[ctx.ids.reshape(-1)] = grad.reshape(ctx.ids.size, -1)
        return dense, None


def lookup_loss(weight, ids):
    return (F.embedding(ids, weight) ** 2).sum()


def test_a_learners_function_runs_in_place_of_the_op_and_the_node_says_whose():
    weight = mg.tensor(np.random.default_rng(0).standard_normal((5, 3)), requires_grad=True)
    ids = mg.tensor([[1, 3, 1]])
    with mg.use(Embedding=MyEmbedding):
        out = F.embedding(ids, weight)
        assert out.grad_fn.function is MyEmbedding
        assert out.grad_fn.name == "EmbeddingBackward (yours)"
        assert seam.whose("Embedding") == "yours"
        (out ** 2).sum().backward()
    mine = weight.grad.to_dense()
    weight.grad = None
    lookup_loss(weight, ids).backward()
    np.testing.assert_allclose(mine, weight.grad.to_dense(), rtol=1e-12)
    assert seam.whose("Embedding") in ("fast", "minigrad")  # restored after the block


def test_gradcheck_passes_through_a_right_one_and_catches_a_wrong_one():
    weight = mg.tensor(np.random.default_rng(1).standard_normal((4, 2)), requires_grad=True)
    ids = mg.tensor([0, 2, 2, 3])
    with mg.use(Embedding=MyEmbedding):
        mg.gradcheck(lambda w: lookup_loss(w, ids), [weight])  # raises if it does not pass
    with mg.use(Embedding=DropsRepeats), pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda w: lookup_loss(w, ids), [weight])


def test_the_drawing_and_the_ledger_name_the_learners_op():
    weight = mg.nn.Parameter(np.random.default_rng(2).standard_normal((4, 2)))
    ids = mg.tensor([1, 1, 2])
    with mg.use(Embedding=MyEmbedding):
        loss = lookup_loss(weight, ids)
        drawing = mg.draw(loss)
        with mg.ledger({"table": weight}) as led:
            loss.backward()
    assert "EmbeddingBackward (yours)" in drawing.source
    assert any("EmbeddingBackward (yours)" in path for path in led.record(weight).paths())


def test_nesting_adds_to_the_outer_set_and_an_exception_restores_it():
    class MyCrossEntropy(ops.CrossEntropy):
        pass

    with mg.use(Embedding=MyEmbedding):
        with pytest.raises(KeyError), mg.use(CrossEntropy=MyCrossEntropy):
            assert seam.whose("Embedding") == seam.whose("CrossEntropy") == "yours"
            raise KeyError("boom")
        assert seam.whose("Embedding") == "yours" and seam.whose("CrossEntropy") != "yours"
    assert seam.whose("Embedding") != "yours"


def test_use_without_with_stays_until_changed_and_none_means_minigrads_own():
    try:
        mg.use(Embedding=MyEmbedding)
        assert seam.whose("Embedding") == "yours"
        mg.use(Embedding=None)
        assert seam.whose("Embedding") != "yours"
    finally:
        mg.use(Embedding=None)


def test_fast_false_runs_the_plain_ops_and_gives_the_same_numbers():
    x = mg.tensor(np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    y = mg.tensor([0, 5, 2, 2])
    with mg.use(fast=True):
        assert F.cross_entropy(x, y).grad_fn.function is not ops.CrossEntropy
    with mg.use(fast=False):
        loss = F.cross_entropy(x, y)
        assert loss.grad_fn.function is ops.CrossEntropy and seam.whose("CrossEntropy") == "minigrad"
        loss.backward()
    plain = x.grad
    x.grad = None
    with mg.use(fast=True):
        F.cross_entropy(x, y).backward()
    assert plain.tobytes() == x.grad.tobytes()


@pytest.mark.parametrize("bad", [
    {"Embeding": MyEmbedding},  # a typo: not an op
    {"Embedding": object},
    {"Embedding": lambda ctx, w, i: w[i]},
    {"Embedding": MyEmbedding()},
])
def test_a_name_that_is_not_an_op_or_a_value_that_is_not_a_function_is_refused(bad):
    with pytest.raises((ValueError, TypeError)) as info:
        mg.use(**bad)
    message = str(info.value)
    assert "Embedding" in message or "Embeding" in message
    if "Embeding" in bad:
        assert "CrossEntropy" in message  # the known ops are listed
    assert seam.whose("Embedding") != "yours"  # nothing half-applied


def test_fast_must_be_a_bool():
    with pytest.raises(TypeError, match="fast"):
        mg.use(fast="no")


def test_the_lookup_resolves_when_the_set_changes_not_per_call():
    before = dict(seam.running)
    with mg.use(Embedding=MyEmbedding):
        assert seam.running[ops.Embedding] is MyEmbedding
    assert seam.running == before
