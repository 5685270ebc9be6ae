"""Backward from several threads at once (issue 22, item 7)."""

import sys
import threading

import numpy as np

from minigrad import nn

THREADS, BACKWARDS, EACH = 8, 40, 4.0  # each backward adds EACH: 8 x 40 x 4 = 1280


def test_concurrent_backwards_into_one_parameter_lose_no_gradient():
    # The read-add-write of .grad in AccumulateGrad runs under a lock, as in PyTorch; unlocked,
    # 8 threads x 40 backwards left between a tenth and two thirds of the 1280 expected here.
    w = nn.Parameter(np.zeros(200_000))  # big enough that numpy's add releases the GIL midway
    start = threading.Barrier(THREADS)

    def work():
        start.wait()
        for _ in range(BACKWARDS):
            (w * EACH).sum().backward()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so a race shows up on every run
    try:
        threads = [threading.Thread(target=work) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    expected = THREADS * BACKWARDS * EACH
    assert w.grad.min() == w.grad.max() == expected == 1280, (
        f"w.grad ranges over [{w.grad.min()}, {w.grad.max()}], expected {expected} everywhere")
