"""The shared diagnosis helpers of the lesson checks (minigrad/learn/course/checks/_common.py)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn.course.checks import _common as common


@pytest.fixture
def reference():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3))


def test_as_array_accepts_tensor_rowsparse_and_dict():
    sparse = mg.RowSparse([2, 0, 2], np.ones((3, 2)), (4, 2))
    assert np.array_equal(common.as_array(sparse, "g"), sparse.to_dense())
    assert np.array_equal(common.as_array(mg.tensor(np.eye(2)), "g"), np.eye(2))
    dense = common.as_array({1: [1.0, 2.0]}, "g", shape=(3, 2))
    assert np.array_equal(dense, [[0, 0], [1, 2], [0, 0]])


@pytest.mark.parametrize("value, message", [
    ({7: [1.0, 2.0]}, r"dict key 7 is not a row of the table \(rows are ints in \[0, 3\)\)"),
    ({1: [1.0, 2.0, 3.0]}, r"gradient for row 1 has shape \(3,\), expected \(2,\)"),
    (np.array([np.nan, 1.0]), "contains NaN or infinity"),
    ("abc", "could not read your answer"),
])
def test_as_array_rejects_bad_answers(value, message):
    with pytest.raises(AssertionError, match=message):
        common.as_array(value, "g", shape=(3, 2))


def test_as_array_without_shape_rejects_dict():
    with pytest.raises(AssertionError, match="g: return a numpy array, not a dict"):
        common.as_array({0: [1.0]}, "g")


def test_call_answer_lets_not_implemented_through_and_explains_other_errors():
    def stub(x):
        raise NotImplementedError("todo")

    def broken(x):
        return x @ np.ones((5, 5))

    with pytest.raises(NotImplementedError):
        common.call_answer(stub, np.ones(2))
    with pytest.raises(AssertionError, match="(?s)broken\\(\\) raised ValueError.*mind the shapes"):
        common.call_answer(broken, np.ones((2, 3)), hint="mind the shapes")


def test_call_answer_passes_copies():
    data = np.ones(3)

    def mutate(x):
        x[:] = 0
        return x

    common.call_answer(mutate, data)
    assert np.all(data == 1)


def test_missing_repeat_names_the_row_and_the_count():
    ups = np.random.default_rng(1).standard_normal((3, 3))
    expected = np.zeros((4, 3))
    expected[1] = ups[0] + ups[2]
    expected[3] = ups[1]
    got = expected.copy()
    got[1] = ups[2]
    parts = {1: [("position 0", ups[0]), ("position 2", ups[2])], 3: [("position 1", ups[1])]}
    with pytest.raises(AssertionError, match="g row 1 got the gradient of one occurrence; it appears twice"):
        common.assert_matches(got, expected, "g", parts=parts)


def test_missing_path_is_named(reference):
    lookup, classifier = reference[0], reference[1]
    expected = np.zeros((4, 3))
    expected[2] = lookup + classifier
    got = expected.copy()
    got[2] = lookup
    parts = {2: [("the lookup path", lookup), ("the classifier path", classifier)]}
    with pytest.raises(AssertionError, match="g row 2 is missing the gradient from the classifier path"):
        common.assert_matches(got, expected, "g", parts=parts, kind="path")


def test_untouched_row_is_reported_before_vaguer_problems(reference):
    expected = reference.copy()
    expected[3] = 0
    got = expected.copy()
    got[0] += 1.0
    got[3] = [0.1, 0.0, 0.0]
    problems = common.diagnose_rows(got, expected, "g")
    assert problems[0].startswith("g row 3 should be exactly zero")
    assert problems[1].startswith("g row 0 is off")


@pytest.mark.parametrize("scale, message", [
    (-1.0, "sign is flipped everywhere"),
    (3.0, "3 times too large everywhere"),
    (0.25, "4 times too small everywhere"),
    (0.7, "scaled by 0.7 everywhere"),
])
def test_whole_answer_scaled(reference, scale, message):
    with pytest.raises(AssertionError, match=message):
        common.assert_matches(scale * reference, reference, "g")


def test_one_row_with_wrong_sign(reference):
    got = reference.copy()
    got[2] *= -1
    with pytest.raises(AssertionError, match="g row 2 has the wrong sign"):
        common.assert_matches(got, reference, "g")


def test_named_mistake_wins(reference):
    wrong = reference + 1
    with pytest.raises(AssertionError, match="g: you added one"):
        common.assert_matches(wrong, reference, "g", mistakes=[(wrong, "you added one")])


def test_wrong_shape_uses_known_explanation(reference):
    with pytest.raises(AssertionError, match=r"g has shape \(3, 4\), expected \(4, 3\): transposed"):
        common.expect_shape(reference.T, (4, 3), "g", known={(3, 4): "transposed"})


def test_matching_answer_passes(reference):
    common.assert_matches(reference + 1e-9, reference, "g")


def test_reference_gradient_matches_the_rule_for_a_product():
    rng = np.random.default_rng(2)
    a, b, upstream = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2))
    grad_b = common.reference_gradient(lambda x, y: x @ y, [a, b], wrt=1, upstream=upstream)
    assert np.allclose(grad_b, a.T @ upstream)


def test_reference_gradient_refuses_a_wrong_backward():
    class Wrong(mg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad  # should be 2 x grad

    with pytest.raises(RuntimeError, match="backward disagrees with finite differences"):
        common.reference_gradient(Wrong.apply, [np.array([1.0, 2.0])])


def test_all_zero_answer_is_called_a_missing_path(reference):
    with pytest.raises(AssertionError, match="g is all zero: no gradient reached it"):
        common.assert_matches(np.zeros_like(reference), reference, "g")
