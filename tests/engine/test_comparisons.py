"""Comparisons give bool tensors that never require grad (as PyTorch), and a bool tensor works
wherever the numpy bool array it replaced did: masks, where, indexing, sums, truth values."""

import numpy as np
import pytest
from oracle import torch

import minigrad as mg
from minigrad.nn import functional as F

A = np.array([[1.0, -2.0, 3.0], [0.0, 5.0, -1.0]])
B = np.array([1.0, 5.0, 0.0])
OPERATORS = {
    "eq": (lambda a, b: a == b, np.equal), "ne": (lambda a, b: a != b, np.not_equal),
    "lt": (lambda a, b: a < b, np.less), "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater), "ge": (lambda a, b: a >= b, np.greater_equal),
}


@pytest.mark.parametrize("name", list(OPERATORS))
@pytest.mark.parametrize("other", ["tensor", "array", "number"])
def test_operator_and_method_give_a_bool_tensor_without_grad(name, other):
    operator, expected = OPERATORS[name]
    a = mg.tensor(A, requires_grad=True)
    b = {"tensor": mg.tensor(B), "array": B, "number": 1.0}[other]
    for result in (operator(a, b), getattr(a, name)(b)):
        assert isinstance(result, mg.Tensor) and result.dtype == np.bool_
        assert not result.requires_grad and result.grad_fn is None
        np.testing.assert_array_equal(result.data, expected(A, np.asarray(mg.engine.as_array(b))))


@pytest.mark.parametrize("name", list(OPERATORS))
def test_a_number_or_array_on_the_left_gives_a_bool_tensor_too(name):
    operator, expected = OPERATORS[name]
    result = operator(B, mg.tensor(A))  # numpy defers to the tensor (__array_priority__)
    assert isinstance(result, mg.Tensor) and result.dtype == np.bool_
    np.testing.assert_array_equal(result.data, expected(B, A))


def comparisons(lib, a, b):
    """Every operator, then two expressions of bool logic, on `lib`'s tensors (mg or torch)."""
    ta, tb = lib.tensor(a), lib.tensor(b)
    return ([operator(ta, tb) for operator, _ in OPERATORS.values()]
            + [~(ta > 0) | (ta == 5), (ta > 0) & (ta < 4) ^ (ta == 0)])


def torch_comparisons(a, b):
    return comparisons(torch, a, b)


def test_matches_torch(oracle):
    names = [*OPERATORS, "not, or", "and, xor"]
    ours, theirs = comparisons(mg, A, B), oracle(torch_comparisons, A, B)
    for name, m, t in zip(names, ours, theirs, strict=True):
        assert m.dtype == t.dtype == np.bool_, name
        np.testing.assert_array_equal(m.data, t, err_msg=name)


def test_a_bool_tensor_works_where_a_bool_array_did():
    x = mg.tensor(A, requires_grad=True)
    mask = x > 0
    np.testing.assert_array_equal(x.masked_fill(mask, 0.0).data, np.where(A > 0, 0.0, A))
    np.testing.assert_array_equal(F.where(mask, x, -x).data, np.abs(A))
    np.testing.assert_array_equal(mg.where(mask, x, 0.0).data, np.where(A > 0, A, 0.0))
    np.testing.assert_array_equal(x[mask].data, A[A > 0])
    assert mask.sum().item() == 3 and mask.sum(1).tolist() == [2, 1]
    assert mask.any().item() is True and mask.all().item() is False
    assert mask.all(1).tolist() == [False, False] and mask.any(0).tolist() == [True, True, True]
    np.testing.assert_array_equal(np.asarray(mask), A > 0)
    assert bool(x[0, 0] == 1.0) and not bool(x[0, 1] == 1.0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mask)
    assert (~mask).tolist() == (~(A > 0)).tolist() and mask.logical_not().tolist() == (~(A > 0)).tolist()
    x[mask].sum().backward()  # the gradient still flows through the masked read
    np.testing.assert_array_equal(x.grad, (A > 0).astype(float))


def test_numpy_functions_read_a_bool_tensor_as_its_array():
    pred, y = mg.tensor([1, 2, 3, 4]), np.array([1, 0, 3, 0])
    assert np.mean(pred == y) == 0.5 and np.sum(pred == y) == 2 and np.count_nonzero(pred != y) == 2
    assert np.any(pred == y) and not np.all(pred == y)
    np.testing.assert_array_equal(np.flatnonzero(pred == y), [0, 2])
    np.testing.assert_array_equal(np.where(pred > 2, pred, 0), [0, 0, 3, 4])
    assert type(np.concatenate([pred, pred])) is np.ndarray  # numpy's functions give arrays


def test_one_element_tensors_act_as_numbers():
    loss = mg.tensor(0.25)
    assert float(loss) == 0.25 and int(mg.tensor([3])) == 3 and f"{loss:.2f}" == "0.25"
    assert f"{(mg.tensor([1.0, 2.0]) == 1.0).float().mean():.1%}" == "50.0%"
    assert str(loss) == format(loss, "") == repr(loss)


def test_tensors_stay_hashable_by_identity():
    a, b = mg.tensor([1.0]), mg.tensor([1.0])
    assert len({a, b}) == 2 and {a: 1}[a] == 1


def test_logic_on_floats_is_refused():
    x = mg.tensor(A)
    with pytest.raises(TypeError, match="&: needs bool or integer tensors, got dtype float64"):
        x & (x > 0)
