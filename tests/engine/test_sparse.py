"""RowSparse: coalescing, layouts under addition, and a table's .grad that never densifies."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad import nn
from minigrad.engine import RowSparse, add_grads, to_dense
from minigrad.engine.kernels.fast import SHORT_RUN


def dense_reference(indices, values, shape):
    """The dense meaning of a RowSparse, built with np.add.at (which keeps repeats)."""
    out = np.zeros(shape)
    np.add.at(out, np.asarray(indices, dtype=np.int64), values)
    return out


@st.composite
def sparse_grads(draw, rows=6, width=3):
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n))
    values = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=(n, width))
    return RowSparse(np.array(ids, dtype=np.int64), values, (rows, width))


@given(sparse_grads())
def test_coalesce_sums_repeated_ids_into_unique_sorted_rows(g):
    c = g.coalesce()
    assert c.coalesced
    assert np.all(np.diff(c.indices) > 0)
    assert c.nnz_rows == g.nnz_rows == len(set(g.indices.tolist()))
    np.testing.assert_allclose(c.to_dense(), dense_reference(g.indices, g.values, g.shape), atol=1e-12)


def test_coalesce_sums_short_and_long_runs():
    # run lengths on both sides of SHORT_RUN, and far above it, in a shuffled order
    lengths = {0: 1, 3: 2, 4: SHORT_RUN, 7: SHORT_RUN + 1, 9: 3 * SHORT_RUN + 5, 11: SHORT_RUN - 1}
    rng = np.random.default_rng(5)
    ids = rng.permutation(np.repeat(list(lengths), list(lengths.values())))
    values = rng.normal(size=(ids.size, 4))
    c = RowSparse(ids, values, (12, 4)).coalesce()
    assert c.indices.tolist() == sorted(lengths)
    np.testing.assert_allclose(c.to_dense(), dense_reference(ids, values, (12, 4)), rtol=1e-12)


@pytest.mark.parametrize("row_shape", [(), (2, 3)])
def test_coalesce_any_row_shape(row_shape):
    ids = np.array([2, 0, 2] + [1] * (SHORT_RUN + 2))
    values = np.random.default_rng(6).normal(size=(ids.size, *row_shape))
    c = RowSparse(ids, values, (3, *row_shape)).coalesce()
    np.testing.assert_allclose(c.to_dense(), dense_reference(ids, values, (3, *row_shape)), rtol=1e-12)


def test_duplicate_ids_sum_into_one_row():
    g = RowSparse([2, 0, 2, 2], [[1.0], [10.0], [2.0], [4.0]], (3, 1))
    c = g.coalesce()
    assert c.indices.tolist() == [0, 2]
    assert c.values.ravel().tolist() == [10.0, 7.0]
    # the classic bug: fancy-index += keeps only one of the repeated rows' contributions
    naive = np.zeros((3, 1))
    naive[g.indices] += g.values
    assert naive[2, 0] != 7.0


def test_coalesce_of_a_coalesced_gradient_is_itself():
    c = RowSparse([3, 1], np.ones((2, 2)), (5, 2)).coalesce()
    assert c.coalesce() is c


def test_nnz_rows_and_nbytes_count_stored_rows_only():
    g = RowSparse([4, 4, 1], np.ones((3, 8), dtype=np.float32), (1000, 8))
    assert g.nnz_rows == 2
    assert g.nbytes == 3 * 8 + 3 * 8 * 4  # int64 ids + float32 rows, as stored (not coalesced)
    assert g.coalesce().nbytes == 2 * 8 + 2 * 8 * 4


@given(sparse_grads(), sparse_grads())
def test_sparse_plus_sparse_stays_sparse_and_coalesced(a, b):
    total = a + b
    assert isinstance(total, RowSparse) and total.coalesced
    np.testing.assert_allclose(total.to_dense(), a.to_dense() + b.to_dense(), atol=1e-12)


def test_sparse_plus_dense_is_dense_in_either_order():
    g = RowSparse([1, 1], [[1.0, 2.0], [3.0, 4.0]], (3, 2))
    dense = np.arange(6.0).reshape(3, 2)
    expected = dense + g.to_dense()
    for total in (g + dense, dense + g, add_grads(dense, g), add_grads(g, dense)):
        assert isinstance(total, np.ndarray)
        np.testing.assert_array_equal(total, expected)
    assert dense[1].tolist() == [2.0, 3.0]  # the dense operand is not modified


def test_sparse_plus_broadcast_view_gives_a_writable_array():
    view = np.broadcast_to(np.ones(2), (3, 2))  # what Sum's backward sends
    total = add_grads(view, RowSparse([0], [[1.0, 1.0]], (3, 2)))
    assert total.flags.writeable and total[0].tolist() == [2.0, 2.0]


def test_empty_gradient_is_zero_without_rows():
    empty = RowSparse.zeros((5, 3), np.float64)
    assert empty.nnz_rows == 0 and empty.nbytes == 0 and empty.coalesced
    assert empty.coalesce().values.shape == (0, 3)
    np.testing.assert_array_equal(empty.to_dense(), np.zeros((5, 3)))
    g = RowSparse([2], np.ones((1, 3)), (5, 3))
    for total in (empty + g, g + empty):
        assert isinstance(total, RowSparse)
        np.testing.assert_array_equal(total.to_dense(), g.to_dense())
    uncoalesced_empty = RowSparse(np.zeros(0, np.int64), np.zeros((0, 3)), (5, 3))
    assert uncoalesced_empty.coalesce().nnz_rows == 0


def test_scaling_keeps_rows():
    g = RowSparse([1], [[2.0, 4.0]], (3, 2))
    assert (0.5 * g).values.tolist() == [[1.0, 2.0]]
    assert (-g).to_dense()[1].tolist() == [-2.0, -4.0]
    assert to_dense(g)[1].tolist() == [2.0, 4.0]


def test_values_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"values has shape \(2, 4\), expected \(2, 3\)"):
        RowSparse([0, 1], np.zeros((2, 4)), (5, 3))


def test_row_index_out_of_range():
    with pytest.raises(IndexError, match=r"row index 5 at indices\[1\] is out of range for 5 rows"):
        RowSparse([0, 5], np.zeros((2, 3)), (5, 3))
    with pytest.raises(IndexError, match=r"row index -1 at indices\[0\] is negative"):
        RowSparse([-1], np.zeros((1, 3)), (5, 3))


def test_float_indices_are_refused_not_truncated():
    with pytest.raises(TypeError, match="indices must be integer row ids, got dtype float64"):
        RowSparse([1.7], np.zeros((1, 3)), (5, 3))


def test_coalesced_flag_is_checked():
    with pytest.raises(ValueError, match="coalesced=True needs unique, sorted indices"):
        RowSparse([2, 1], np.zeros((2, 3)), (5, 3), coalesced=True)


def test_adding_gradients_of_different_shapes():
    a = RowSparse([0], np.zeros((1, 3)), (5, 3))
    with pytest.raises(ValueError, match=r"RowSparse gradient of shape \(5, 3\) and a RowSparse "
                                         r"gradient of shape \(6, 3\)"):
        a + RowSparse([0], np.zeros((1, 3)), (6, 3))
    with pytest.raises(ValueError, match=r"dense gradient of shape \(5, 4\)"):
        a + np.zeros((5, 4))


def test_scaling_by_an_array_is_refused():
    with pytest.raises(TypeError, match="supports a scalar only"):
        RowSparse([0], np.zeros((1, 3)), (5, 3)) * np.ones(3)


def test_untied_table_grad_stays_sparse_across_lookups_and_backward_calls():
    V, d = 10_000, 16
    emb = nn.Embedding(V, d, rng=0)
    batches = [np.array([[3, 17, 3], [9999, 17, 0]]), np.array([3, 42])]
    for ids in batches:  # two lookups in one graph, then a second backward call
        (emb(ids).sum() + (emb(ids) * 2.0).sum()).backward()
    grad = emb.weight.grad
    assert isinstance(grad, RowSparse) and grad.coalesced
    touched = sorted({int(i) for ids in batches for i in ids.ravel()})
    assert grad.indices.tolist() == touched
    # bytes: one int64 id and one float32 row per touched id; the dense table would be V*d*4
    assert grad.nbytes == len(touched) * (8 + d * 4)
    assert grad.nbytes * 1000 < V * d * 4
    counts = {i: 3 * sum(int((ids == i).sum()) for ids in batches) for i in touched}  # d(x + 2x)
    expected = np.array([[counts[i]] * d for i in touched], dtype=np.float32)
    np.testing.assert_array_equal(grad.values, expected)
