"""The helpers every layer shares: seeds to Generators, the id-range check, the size check.
Each was written several times before; these tests pin the one version, and check that each
former copy now gives the shared behaviour."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import as_generator, check_in_range, positive_int
from minigrad.learn import data, train
from minigrad.models import TinyLM
from minigrad.tools.ledger import sum_grads

# ---- as_generator ----------------------------------------------------------------------------

def test_a_generator_is_passed_through_so_draws_share_one_stream():
    g = np.random.default_rng(3)
    assert as_generator(g) is g


def test_the_same_seed_gives_the_same_stream_and_none_fresh_entropy():
    assert as_generator(5).random() == as_generator(5).random()
    assert as_generator([1, 2]).random() == np.random.default_rng([1, 2]).random()
    assert as_generator(None).random() != as_generator(None).random()


@pytest.mark.parametrize("bad", [True, 1.5, "seed", -1, object()])
def test_a_seed_numpy_cannot_use_is_a_type_error_naming_the_caller(bad):
    with pytest.raises(TypeError, match=r"Linear: rng must be an int seed, a numpy Generator or None, "
                                        rf"got {bad!r}".replace("(", r"\(").replace(")", r"\)")):
        as_generator(bad, "Linear")


def test_every_layer_that_draws_takes_a_seed_or_a_generator_alike():
    # a seed and a Generator made from that seed give the same weights, in every former copy
    assert np.array_equal(mg.nn.Linear(3, 2, rng=4).weight.data,
                          mg.nn.Linear(3, 2, rng=np.random.default_rng(4)).weight.data)
    assert np.array_equal(mg.nn.Embedding(5, 2, rng=4).weight.data,
                          mg.nn.Embedding(5, 2, rng=np.random.default_rng(4)).weight.data)
    assert np.array_equal(TinyLM(6, rng=4).emb.weight.data,
                          TinyLM(6, rng=np.random.default_rng(4)).emb.weight.data)
    windows = train.Windows(np.arange(40).reshape(20, 2), np.arange(20))
    a = next(train.batches(windows, 4, rng=7))
    b = next(train.batches(windows, 4, rng=np.random.default_rng(7)))
    assert np.array_equal(a[0], b[0])
    with pytest.raises(TypeError, match=r"TinyLM: rng must be an int seed"):
        TinyLM(6, rng="x")
    x = mg.ones(4, 5)
    F = mg.nn.functional
    assert np.array_equal(F.dropout(x, 0.5, rng=3).data, F.dropout(x, 0.5, rng=np.random.default_rng(3)).data)
    with pytest.raises(TypeError, match=r"dropout: rng must be an int seed"):
        F.dropout(x, 0.5, rng=0.5)


# ---- check_in_range --------------------------------------------------------------------------

def check(ids, size=4):
    check_in_range(np.asarray(ids), size, who="f", item="row", name="rows", range_of=f"{size} rows")


def test_ids_in_range_pass_and_empty_ids_pass():
    check([0, 3, 2])
    check(np.zeros((0, 3), np.int64))
    check(np.int64(3))


@pytest.mark.parametrize("ids, message", [
    ([0, 4, 9], r"f: row 4 at rows\[1\] is out of range for 4 rows \(rows must be in \[0, 4\)\)"),
    ([[0, 1], [2, -3]], r"f: row -3 at rows\[1, 1\] is negative \(rows must be in \[0, 4\)\)"),
    (7, r"f: row 7 at rows is out of range for 4 rows"),
])
def test_the_first_bad_id_is_named_with_its_position(ids, message):
    with pytest.raises(IndexError, match=message):
        check(ids)


def test_every_former_copy_reports_through_the_shared_check():
    with pytest.raises(IndexError, match=r"embedding: token id -1 at ids\[0\] is negative"):
        mg.nn.Embedding(3, 2)(np.array([-1, 0]))
    with pytest.raises(IndexError, match=r"cross_entropy: target -2 at targets\[0\] is negative"):
        mg.nn.functional.cross_entropy(mg.zeros(1, 3), np.array([-2]))
    p = mg.nn.Parameter(np.zeros((3, 2)))
    opt = mg.optim.Adam([p])
    with pytest.raises(IndexError, match=r"Adam: row -1 at rows\[0\] is negative"):
        opt.second_moment(p, [-1])
    with pytest.raises(IndexError, match=r"Vocabulary.decode: id -1 at ids\[0\] is negative"):
        data.Vocabulary.build(["a", "b"]).decode([-1])


# ---- positive_int ----------------------------------------------------------------------------

@pytest.mark.parametrize("value", [1, 7, np.int64(3)])
def test_a_positive_int_comes_back_as_an_int(value):
    result = positive_int("f", "n", value)
    assert result == value and type(result) is int


@pytest.mark.parametrize("value", [0, -2, True, 2.0, "3", None])
def test_anything_else_is_a_value_error_naming_the_argument(value):
    with pytest.raises(ValueError, match=rf"f: n must be a positive int, got {value!r}"):
        positive_int("f", "n", value)


def test_a_count_that_may_be_zero_takes_least_0_and_says_non_negative():
    assert positive_int("f", "n", 0, least=0) == 0
    for value in (-1, True, 0.0):
        with pytest.raises(ValueError, match=rf"f: n must be a non-negative int, got {value!r}"):
            positive_int("f", "n", value, least=0)
    with pytest.raises(ValueError, match=r"f: n must be an int >= 2, got 1"):
        positive_int("f", "n", 1, least=2)


def test_train_uses_the_public_size_check():
    with pytest.raises(ValueError, match=r"batches: batch_size must be a positive int, got 0"):
        next(train.batches(None, 0))


# ---- sum_grads (the ledger's and the drawing's fold) ---------------------------------------

def test_sum_grads_keeps_sparse_sparse_and_densifies_on_a_dense_term():
    a = mg.RowSparse([0, 2], np.ones((2, 3)), (4, 3))
    b = mg.RowSparse([2], 2 * np.ones((1, 3)), (4, 3))
    sparse_sum = sum_grads([a, b])
    assert isinstance(sparse_sum, mg.RowSparse)
    np.testing.assert_array_equal(sparse_sum.to_dense(), a.to_dense() + b.to_dense())
    dense = np.arange(12.0).reshape(4, 3)
    mixed = sum_grads([a, dense, b])
    assert isinstance(mixed, np.ndarray)
    np.testing.assert_array_equal(mixed, a.to_dense() + dense + b.to_dense())
    assert sum_grads([dense]) is dense


def test_sum_grads_of_nothing_says_so():
    with pytest.raises(ValueError, match=r"sum_grads: no gradients to sum"):
        sum_grads([])
