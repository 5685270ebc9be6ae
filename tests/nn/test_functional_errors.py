"""Bad input to the functional API gets an error that names the argument and what was expected."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F


def test_cross_entropy_target_shape():
    with pytest.raises(ValueError, match=r"targets has shape \(3,\), expected \(2,\)"):
        F.cross_entropy(mg.zeros(2, 5), np.array([0, 1, 2]))


def test_cross_entropy_target_out_of_range():
    with pytest.raises(IndexError, match=r"cross_entropy: target 5 at targets\[1\] is out of range for "
                                         r"5 classes \(targets must be in \[0, 5\)\)"):
        F.cross_entropy(mg.zeros(2, 5), np.array([0, 5]))


def test_cross_entropy_float_targets_of_the_ids_shape():
    with pytest.raises(ValueError, match=r"float targets are class probabilities, of the input's "
                                         r"shape \(2, 5\), but these have shape \(2,\) "
                                         r"\(class ids must be integers\)"):
        F.cross_entropy(mg.zeros(2, 5), np.array([0.0, 1.0]))


def test_cross_entropy_targets_neither_ids_nor_probabilities():
    with pytest.raises(TypeError, match="targets must be integer class ids or float class probabilities"):
        F.cross_entropy(mg.zeros(2, 5), np.array(["a", "b"]))


def test_cross_entropy_reduction():
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'max'"):
        F.cross_entropy(mg.zeros(2, 5), np.array([0, 1]), reduction="max")


def test_gelu_approximate():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(mg.zeros(2), approximate="fast")
