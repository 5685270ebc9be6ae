"""Dtype promotion as PyTorch does it (issue 22, item 1; the table is in docs/engine.md).

numpy's own rules give `int tensor * 0.5` the int dtype through the old lifting (so zeros), and
float64 for `float32 + int64` and for exp of an int; PyTorch gives float32. The table below is
written from PyTorch's rules and checked without torch; the second half compares with torch
itself over many (op, dtype, operand) pairs.
"""

import operator
import warnings

import numpy as np
import pytest
from oracle import torch

import minigrad as mg

f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
i8, i16, i32, i64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
u8, b = np.dtype(np.uint8), np.dtype(np.bool_)


def t(dtype, zero_dim=False):
    """A tensor of `dtype` with axes (or 0-d) and no zero in it (so division is defined)."""
    values = True if zero_dim else [True, True, True]
    if dtype != b:
        values = 3 if zero_dim else [1, 2, 3]
    return mg.tensor(np.array(values, dtype=dtype))


# (tensor dtype, the other operand, the result's dtype under PyTorch's rules)
TABLE = [
    (i64, 0.5, f32), (i32, 0.5, f32), (u8, 0.5, f32), (b, 0.5, f32),  # a float lifts to float32
    (b, 2, i64), (b, True, b), (i32, 2, i32), (u8, 2, u8), (i8, True, i8),  # an int: int64 or kept
    (f16, 0.5, f16), (f16, 2, f16), (f64, 0.5, f64), (f32, 2, f32),  # a float tensor keeps its width
    (i64, np.float64(0.5), f32), (i32, np.int64(2), i32),  # numpy scalars count as Python numbers
    (f32, t(i64), f32), (i32, t(f16), f16), (f16, t(f64), f64),  # tensors with axes: the higher kind
    (i8, t(u8), i16), (b, t(i32), i32), (f32, t(f32), f32),
    (f32, t(f64, zero_dim=True), f32), (i64, t(f64, zero_dim=True), f64),  # a 0-d tensor: lifts a kind
    (i32, t(i64, zero_dim=True), i32), (b, t(i32, zero_dim=True), i32),  # ... never the width
]


@pytest.mark.parametrize("dtype, other, expected", TABLE)
def test_the_promotion_table(dtype, other, expected):
    x = t(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for result in (x + other, other + x, x * other, other * x):
            assert result.dtype == expected
    from minigrad.engine.dtypes import result_type  # imported here so the file runs on old code

    assert result_type(x, other) == expected


def test_the_reported_wrong_numbers_are_right():
    np.testing.assert_array_equal((mg.arange(6) * 0.5).data, [0, 0.5, 1, 1.5, 2, 2.5])
    np.testing.assert_allclose((mg.tensor([1, 2, 3]) + 0.7).data, [1.7, 2.7, 3.7], rtol=1e-6)
    np.testing.assert_allclose((mg.tensor([1, 4, 9]) ** 0.5).data, [1, 2, 3])
    doubled = mg.tensor([True, False]) * 2
    assert doubled.dtype == i64 and doubled.data.tolist() == [2, 0]
    assert (mg.tensor([1, 2]) ** 2).dtype == i64 and (mg.tensor([1, 2]) ** 2).data.tolist() == [1, 4]
    assert (mg.ones(2) + mg.tensor([1, 2])).dtype == f32


@pytest.mark.parametrize("dtype", [b, u8, i32, i64])
def test_true_division_and_the_float_functions_of_ints_give_float32(dtype):
    x = t(dtype)
    assert (x / 2).dtype == f32 and (2 / x).dtype == f32 and (x / x).dtype == f32
    reference = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt, "mean": np.mean,
                 "sigmoid": lambda v: 1 / (1 + np.exp(-v))}
    for name, fn in reference.items():
        result = getattr(x, name)()
        assert result.dtype == f32, name
        np.testing.assert_allclose(result.data, fn(x.data.astype(np.float64)), rtol=1e-6)
    assert x.softmax(-1).dtype == x.log_softmax(-1).dtype == f32


def test_relu_and_abs_keep_an_int_dtype():
    x = mg.tensor([-2, 3])
    assert x.relu().dtype == x.abs().dtype == (-x).dtype == i64
    assert x.relu().data.tolist() == [0, 3]


def test_promote_types_orders_kinds_before_widths():
    from minigrad.engine.dtypes import can_cast, promote_types

    assert promote_types(i64, f16) == f16  # numpy says float64
    assert promote_types(b, u8) == u8 and promote_types(i8, u8) == i16
    assert can_cast(f64, f16) and can_cast(i64, u8) and not can_cast(f32, i64) and not can_cast(i8, b)


def test_a_float_tensor_that_requires_grad_is_cast_with_its_gradient():
    scale = mg.tensor(np.float64(2.0), requires_grad=True)  # 0-d: the float32 tensor decides
    x = mg.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = (x * scale).sum()
    assert y.dtype == f32
    y.backward()
    assert scale.grad.dtype == f64 and scale.grad == 3.0
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("op", ["mul_", "div_", "add_", "sub_", "*=", "/=", "+=", "-="])
def test_in_place_refuses_a_result_of_a_higher_kind(op):
    x = mg.arange(3)
    with pytest.raises(RuntimeError, match=r"the result has dtype float32, which cannot be stored "
                                           r"in place in this tensor of dtype int64"):
        in_place(x, op, 0.5)
    assert x.data.tolist() == [0, 1, 2] and x._version == 0  # nothing was written
    flags = mg.tensor([True, False])
    with pytest.raises(RuntimeError, match="dtype int64, which cannot be stored in place in this "
                                           "tensor of dtype bool"):
        flags.add_(1)


def test_in_place_keeps_the_tensors_dtype_when_the_result_fits():
    x = mg.arange(3)
    x += 2
    x *= mg.tensor([1, 2, 3])
    assert x.dtype == i64 and x.data.tolist() == [2, 6, 12]
    y = mg.ones(2)
    y += mg.tensor([1, 2])  # int into float32: fits
    y -= np.float64(0.5)
    assert y.dtype == f32 and y.data.tolist() == [1.5, 2.5]


AUGMENTED = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv}


def in_place(x, op, other):
    """x.op(other), or `x op other` as Python runs it (the statement's result is what x becomes)."""
    return AUGMENTED[op](x, other) if op in AUGMENTED else getattr(x, op)(other)


# ---- against PyTorch (live where it is installed, recorded where not) ----------------------------

DTYPES = [b, u8, i8, i16, i32, i64, f16, f32, f64]
NUMBERS = [True, 2, -3, 0.5, np.float64(1.5), np.int32(2)]
BINARY = {
    "add": lambda a, c: a + c, "radd": lambda a, c: c + a, "sub": lambda a, c: a - c,
    "rsub": lambda a, c: c - a, "mul": lambda a, c: a * c, "rmul": lambda a, c: c * a,
    "div": lambda a, c: a / c, "rdiv": lambda a, c: c / a,
}


def operands():
    """[(dtype name, other)], other a number or (a dtype name, 'dim' or '0d')."""
    pairs = []
    for dtype in DTYPES:
        pairs += [(dtype.name, number) for number in NUMBERS]
        pairs += [(dtype.name, (other.name, shape)) for other in DTYPES for shape in ("dim", "0d")]
    return pairs


def build(lib, dtype, other):
    """(x, y) in `lib` ("mg" or "torch"): x of `dtype` with axes; y the number or a tensor as `other` says."""
    def make(dt, zero_dim):
        values = np.array(3 if zero_dim else [1, 2, 3], dtype=dt) if dt != "bool" else \
            np.array(True if zero_dim else [True, False, True])
        return mg.tensor(values) if lib == "mg" else torch.from_numpy(values.copy())
    x = make(dtype, False)
    y = other if not isinstance(other, tuple) else make(other[0], other[1] == "0d")
    return x, y


def outcome(fn, x, y):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(x, y)
        except (RuntimeError, TypeError, ValueError, OverflowError):
            return None


def torch_binary(op, pairs):
    """BINARY[op] in torch for each (dtype, other): the result, or None where torch refuses."""
    return [outcome(BINARY[op], *build("torch", dtype, other)) for dtype, other in pairs]


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_ops_match_pytorch(op, oracle):
    fn, compared, pairs = BINARY[op], 0, operands()
    for (dtype, other), expected in zip(pairs, oracle(torch_binary, op, pairs), strict=True):
        if expected is None:  # PyTorch refuses (bool - bool, a negative number into uint8...)
            continue
        ours = outcome(fn, *build("mg", dtype, other))
        assert ours is not None, (op, dtype, other)
        assert ours.dtype == expected.dtype, (op, dtype, other, ours.dtype, expected.dtype)
        np.testing.assert_allclose(ours.data.astype(np.float64), expected.astype(np.float64),
                                   rtol=1e-3 if expected.dtype == f16 else 1e-6,
                                   err_msg=f"{op} {dtype} {other}")
        compared += 1
    assert compared > 100


def torch_pow(exponent, dtypes):
    return [outcome(lambda a, e: a ** e, build("torch", dtype, 2)[0], exponent) for dtype in dtypes]


@pytest.mark.parametrize("exponent", [2, 3, 0.5, 2.0, True, np.float64(0.5)])
def test_pow_matches_pytorch(exponent, oracle):
    dtypes = [d.name for d in DTYPES]
    for dtype, theirs in zip(dtypes, oracle(torch_pow, exponent, dtypes), strict=True):
        if theirs is None:
            continue
        ours = build("mg", dtype, 2)[0] ** exponent
        assert ours.dtype == theirs.dtype, (dtype, exponent)
        np.testing.assert_allclose(ours.data.astype(np.float64), theirs.astype(np.float64), rtol=1e-3)


UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "neg", "sum", "max", "softmax",
         "log_softmax"]


UNARY_CALLS = {"neg": lambda a, _: -a, "softmax": lambda a, _: a.softmax(-1),
               "log_softmax": lambda a, _: a.log_softmax(-1),
               "max": lambda a, _: a.max() if isinstance(a, mg.Tensor) else a.amax()}


def unary_call(name):
    return UNARY_CALLS.get(name, lambda a, _: getattr(a, name)())


def torch_unary(name, dtypes):
    return [outcome(unary_call(name), build("torch", dtype, 2)[0], None) for dtype in dtypes]


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_pytorch(name, oracle):
    dtypes = [d.name for d in DTYPES]
    for dtype, theirs in zip(dtypes, oracle(torch_unary, name, dtypes), strict=True):
        if theirs is None:  # PyTorch refuses (relu of bool, softmax of int): ours may give floats
            continue
        with np.errstate(divide="ignore"):  # log of False
            ours = unary_call(name)(build("mg", dtype, 2)[0], None)
        assert ours.dtype == theirs.dtype, (name, dtype)
        np.testing.assert_allclose(ours.data.astype(np.float64), theirs.astype(np.float64), rtol=1e-3)


def torch_in_place(op, pairs):
    """op in torch for each (dtype, other): the tensor after it, "cast" where torch refuses a result
    of a higher kind, or "refused" (bool subtraction)."""
    results = []
    for dtype, other in pairs:
        tx, ty = build("torch", dtype, other)
        try:
            results.append(in_place(tx, op, ty))
        except RuntimeError as error:
            results.append("cast" if "can't be cast" in str(error) else "refused")
    return results


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "+=", "-=", "*=", "/="])
def test_in_place_ops_match_pytorch(op, oracle):
    compared = refused = 0
    pairs = operands()
    for (dtype, other), theirs in zip(pairs, oracle(torch_in_place, op, pairs), strict=True):
        x, y = build("mg", dtype, other)
        if isinstance(theirs, str):
            if theirs == "cast":  # a result of a higher kind: refused by both
                with pytest.raises(RuntimeError, match="cannot be stored in place"):
                    in_place(x, op, y)
                refused += 1
            continue  # PyTorch refuses bool subtraction too; minigrad leaves that to numpy
        ours = outcome(lambda a, c: in_place(a, op, c), x, y)
        assert ours is x and x.dtype == dtype, (op, dtype, other)
        np.testing.assert_allclose(x.data.astype(np.float64), theirs.astype(np.float64),
                                   rtol=1e-3, err_msg=f"{op} {dtype} {other}")
        compared += 1
    assert compared > 50 and refused > 10


WHERE_SIDES = {"int": np.array([1, 2, 3]), "float32": np.array([1.5, 2.5, 3.5], dtype=np.float32),
               "bool": np.array([True, False, False])}
CONDITION = np.array([True, False, True])


def torch_where(a, b):
    return torch.where(torch.from_numpy(CONDITION),
                       *(torch.from_numpy(WHERE_SIDES[s]) if isinstance(s, str) else s for s in (a, b)))


@pytest.mark.parametrize("a, b", [("int", 0.5), (0.5, "int"), ("int", "float32"), (1.0, 0.0),
                                  ("float32", 0), ("bool", 2)])
def test_where_promotes_its_two_sides_as_pytorch(a, b, oracle):
    from minigrad.nn import functional as F

    ours = F.where(CONDITION, *(mg.tensor(WHERE_SIDES[s]) if isinstance(s, str) else s for s in (a, b)))
    theirs = oracle(torch_where, a, b)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.data, theirs)
