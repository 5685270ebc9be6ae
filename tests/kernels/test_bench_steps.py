"""The benchmark's step implementations compute the same training step (benchmarks/step.py).

run.py refuses to report times when the losses disagree; this checks the same on a tiny shape,
so a change to one implementation (the bound's row blocks, minigrad's fused head) cannot drift.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import step


@pytest.mark.parametrize("impl", ["minigrad", "bound"])
def test_each_step_gives_the_hand_written_numpy_steps_losses(small_row_blocks, impl):
    state = step.initial_state(V=64, d=8, H=16, N=32, seed=3)
    reference, other = step.numpy_step(state), step.BUILDERS[impl](state)
    expected = [reference() for _ in range(4)]
    got = [other() for _ in range(4)]
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert expected[-1] < expected[0]  # the steps learn: the comparison is not of constants
