"""Shapes that do not fit raise minigrad.ShapeError, which is both a ValueError (numpy's habit,
so `except ValueError` keeps working) and a RuntimeError (PyTorch's, so code ported from
PyTorch catches it). Every case here is one where PyTorch raises RuntimeError; each message
still names the op and the shapes."""

import numpy as np
import pytest
from oracle import TF, torch

import minigrad as mg
from minigrad.nn import functional as F


def _zeros(lib, *shape):
    return lib.zeros(*shape) if shape else lib.zeros(())


def _mask(lib, *shape):
    return _zeros(lib, *shape) > 0


def _ids(lib, *shape):
    return lib.zeros(*shape).long()


# name: (the call, for minigrad or torch as `lib` with functional `TF`; what minigrad's message says)
CASES = {
    "matmul": (lambda lib, TF: _zeros(lib, 3, 7) @ _zeros(lib, 5, 2), r"matmul: shapes \(3, 7\) @ \(5, 2\)"),
    "matmul_of_a_0d": (lambda lib, TF: _zeros(lib) @ _zeros(lib, 3, 3), r"matmul: shapes \(\) @ \(3, 3\)"),
    "reshape": (lambda lib, TF: _zeros(lib, 2, 3).reshape(4, 2), r"reshape: cannot reshape shape \(2, 3\)"),
    "view": (lambda lib, TF: _zeros(lib, 2, 3).view(5), r"cannot reshape shape \(2, 3\) \(6 elements\)"),
    "permute_too_few_dims": (lambda lib, TF: _zeros(lib, 2, 3, 4).permute(0, 2),
                             r"permute\(\): dims \(0, 2\)"),
    "permute_repeated_dim": (lambda lib, TF: _zeros(lib, 2, 3).permute(0, 0), r"not a permutation of 2 axes"),
    "flatten": (lambda lib, TF: _zeros(lib, 2, 3, 4).flatten(2, 1), r"flatten\(\): start_dim=2 comes after"),
    "unflatten": (lambda lib, TF: _zeros(lib, 2, 6).unflatten(1, (4, -1)), r"unflatten\(\): sizes \(4, -1\)"),
    "expand_fewer_sizes": (lambda lib, TF: _zeros(lib, 2, 3).expand(3), r"expand\(\): 1 sizes"),
    "expand_a_size_that_is_not_1": (lambda lib, TF: _zeros(lib, 2, 3).expand(4, 3), r"cannot be expanded"),
    "split_sections": (lambda lib, TF: _zeros(lib, 6).split([2, 2]), r"split\(\): sections \[2, 2\] add up"),
    "masked_fill": (lambda lib, TF: _zeros(lib, 2, 3).masked_fill(_mask(lib, 4), 1.0),
                    r"masked_fill\(\): mask of shape \(4,\)"),
    "add": (lambda lib, TF: _zeros(lib, 2, 3) + _zeros(lib, 4),
            r"add: shapes \(2, 3\) and \(4,\) do not broadcast"),
    "mul": (lambda lib, TF: _zeros(lib, 2, 3) * _zeros(lib, 2), r"mul: shapes \(2, 3\) and \(2,\)"),
    "sub": (lambda lib, TF: _zeros(lib, 4) - _zeros(lib, 2, 3), r"sub: shapes \(4,\) and \(2, 3\)"),
    "div": (lambda lib, TF: _zeros(lib, 2, 3) / _zeros(lib, 2), r"div: shapes \(2, 3\) and \(2,\)"),
    "maximum": (lambda lib, TF: lib.maximum(_zeros(lib, 2, 3), _zeros(lib, 2)), r"maximum: shapes"),
    "where": (lambda lib, TF: lib.where(_mask(lib, 3), _zeros(lib, 2), _zeros(lib, 3)),
              r"where: shapes \(3,\), \(2,\) and \(3,\) do not broadcast"),
    "cat": (lambda lib, TF: lib.cat([_zeros(lib, 2, 3), _zeros(lib, 2, 4)]),
            r"cat: shapes \(2, 3\) and \(2, 4\)"),
    "stack": (lambda lib, TF: lib.stack([_zeros(lib, 2, 3), _zeros(lib, 2, 4)]),
              r"stack: shapes \(2, 3\) and \(2, 4\)"),
    "copy_": (lambda lib, TF: _zeros(lib, 3).copy_(_zeros(lib, 2)), r"copy_: a value of shape \(2,\)"),
    "setitem": (lambda lib, TF: _zeros(lib, 3).__setitem__(slice(None), _zeros(lib, 2)),
                r"__setitem__: a value of shape \(2,\)"),
    "add_in_place_grows": (lambda lib, TF: _zeros(lib, 3).add_(_zeros(lib, 2, 3)), r"add_: .*shape \(2, 3\)"),
    "cross_entropy_n_d_targets": (lambda lib, TF: TF.cross_entropy(_zeros(lib, 2, 5, 3), _ids(lib, 2, 4)),
                                  r"cross_entropy: targets has shape \(2, 4\), expected \(2, 3\)"),
    "cross_entropy_probabilities": (lambda lib, TF: TF.cross_entropy(_zeros(lib, 32, 10), _zeros(lib, 32, 1)),
                                    r"cross_entropy: float targets are class probabilities"),
    "cross_entropy_weight": (lambda lib, TF: TF.cross_entropy(_zeros(lib, 2, 5), _ids(lib, 2),
                                                              weight=_zeros(lib, 3)),
                             r"cross_entropy: weight has shape \(3,\), expected \(5,\)"),
    "linear": (lambda lib, TF: TF.linear(_zeros(lib, 2, 3), _zeros(lib, 4, 5)),
               r"linear: input has shape \(2, 3\)"),
    "linear_bias": (lambda lib, TF: TF.linear(_zeros(lib, 2, 3), _zeros(lib, 4, 3), _zeros(lib, 5)),
                    r"linear: bias has shape \(5,\)"),
    "embedding_table": (lambda lib, TF: TF.embedding(_ids(lib, 2), _zeros(lib, 3)),
                        r"embedding: weight has shape"),
    "layer_norm": (lambda lib, TF: TF.layer_norm(_zeros(lib, 2, 3), (4,)),
                   r"layer_norm: input has shape \(2, 3\)"),
    "layer_norm_weight": (lambda lib, TF: TF.layer_norm(_zeros(lib, 2, 3), (3,), _zeros(lib, 4)),
                          r"layer_norm: weight has shape \(4,\)"),
    "rms_norm": (lambda lib, TF: TF.rms_norm(_zeros(lib, 2, 3), (4,)), r"rms_norm: input has shape \(2, 3\)"),
    "attention": (lambda lib, TF: TF.scaled_dot_product_attention(_zeros(lib, 2, 3, 4), _zeros(lib, 2, 5, 3),
                                                                  _zeros(lib, 2, 5, 4)),
                  r"scaled_dot_product_attention: shapes q \(2, 3, 4\)"),
    "attention_mask": (lambda lib, TF: TF.scaled_dot_product_attention(
        _zeros(lib, 2, 3, 4), _zeros(lib, 2, 5, 4), _zeros(lib, 2, 5, 4), attn_mask=_mask(lib, 4, 4)),
        r"attn_mask has shape \(4, 4\)"),
    "repeat_fewer_sizes": (lambda lib, TF: _zeros(lib, 2, 3).repeat(2), r"repeat\(\): 1 sizes \(2,\)"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_shape_error_is_a_value_error_and_a_runtime_error(name):
    call, message = CASES[name]
    with pytest.raises(mg.ShapeError, match=message) as caught:
        call(mg, F)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, RuntimeError)


def torch_error(name):
    """The class of the error PyTorch raises for CASES[name] (its name), or "" for none."""
    try:
        CASES[name][0](torch, TF)
    except Exception as error:  # any class: which one it is is the answer
        return type(error).__name__
    return ""


@pytest.mark.parametrize("name", list(CASES))
def test_pytorch_raises_runtime_error_in_the_same_cases(name, oracle):
    assert oracle(torch_error, name) == "RuntimeError"


def test_a_reflected_operand_is_named_in_its_place():
    with pytest.raises(mg.ShapeError, match=r"sub: shapes \(4,\) and \(2, 3\) do not broadcast"):
        np.float64(1.0) * np.zeros(4) - mg.zeros(2, 3)


def test_code_written_for_pytorch_catches_it():
    try:
        mg.zeros(3, 7) @ mg.zeros(5, 2)
    except RuntimeError as error:  # what a PyTorch user writes
        caught = str(error)
    assert caught == "matmul: shapes (3, 7) @ (5, 2) do not match: 7 != 5"


def test_code_written_for_numpy_still_catches_it():
    with pytest.raises(ValueError, match="reshape"):
        mg.zeros(2, 3).reshape(7)


def test_other_value_errors_stay_value_errors():
    with pytest.raises(ValueError) as caught:
        F.cross_entropy(mg.zeros(2, 5), np.array([0, 1]), reduction="max")
    assert not isinstance(caught.value, RuntimeError)
