"""`np.asarray` of a row-sparse gradient: a clear error naming `.to_dense()`, never the 0-d object
array numpy makes of an object it does not know (which then fails far from the cause)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def table_grad() -> mg.RowSparse:
    emb = nn.Embedding(6, 3, rng=0)
    emb(np.array([1, 4, 1])).sum().backward()
    return emb.weight.grad


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda g: np.asarray(g, dtype=np.float64)])
def test_numpy_conversion_of_a_row_sparse_gradient_names_to_dense(convert):
    grad = table_grad()
    assert isinstance(grad, mg.RowSparse)
    with pytest.raises(TypeError, match=r"RowSparse \(2 of 6 rows stored, shape \(6, 3\)\).*\.to_dense\(\)"):
        convert(grad)


def test_to_dense_is_the_way_and_gives_the_full_table():
    dense = table_grad().to_dense()
    np.testing.assert_array_equal(dense[[0, 2, 3, 5]], 0.0)
    np.testing.assert_array_equal(dense[1], 2.0)  # id 1 read twice


def test_multiplying_two_row_sparse_gradients_still_says_scalar_only():
    grad = table_grad()
    with pytest.raises(TypeError, match=r"RowSparse: \* supports a scalar only"):
        grad * grad
