"""The lookup: gradients against finite differences, row sparsity, padding, and bad ids."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.engine import RowSparse
from minigrad.nn import functional as F
from minigrad.tools.gradcheck import numerical_gradient

V, D = 6, 3
IDS = np.array([[1, 4, 1], [0, 1, 4]])  # row 1 three times, row 4 twice; rows 2, 3, 5 untouched


def table(seed=3):
    return mg.tensor(np.random.default_rng(seed).normal(size=(V, D)), requires_grad=True)


def weighted_lookup(ids, **kw):
    """A loss that weighs every position differently, so a wrong row or sum shows."""
    weights = np.random.default_rng(9).normal(size=(*np.shape(ids), D))
    return lambda w: (F.embedding(ids, w, **kw) * weights).sum()


@pytest.mark.parametrize("sparse", [True, False])
def test_gradcheck_every_row_touched_and_untouched(sparse):
    report = mg.gradcheck(weighted_lookup(IDS, sparse=sparse), [table()])
    assert report.ok, str(report)


def test_untouched_rows_are_exactly_zero_and_never_stored():
    w = table()
    weighted_lookup(IDS)(w).backward()
    assert isinstance(w.grad, RowSparse)
    assert w.grad.indices.tolist() == [0, 1, 4]
    dense = w.grad.to_dense()
    assert np.all(dense[[2, 3, 5]] == 0.0)


def test_duplicate_ids_sum_their_gradients():
    w = table()
    upstream = np.arange(IDS.size * D, dtype=np.float64).reshape(*IDS.shape, D)
    F.embedding(IDS, w).backward(upstream)
    row_1 = upstream[IDS == 1].sum(axis=0)  # three positions read row 1
    np.testing.assert_array_equal(w.grad.to_dense()[1], row_1)
    np.testing.assert_array_equal(w.grad.to_dense()[4], upstream[IDS == 4].sum(axis=0))


def test_sparse_false_gives_the_same_gradient_dense():
    sparse_w, dense_w = table(), table()
    weighted_lookup(IDS)(sparse_w).backward()
    weighted_lookup(IDS, sparse=False)(dense_w).backward()
    assert isinstance(dense_w.grad, np.ndarray)
    np.testing.assert_array_equal(sparse_w.grad.to_dense(), dense_w.grad)


@pytest.mark.parametrize("padding_idx", [1, -5])  # -5 is row 1 counted from the end
def test_padding_row_gets_no_gradient_and_the_others_are_exact(padding_idx):
    w = table()
    loss = weighted_lookup(IDS, padding_idx=padding_idx)
    loss(w).backward()
    analytical = w.grad.to_dense()
    assert 1 not in w.grad.indices.tolist()
    assert np.all(analytical[1] == 0.0)

    def loss_at():
        with mg.no_grad():
            return float(loss(w).data)

    numerical = numerical_gradient(loss_at, w, eps=1e-6)
    others = [r for r in range(V) if r != 1]
    np.testing.assert_allclose(analytical[others], numerical[others], atol=1e-7)
    # the true derivative of the padding row is not zero: padding_idx freezes it on purpose
    assert np.abs(numerical[1]).max() > 1e-3


def test_embedding_layer_zeroes_and_freezes_its_padding_row():
    emb = nn.Embedding(V, D, padding_idx=0, rng=1)
    assert np.all(emb.weight.data[0] == 0.0)
    emb(IDS).sum().backward()
    assert emb.weight.grad.indices.tolist() == [1, 4]
    assert repr(emb) == "Embedding(6, 3, padding_idx=0, sparse=True)"


@pytest.mark.parametrize("ids, out_shape", [(np.int64(2), (D,)), (np.array([2, 0, 2]), (3, D)),
                                            (IDS, (2, 3, D)), ([[5, 0]], (1, 2, D))])
def test_ids_of_rank_0_1_2_give_one_vector_per_id(ids, out_shape):
    w = table()
    out = F.embedding(ids, w)
    assert out.shape == out_shape
    np.testing.assert_array_equal(out.data, w.data[np.asarray(ids)])


def test_a_batch_of_no_tokens_gives_an_empty_sparse_gradient():
    w = table()
    out = F.embedding([], w)
    assert out.shape == (0, D)
    out.sum().backward()
    assert isinstance(w.grad, RowSparse) and w.grad.nnz_rows == 0


def test_ids_changed_after_forward_do_not_change_backward():
    w, ids = table(), np.array([2, 2])
    out = F.embedding(ids, w)
    ids[:] = 5  # the caller reuses its buffer
    out.sum().backward()
    assert w.grad.indices.tolist() == [2]


def test_float32_table_gets_a_float32_gradient():
    emb = nn.Embedding(V, D, rng=0)
    emb(IDS).sum().backward()
    assert emb.weight.grad.dtype == np.float32


# ---- bad input -------------------------------------------------------------------------------

def test_id_out_of_range_names_it_and_where_it_is():
    with pytest.raises(IndexError, match=r"token id 6 at ids\[1, 2\] is out of range for "
                                         r"num_embeddings=6 \(ids must be in \[0, 6\)\)"):
        F.embedding(np.array([[0, 1, 2], [3, 4, 6]]), table())


def test_negative_id():
    with pytest.raises(IndexError, match=r"token id -1 at ids\[1\] is negative \(ids must be in \[0, 6\)\)"):
        nn.Embedding(V, D)(np.array([0, -1]))


@pytest.mark.parametrize("ids, dtype", [(np.array([0.0, 1.0]), "float64"), (np.array([True]), "bool"),
                                        (mg.tensor([1.0, 2.0]), "float32")])
def test_non_integer_ids(ids, dtype):
    with pytest.raises(TypeError, match=f"ids must be integer token ids, got dtype {dtype}"):
        F.embedding(ids, table())


def test_ids_of_rank_3_are_refused():
    one_hot = np.eye(V, dtype=np.int64)[IDS]  # (2, 3, 6): every entry is a valid id
    with pytest.raises(ValueError, match=r"ids has shape \(2, 3, 6\) \(rank 3\), expected rank 0, 1 or 2"):
        F.embedding(one_hot, table())


def test_weight_must_be_a_table():
    with pytest.raises(ValueError, match=r"weight has shape \(6,\), expected a 2-D"):
        F.embedding(IDS, mg.tensor(np.zeros(V), requires_grad=True))


@pytest.mark.parametrize("padding_idx, error, message", [
    (6, ValueError, r"padding_idx=6 is out of range for num_embeddings=6 \(expected -6 <= padding_idx < 6\)"),
    (-7, ValueError, r"padding_idx=-7 is out of range"),
    (1.0, TypeError, r"padding_idx must be an int row id or None, got 1.0"),
    (False, TypeError, r"padding_idx must be an int row id or None, got False"),
])
def test_bad_padding_idx(padding_idx, error, message):
    with pytest.raises(error, match=message):
        F.embedding(IDS, table(), padding_idx)
    with pytest.raises(error, match=message):
        nn.Embedding(V, D, padding_idx=padding_idx)


@pytest.mark.parametrize("args, message", [((0, 3), "num_embeddings must be a positive int, got 0"),
                                           ((6, 2.5), "embedding_dim must be a positive int, got 2.5")])
def test_bad_table_size(args, message):
    with pytest.raises(ValueError, match=message):
        nn.Embedding(*args)
