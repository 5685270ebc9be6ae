"""Backward from several threads into one shared parameter loses nothing (issue 22, item 7).

PyTorch locks the read-add-write of a leaf's .grad; so does AccumulateGrad.apply here, also when
it keeps a sum the walk made as a leaf's first gradient.
"""

import contextlib
import sys
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

THREADS, BACKWARDS, EACH = 8, 40, 4.0  # 8 x 40 backwards, each adding 4: 1280


def run_threads(fast: bool, size: int) -> np.ndarray:
    """THREADS threads each run BACKWARDS backwards of (w * EACH).sum() at once."""
    w = nn.Parameter(np.zeros(size))
    start = threading.Barrier(THREADS)
    errors = []

    def work():
        try:
            start.wait()
            for _ in range(BACKWARDS):
                (w * EACH).sum().backward()
        except Exception as error:  # a thread's failure must fail the test, not vanish
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, so a race shows up
    try:
        with contextlib.nullcontext() if fast else mg.kernels.plain_only():
            threads = [threading.Thread(target=work) for _ in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    return w.grad


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
@pytest.mark.parametrize("size", [8, 100_000], ids=["small", "large"])  # large: numpy drops the GIL
def test_every_backward_reaches_the_shared_parameter(fast, size):
    grad = run_threads(fast, size)
    assert grad.min() == grad.max() == THREADS * BACKWARDS * EACH == 1280, (grad.min(), grad.max())


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
def test_threads_training_a_tied_table_sum_every_gradient(fast):
    """The course's own graph, a table read by a lookup (a RowSparse gradient) and by the fused
    classifier (a dense one), run from 4 threads at once: the sum is 4 x 10 single gradients."""
    from minigrad.nn import functional as F

    rng = np.random.default_rng(0)
    table = nn.Parameter(rng.normal(size=(4000, 32)))  # large enough that numpy drops the GIL
    ids, targets = rng.integers(0, 4000, size=(4, 6)), rng.integers(0, 4000, size=(4, 6))

    def step():
        F.linear_cross_entropy(F.embedding(ids, table), table, targets).backward()

    with contextlib.nullcontext() if fast else mg.kernels.plain_only():
        step()
        single = table.grad.to_dense() if hasattr(table.grad, "to_dense") else table.grad.copy()
        table.grad = None
        start, errors = threading.Barrier(4), []

        def work():
            try:
                start.wait()
                for _ in range(10):
                    step()
            except Exception as error:
                errors.append(error)

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
    assert not errors, errors
    total = table.grad.to_dense() if hasattr(table.grad, "to_dense") else table.grad
    np.testing.assert_allclose(total, 40 * single, rtol=1e-10, atol=1e-12)
