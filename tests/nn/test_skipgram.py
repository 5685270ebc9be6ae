"""SkipGram and negative_sampling_loss: the formula, both gradients (row-sparse, gradchecked), errors."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import RowSparse
from minigrad.models import SkipGram
from minigrad.models.skipgram import negative_sampling_loss

CENTRES, CONTEXTS = np.array([1, 2, 1]), np.array([3, 4, 5])
NEGATIVES = np.array([[6, 7], [8, 2], [0, 9]])


def tables(seed=0, shape=(12, 4)):
    rng = np.random.default_rng(seed)
    return [mg.tensor(rng.normal(size=shape), requires_grad=True) for _ in range(2)]


def test_loss_is_the_negative_sampling_formula():
    v_table, u_table = (t.data for t in tables())
    expected = 0.0
    for centre, context, noise in zip(CENTRES, CONTEXTS, NEGATIVES):
        v = v_table[centre]
        expected -= np.log(1 / (1 + np.exp(-u_table[context] @ v)))
        expected -= sum(np.log(1 / (1 + np.exp(u_table[k] @ v))) for k in noise)
    got = negative_sampling_loss(*tables(), CENTRES, CONTEXTS, NEGATIVES).item()
    assert got == pytest.approx(expected / len(CENTRES), rel=1e-12)


def test_both_gradients_pass_gradcheck_in_float64():
    report = mg.gradcheck(lambda a, b: negative_sampling_loss(a, b, CENTRES, CONTEXTS, NEGATIVES), tables(1))
    assert report.ok, str(report)


def test_each_table_gets_a_gradient_only_on_the_rows_it_read():
    v_table, u_table = tables(2)
    negative_sampling_loss(v_table, u_table, CENTRES, CONTEXTS, NEGATIVES).backward()
    assert isinstance(v_table.grad, RowSparse) and isinstance(u_table.grad, RowSparse)
    assert sorted(v_table.grad.indices.tolist()) == [1, 2]
    assert sorted(u_table.grad.indices.tolist()) == [0, 2, 3, 4, 5, 6, 7, 8, 9]


def test_model_starts_as_word2vec_and_its_loss_is_log_2_per_word():
    model = SkipGram(50, 8, rng=0)
    assert np.abs(model.in_embed.weight.data).max() <= 0.5 / 8 and np.all(model.out_embed.weight.data == 0)
    loss = model.loss(CENTRES, CONTEXTS, NEGATIVES)  # every score is 0: each of the 1 + K words costs log 2
    assert loss.item() == pytest.approx(3 * np.log(2), rel=1e-6)


def test_training_pulls_co_occurring_words_together():
    """Words 0-4 only occur next to each other, words 5-9 too: after training, a word's row of
    the input table scores its own group's output rows above the other group's."""
    rng = np.random.default_rng(0)
    model = SkipGram(10, 6, dtype=np.float64, rng=0)
    optimizer = mg.optim.Adam(model.parameters(), lr=0.05, lazy=True)
    for _ in range(150):
        group = rng.integers(0, 2, 64) * 5
        centres, contexts = group + rng.integers(0, 5, 64), group + rng.integers(0, 5, 64)
        loss = model.loss(centres, contexts, rng.integers(0, 10, (64, 3)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scores = model.in_embed.weight.data @ model.out_embed.weight.data.T
    same = np.kron(np.eye(2), np.ones((5, 5))).astype(bool)
    assert scores[same].min() > scores[~same].max()


@pytest.mark.parametrize("centres, contexts, negatives, error, message", [
    ([1, 2], [3, 4, 5], [[6], [7], [8]], ValueError,
     r"centres \(2,\), contexts \(3,\), negatives \(3, 1\); expected "
                                                     r"\(B,\), \(B,\) and \(B, K\)"),
    ([1, 2, 3], [3, 4, 5], [6, 7, 8], ValueError, r"negatives \(3,\); expected"),
    ([1, 2, 12], [3, 4, 5], [[6], [7], [8]], IndexError,
     r"token id 12 at ids\[2\] is out of range for num_embeddings=12"),
])
def test_loss_errors_name_the_shapes_and_ids(centres, contexts, negatives, error, message):
    with pytest.raises(error, match=message):
        negative_sampling_loss(*tables(), centres, contexts, negatives)


def test_tables_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match=r"in_table \(12, 4\) and out_table \(12, 3\) must have the "
                                         r"same shape"):
        negative_sampling_loss(tables()[0], tables(shape=(12, 3))[1], CENTRES, CONTEXTS, NEGATIVES)


def test_model_sizes_must_be_positive():
    with pytest.raises(ValueError, match=r"SkipGram.*dim"):
        SkipGram(10, 0)
