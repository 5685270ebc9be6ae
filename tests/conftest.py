import numpy as np
import pytest
from hypothesis import settings

# Few examples per property: every op is gradchecked on every element, which is costly.
settings.register_profile("minigrad", max_examples=15, deadline=None)
settings.load_profile("minigrad")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
