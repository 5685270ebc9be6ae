"""Seeds: every function that draws random numbers takes `rng`, a seed or a Generator; without
one it draws from the default generator, which `manual_seed(n)` resets (as torch.manual_seed)."""

from __future__ import annotations

from typing import Any

import numpy as np

_default = np.random.default_rng()  # fresh entropy until manual_seed is called


def manual_seed(seed: int) -> np.random.Generator:
    """Restart the default generator from `seed`: every draw made without an `rng` (mg.randn(3),
    nn.Linear(...), dropout) then repeats from here. Returns that generator."""
    global _default
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"manual_seed: seed must be a non-negative int, got {seed!r}")
    _default = np.random.default_rng(int(seed))
    return _default


def as_generator(rng: Any, who: str = "rng") -> np.random.Generator:
    """`rng` itself if it is a numpy Generator (so several draws share one stream), else a new
    Generator seeded with it: an int or a sequence of ints repeats; None uses the default
    generator (fresh entropy, or the stream `manual_seed` set).

    who: the caller, named in the error for a seed numpy cannot use.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return _default
    if isinstance(rng, (bool, np.bool_, float, str, bytes)):  # default_rng would take True as 1
        raise TypeError(f"{who}: rng must be an int seed, a numpy Generator or None, got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{who}: rng must be an int seed, a numpy Generator or None, got {rng!r} "
                        f"({err})") from None
