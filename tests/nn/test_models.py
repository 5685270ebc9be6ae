"""TinyLM: the small model of the training lessons and the benchmark."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import RowSparse
from minigrad.models import TinyLM, next_token_windows
from minigrad.nn import functional as F


def test_tied_model_has_one_table_and_fewer_parameters():
    tied, untied = TinyLM(50, 8, 16, tied=True), TinyLM(50, 8, 16, tied=False)
    assert tied.head.weight is tied.emb.weight
    assert untied.num_parameters() - tied.num_parameters() == 50 * 8
    assert sum(1 for p in tied.parameters() if p is tied.emb.weight) == 1


@pytest.mark.parametrize("tied", [True, False])
def test_gradients_match_finite_differences(tied):
    ids = np.array([[1, 4], [4, 4], [0, 2]])
    targets = np.array([4, 1, 3])
    model = TinyLM(6, 3, 5, context=2, tied=tied, dtype=np.float64)
    params = list(model.parameters())
    inputs = [mg.tensor(p.data, requires_grad=True) for p in params]
    assert mg.gradcheck(lambda *values: _forward_with(model, values, params, ids, targets), inputs).ok


def _forward_with(model, values, params, ids, targets):
    """The model's forward written with functional ops on stand-in tensors for its parameters."""
    lookup = dict(zip(map(id, params), values))
    E = lookup[id(model.emb.weight)]
    x = F.embedding(ids, E).reshape(ids.shape[0], -1)
    up = F.linear(x, lookup[id(model.up.weight)], lookup[id(model.up.bias)]).tanh()
    h = F.linear(up, lookup[id(model.down.weight)], lookup[id(model.down.bias)])
    return F.cross_entropy(F.linear(h, lookup[id(model.head.weight)]), targets)


def test_module_backward_equals_functional_reference():
    ids, targets = np.array([[1], [3], [1]]), np.array([2, 2, 0])
    model = TinyLM(5, 4, 6, tied=True, dtype=np.float64)
    model.loss(ids, targets).backward()
    params = list(model.parameters())
    values = [mg.tensor(p.data, requires_grad=True) for p in params]
    _forward_with(model, values, params, ids, targets).backward()
    for p, v in zip(params, values):
        dense = mg.engine.sparse.to_dense
        np.testing.assert_allclose(dense(p.grad), dense(v.grad), rtol=1e-12)


def test_untied_embedding_grad_is_row_sparse():
    model = TinyLM(100, 4, 6, tied=False)
    model.loss(np.array([3, 3, 7]), np.array([1, 2, 3])).backward()
    grad = model.emb.weight.grad
    assert isinstance(grad, RowSparse) and grad.nnz_rows == 2
    assert isinstance(model.head.weight.grad, np.ndarray)


def test_next_token_windows():
    x, y = next_token_windows(np.array([5, 6, 7, 8]), context=2)
    assert x.tolist() == [[5, 6], [6, 7]] and y.tolist() == [7, 8]
    with pytest.raises(ValueError, match="longer than context=4"):
        next_token_windows(np.array([1, 2, 3]), context=4)


def test_wrong_context_is_a_clear_error():
    with pytest.raises(ValueError, match=r"ids has shape \(3, 1\), expected \(N, 2\)"):
        TinyLM(5, 2, 2, context=2)(np.zeros((3, 1), dtype=np.int64))


@pytest.mark.parametrize("tied", [True, False])
def test_every_model_names_its_input_and_output_tables(tied):
    """Lessons read `model.input_table` and `model.output_table` without asking which model it is."""
    from minigrad.models import SkipGram, TinyGPT
    lm, gpt = TinyLM(11, 4, 5, tied=tied), TinyGPT(11, 4, 8, 2, 1, tied=tied)
    assert lm.input_table is lm.emb.weight and lm.output_table is lm.head.weight
    assert gpt.input_table is gpt.transformer.wte.weight and gpt.output_table is gpt.lm_head.weight
    for model in (lm, gpt):
        assert (model.input_table is model.output_table) == tied
        assert model.input_table.shape == model.output_table.shape == (11, model.input_table.shape[1])
    skipgram = SkipGram(11, 4)
    assert skipgram.input_table is skipgram.in_embed.weight
    assert skipgram.output_table is skipgram.out_embed.weight
    assert skipgram.input_table is not skipgram.output_table


def test_random_batch_gives_windows_and_their_next_tokens():
    from minigrad.models import random_batch

    tokens = np.arange(100, 200)
    x, y = random_batch(tokens, batch_size=5000, context_length=7, rng=0)
    assert x.shape == y.shape == (5000, 7) and x.dtype == y.dtype == np.int64
    np.testing.assert_array_equal(y, x + 1)  # each target is the token after its input
    np.testing.assert_array_equal(x[:, 1:], x[:, :-1] + 1)  # contiguous windows of the text
    starts = set(x[:, 0].tolist())
    assert starts == set(range(100, 193))  # every start that leaves room for the target, no other
    x2, _ = random_batch(tokens, 5000, 7, rng=0)
    np.testing.assert_array_equal(x, x2)  # a seed repeats


@pytest.mark.parametrize("bad", [dict(tokens=np.arange(5), batch_size=2, context_length=5),
                                 dict(tokens=np.zeros((3, 4), np.int64), batch_size=2, context_length=2),
                                 dict(tokens=np.arange(10.0), batch_size=2, context_length=2),
                                 dict(tokens=np.arange(10), batch_size=0, context_length=2)])
def test_random_batch_names_what_is_wrong(bad):
    from minigrad.models import random_batch

    with pytest.raises(ValueError, match="random_batch"):
        random_batch(**bad)
