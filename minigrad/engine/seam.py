"""The seam: which implementation of each op runs.

Every op has a plain `Function` in ops/, the reference and the code to read. Beside it there may be
a fast twin (fast_ops.py: the same numbers, faster) and, inside `use(...)`, a learner's own
`Function`. `Function.apply` asks this module which one to run: one dictionary lookup in `running`,
which is rebuilt only when the set changes (`use`, `register_fast`), so the seam costs an op almost
nothing. The same switch picks how the backward walk sums the gradients that meet at a node.

    with minigrad.use(Embedding=MyEmbedding):   # your Embedding wherever minigrad's would run
        loss.backward()                          # its node is named "EmbeddingBackward (yours)"
    with minigrad.use(fast=False): ...           # the plain ops only (MINIGRAD_FAST_PATHS=0 too)

The setting is process-wide, like the fast-path switch before it: a learner's op is used by every
thread until the `with` block ends.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

Function = Any  # function.py's Function (which imports this module), named for the hints only

# Every plain op by class name, as `ops.Add`: each op class of minigrad/engine/ops/ adds itself
# when it is defined (Function.__init_subclass__), so the Tensor methods that call ops need not
# import the ops (which import Function, whose apply makes Tensors: that would be a circle).
ops = SimpleNamespace()

# plain op -> the implementation that runs instead; ops that run their plain form are absent
running: dict[type[Function], type[Function]] = {}

_fast_twins: dict[type[Function], type[Function]] = {}
_fast_sums: type | None = None  # the fast way to sum gradients (fast_ops.OwnedSums), once registered
_fast_on = os.environ.get("MINIGRAD_FAST_PATHS", "1") != "0"
_yours: dict[type[Function], type[Function]] = {}


def register_plain(op: type[Function]) -> None:
    """Called by Function for each class defined in minigrad.engine.ops."""
    setattr(ops, op.__name__, op)


def register_fast(plain: type[Function], twin: type[Function]) -> None:
    """Make `twin` run wherever `plain` would, while the fast paths are on."""
    _fast_twins[plain] = twin
    _resolve()


def register_fast_sums(sums: type) -> None:
    global _fast_sums
    _fast_sums = sums


def fast_enabled() -> bool:
    return _fast_on


def fast_gradient_sums() -> type | None:
    """How the backward walk sums the gradients that meet at a node when the fast paths are on
    (fast_ops.OwnedSums); None for the plain way (graph.NewArraySums)."""
    return _fast_sums if _fast_on else None


def whose(op: type[Function] | str) -> str:
    """Whose implementation of `op` (a plain op or its name) runs now: 'yours', 'fast' or 'minigrad'."""
    plain = known_ops()[op] if isinstance(op, str) else op
    impl = running.get(plain, plain)
    if _yours.get(plain) is impl:
        return "yours"
    return "fast" if _fast_twins.get(plain) is impl else "minigrad"


def owner_label(impl: type[Function]) -> str:
    """' (yours)' for a learner's implementation, else '': how a node's name says who ran it."""
    return " (yours)" if impl in _yours.values() else ""


def known_ops() -> dict[str, type[Function]]:
    """Every op that can be replaced, by class name."""
    return dict(vars(ops))


def _resolve() -> None:
    table = dict(_fast_twins) if _fast_on else {}
    table.update(_yours)
    running.clear()
    running.update(table)


class use:
    """Run your own `Function` in place of an op, or switch the fast twins off.

        with minigrad.use(CrossEntropy=MyCrossEntropy): ...
        minigrad.use(fast=False)          # without `with`: stays until changed

    Each keyword is an op's class name (`minigrad.engine.ops`); its value a `Function` subclass
    whose forward takes the same arguments as the plain op's (or None, for minigrad's own). Nested
    blocks add to the outer set; leaving a block, even by an exception, restores the set before it.
    """

    def __init__(self, fast: bool | None = None, **ops: type[Function] | None):
        global _fast_on
        known = known_ops()
        for name, impl in ops.items():
            if name not in known:
                raise ValueError(f"use(): {name!r} is not an op of minigrad; the ops are: "
                                 f"{', '.join(sorted(known))}")
            if impl is not None and not _is_function(impl, known[name]):
                raise TypeError(f"use({name}=...): expected a subclass of minigrad.Function (with "
                                f"static forward(ctx, ...) and backward(ctx, grad)), got {impl!r}")
            if impl is known[name]:
                ops[name] = None  # minigrad's own plain op: nothing to replace
        if fast is not None and not isinstance(fast, bool):
            raise TypeError(f"use(fast=...): expected True or False, got {fast!r}")
        self._before = (dict(_yours), _fast_on)
        for name, impl in ops.items():
            if impl is None:
                _yours.pop(known[name], None)
            else:
                _yours[known[name]] = impl
        if fast is not None:
            _fast_on = fast
        _resolve()

    def __enter__(self) -> use:
        return self

    def __exit__(self, *exc: Any) -> None:
        global _fast_on
        yours, _fast_on = self._before
        _yours.clear()
        _yours.update(yours)
        _resolve()


def _is_function(impl: Any, plain: type[Function]) -> bool:
    """Whether `impl` is a subclass of minigrad's Function (the base class of the plain op)."""
    function_class = next(c for c in plain.__mro__ if c.__name__ == "Function"
                          and c.__module__ == "minigrad.engine.function")
    return isinstance(impl, type) and issubclass(impl, function_class)
