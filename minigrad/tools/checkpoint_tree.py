"""A nested checkpoint as safetensors: arrays as tensors, everything else as a JSON skeleton.

    {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
     "step": 1200}

`flatten` walks such a tree and gives back a skeleton (JSON-able) plus {key: array}, one entry per
array met; `unflatten` puts them back together. The skeleton keeps what JSON alone would lose:

    None, bool, int, float, str  ->  themselves (floats exactly, NaN and inf included)
    list                         ->  a JSON list of nodes
    tuple                        ->  {"tuple": [nodes]}
    dict                         ->  {"dict": [[key node, value node], ...]}  (int keys stay int,
                                     as an optimizer's state dict needs them)
    array or Tensor              ->  {"tensor": key}      (comes back as a numpy array)
    numpy scalar (np.float32(1)) ->  {"scalar": key}      (stored as a 0-d tensor, so any dtype)

A JSON object is always one of these tagged forms, so the skeleton reads back one way only.
Array keys are the path through the tree joined by "/" ("optimizer/state/0/exp_avg"), readable
in any safetensors viewer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor

PLAIN_KEYS = (str, int, float, bool, type(None))
WHAT_IT_HOLDS = ("a checkpoint holds arrays, Tensors, numbers, strings, None, lists, tuples and "
                 "dicts (save a module's, an optimizer's or a scheduler's state_dict(), not the object)")


def is_flat_state(state: Mapping[Any, Any]) -> bool:
    """Whether `state` is a plain state dict, {str name: array or Tensor}: the file it makes is
    the one any safetensors reader loads as is."""
    return all(isinstance(k, str) and isinstance(v, np.ndarray | Tensor) for k, v in state.items())


def flatten(tree: Mapping[Any, Any]) -> tuple[Any, dict[str, np.ndarray]]:
    """(skeleton, {key: array}) for a nested checkpoint; a TypeError names what cannot be stored."""
    flat = _Flattening()
    skeleton = flat.walk(tree, [], "checkpoint")
    return skeleton, flat.arrays


class _Flattening:
    """One flatten: the arrays met so far, each under a key that is its path through the tree."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def store(self, path: list[str], array: np.ndarray) -> str:
        """Keep `array` under its path's key (made unique: {"a/b": x, "a": {"b": y}} gives the
        second "a/b#2"); returns the key."""
        key, k = "/".join(path) or "tensor", 2
        while key in self.arrays:
            key, k = f"{'/'.join(path)}#{k}", k + 1
        self.arrays[key] = array
        return key

    def walk(self, value: Any, path: list[str], where: str) -> Any:
        """The skeleton node for `value` (at `path`, named `where` in a message)."""
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, Tensor | np.ndarray):
            return {"tensor": self.store(path, value.data if isinstance(value, Tensor) else value)}
        if isinstance(value, np.generic):
            return {"scalar": self.store(path, np.asarray(value))}
        if isinstance(value, list | tuple | Mapping):
            return self.walk_container(value, path, where)
        hint = " (call .to_dense() first)" if isinstance(value, RowSparse) else ""
        raise TypeError(f"save: {where} is a {type(value).__name__}{hint}; {WHAT_IT_HOLDS}")

    def walk_container(self, value: list | tuple | Mapping, path: list[str], where: str) -> Any:
        if isinstance(value, Mapping):
            return {"dict": [self.walk_item(k, v, path, where) for k, v in value.items()]}
        nodes = [self.walk(v, [*path, str(i)], f"{where}[{i}]") for i, v in enumerate(value)]
        return nodes if isinstance(value, list) else {"tuple": nodes}

    def walk_item(self, key: Any, value: Any, path: list[str], where: str) -> list[Any]:
        if not isinstance(key, PLAIN_KEYS):
            raise TypeError(f"save: {where} has a key {key!r} of type {type(key).__name__}; dict "
                            f"keys in a checkpoint must be str, int, float, bool or None")
        return [key, self.walk(value, [*path, str(key)], f"{where}[{key!r}]")]


def unflatten(skeleton: Any, arrays: Mapping[str, np.ndarray], where: str) -> Any:
    """The tree `flatten` took apart; arrays are the loaded ones (tied ones shared).
    A ValueError says what in the skeleton is malformed."""
    return _Unflattening(arrays, where).build(skeleton)


class _Unflattening:
    """One unflatten: the loaded arrays, and the file's name for the messages."""

    def __init__(self, arrays: Mapping[str, np.ndarray], where: str):
        self.arrays, self.where = arrays, where

    def build(self, node: Any) -> Any:
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list):
            return [self.build(n) for n in node]
        if isinstance(node, dict) and len(node) == 1:
            return self.build_tagged(node)
        raise self.malformed(node)

    def build_tagged(self, node: dict[str, Any]) -> Any:
        """A {"tensor" | "scalar" | "tuple" | "dict": body} node."""
        (tag, body), = node.items()
        if tag in ("tensor", "scalar") and isinstance(body, str):
            return self.array(tag, body)
        if tag == "tuple" and isinstance(body, list):
            return tuple(self.build(n) for n in body)
        if tag == "dict" and _is_list_of_items(body):
            return {k: self.build(v) for k, v in body}
        raise self.malformed(node)

    def malformed(self, node: Any) -> ValueError:
        return ValueError(f"{self.where}: the checkpoint's layout holds an entry minigrad did not write: "
                          f"{str(node)[:200]}")

    def array(self, tag: str, key: str) -> Any:
        """The loaded array under `key` ("tensor"), or its one value ("scalar")."""
        if key not in self.arrays:
            raise ValueError(f"{self.where}: the checkpoint's layout refers to a tensor {key!r} "
                             f"the file does not hold")
        return self.arrays[key] if tag == "tensor" else self.arrays[key][()]


def _is_list_of_items(body: Any) -> bool:
    """Whether a "dict" node's body is a list of [plain key, node] pairs."""
    return isinstance(body, list) and all(
        isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], PLAIN_KEYS) for kv in body)
