"""Seeds: every function that draws random numbers takes `rng`, a seed or a Generator."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_generator(rng: Any, who: str = "rng") -> np.random.Generator:
    """`rng` itself if it is a numpy Generator (so several draws share one stream), else a new
    Generator seeded with it: an int or a sequence of ints repeats, None draws fresh entropy.

    who: the caller, named in the error for a seed numpy cannot use.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_, float, str, bytes)):  # default_rng would take True as 1
        raise TypeError(f"{who}: rng must be an int seed, a numpy Generator or None, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{who}: rng must be an int seed, a numpy Generator or None, got {rng!r} "
                        f"({err})") from None
