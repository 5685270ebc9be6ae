"""Labels and measures of parameters and gradients, shared by the drawing and the ledger.

How a parameter is named (every alias of a tied one), how a gradient's layout is described
(`sparse: 3/6 rows` or `dense 6x4`), its norm, one of its rows, and the sum of several, as the
engine would accumulate them. The drawing labels its nodes and edges with these; the ledger
its tables, so the two always print the same words and numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor, add_grads


def param_names(names: Any) -> dict[int, list[str]]:
    """id(parameter) -> every name it goes by, from a Module, a {name: tensor} dict, or None."""
    if names is None:
        return {}
    if hasattr(names, "param_names"):
        return {k: list(v) for k, v in names.param_names().items()}
    if isinstance(names, Mapping):
        by_id: dict[int, list[str]] = {}
        for name, tensor in names.items():
            if not isinstance(tensor, Tensor):
                raise TypeError(
                    f"names: the value for {name!r} is a {type(tensor).__name__}, expected a Tensor "
                    "(pass a Module, or a dict mapping names to parameters)"
                )
            by_id.setdefault(id(tensor), []).append(str(name))
        return by_id
    raise TypeError(
        f"names: expected a Module or a dict mapping names to parameters, got {type(names).__name__}"
    )


def param_label(param: Tensor, names: Mapping[int, list[str]]) -> str:
    """'emb.weight = head.weight' for a tied parameter; its .name or shape when unnamed."""
    aliases = names.get(id(param))
    if aliases:
        return " = ".join(aliases)
    if param.name:
        return param.name
    return f"tensor{param.shape}"


def describe_layout(grad: Any) -> str:
    """'sparse: 3/6 rows' for a RowSparse, 'dense 6x4' for an array."""
    if isinstance(grad, RowSparse):
        return f"sparse: {grad.nnz_rows}/{grad.shape[0]} rows"
    shape = np.shape(grad)
    return "dense " + ("x".join(str(s) for s in shape) if shape else "scalar")


def grad_norm(grad: Any) -> float:
    """The Frobenius norm of a dense or row-sparse gradient (repeated rows summed first)."""
    values = grad.coalesce().values if isinstance(grad, RowSparse) else np.asarray(grad)
    return float(np.linalg.norm(values.astype(np.float64).ravel()))


def grad_row(grad: Any, row: int) -> np.ndarray | None:
    """Row `row` of a dense or row-sparse gradient; None when a sparse gradient does not store it."""
    if not isinstance(grad, RowSparse):
        return np.asarray(grad)[row]
    c = grad.coalesce()
    hit = np.flatnonzero(c.indices == row)
    return c.values[hit[0]] if hit.size else None


def sum_grads(grads: Sequence[Any]) -> Any:
    """The sum of one or more gradients, dense or RowSparse, as the engine accumulates them
    (sparse + sparse stays sparse, anything + dense is dense)."""
    if not grads:
        raise ValueError("sum_grads: no gradients to sum")
    return functools.reduce(add_grads, grads)
