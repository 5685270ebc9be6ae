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
    arrays: dict[str, np.ndarray] = {}

    def new_key(path: list[str]) -> str:
        key, k = "/".join(path) or "tensor", 2
        while key in arrays:  # e.g. {"a/b": x, "a": {"b": y}}: the second gets "#2"
            key, k = f"{'/'.join(path)}#{k}", k + 1
        return key

    def walk(value: Any, path: list[str], where: str) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, Tensor | np.ndarray):
            key = new_key(path)
            arrays[key] = value.data if isinstance(value, Tensor) else value
            return {"tensor": key}
        if isinstance(value, np.generic):
            key = new_key(path)
            arrays[key] = np.asarray(value)
            return {"scalar": key}
        if isinstance(value, list):
            return [walk(v, [*path, str(i)], f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"tuple": [walk(v, [*path, str(i)], f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, Mapping):
            items = []
            for k, v in value.items():
                if not isinstance(k, PLAIN_KEYS):
                    raise TypeError(f"save: {where} has a key {k!r} of type {type(k).__name__}; dict "
                                    f"keys in a checkpoint must be str, int, float, bool or None")
                items.append([k, walk(v, [*path, str(k)], f"{where}[{k!r}]")])
            return {"dict": items}
        hint = " (call .to_dense() first)" if isinstance(value, RowSparse) else ""
        raise TypeError(f"save: {where} is a {type(value).__name__}{hint}; {WHAT_IT_HOLDS}")

    skeleton = walk(tree, [], "checkpoint")
    return skeleton, arrays


def unflatten(skeleton: Any, arrays: Mapping[str, np.ndarray], where: str) -> Any:
    """The tree `flatten` took apart; arrays are the loaded ones (tied ones shared).
    A ValueError says what in the skeleton is malformed."""

    def build(node: Any) -> Any:
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list):
            return [build(n) for n in node]
        if isinstance(node, dict) and len(node) == 1:
            (tag, body), = node.items()
            if tag in ("tensor", "scalar") and isinstance(body, str):
                if body not in arrays:
                    raise ValueError(f"{where}: the checkpoint's layout refers to a tensor {body!r} "
                                     f"the file does not hold")
                return arrays[body] if tag == "tensor" else arrays[body][()]
            if tag == "tuple" and isinstance(body, list):
                return tuple(build(n) for n in body)
            if tag == "dict" and isinstance(body, list) and all(
                    isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], PLAIN_KEYS) for kv in body):
                return {k: build(v) for k, v in body}
        raise ValueError(f"{where}: the checkpoint's layout holds an entry minigrad did not write: "
                         f"{str(node)[:200]}")

    return build(skeleton)
