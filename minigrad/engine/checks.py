"""Argument checks that every layer shares, so one mistake reads the same everywhere."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine.arrays import Array


class ArgumentError(ValueError, RuntimeError):
    """An argument PyTorch refuses with RuntimeError where numpy's habit is ValueError (an integer
    tensor to a negative integer power, attn_mask together with is_causal=True); code written for
    either catches it."""


class ShapeError(ArgumentError):
    """Shapes that do not fit an op (a product, a reshape, a loss's targets).

    numpy's habit is ValueError and PyTorch's RuntimeError; code written for either catches it.
    """


def check_broadcast(who: str, *shapes: tuple[int, ...]) -> None:
    """Raise ShapeError naming `who` and the shapes when they do not broadcast together, e.g.
    "add: shapes (2, 3) and (4,) do not broadcast ..."."""
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(str(tuple(s)) for s in shapes[:-1]) + f" and {tuple(shapes[-1])}"
        raise ShapeError(f"{who}: shapes {listed} do not broadcast (from the last axis on, each pair "
                         "of sizes must be equal or one of them 1)") from None


def broadcasts_to(shape: tuple[int, ...], into: tuple[int, ...]) -> bool:
    """Whether an array of `shape` broadcasts to `into` (stretches to it, without growing it)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(into)) == tuple(into)
    except ValueError:
        return False


def check_in_range(ids: Array, size: int, *, who: str, item: str, name: str, range_of: str) -> None:
    """Raise IndexError for the first entry of the integer array `ids` outside [0, size).

    The message names the caller, the value, where it sits in the argument and the range,
    e.g. "embedding: token id 9 at ids[1, 2] is out of range for num_embeddings=6 (ids must
    be in [0, 6))". who: the caller; item: what one entry is ("token id", "row"); name: the
    argument ("ids"); range_of: what `size` counts ("num_embeddings=6", "5 classes").
    """
    if not ids.size or (ids.min() >= 0 and ids.max() < size):  # the common case: two passes, no mask
        return
    where = tuple(int(i) for i in np.argwhere((ids < 0) | (ids >= size))[0])
    value = int(ids[where])
    kind = "is negative" if value < 0 else f"is out of range for {range_of}"
    position = f"{name}{list(where)}" if where else name
    raise IndexError(f"{who}: {item} {value} at {position} {kind} ({name} must be in [0, {size}))")


def positive_int(who: str, name: str, value: Any, least: int = 1) -> int:
    """`value` as an int if it is an integer >= `least` (1, or 0 for a count that may be zero;
    not a bool); else ValueError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < least:
        kind = {1: "a positive int", 0: "a non-negative int"}.get(least, f"an int >= {least}")
        raise ValueError(f"{who}: {name} must be {kind}, got {value!r}")
    return int(value)
