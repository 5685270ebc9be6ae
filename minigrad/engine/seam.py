"""The seam: your own `Function` in place of one of minigrad's ops.

    with minigrad.use(Embedding=MyEmbedding):   # your Embedding wherever minigrad's would run
        loss.backward()                          # its node is named "EmbeddingBackward (yours)"

Each open `use` block is one entry of a per-thread stack (function.py's `overrides`), which
`Function.apply` reads: an op runs the learner's Function from the innermost open block that names
it, else its own. Leaving a block takes out exactly that block's entry, whatever order blocks end
in, so once every block has ended nothing of any remains.

Per thread, as `no_grad`: a block changes the ops that the thread which entered it runs, and no
other thread's (the lab serves each request on a thread of its own).
"""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from minigrad.engine import function, kernels, ops
from minigrad.engine.function import Function


def known_ops() -> dict[str, type[Function]]:
    """Every op that can be replaced, by class name (the `Function`s of minigrad/engine/ops)."""
    return {name: op for name in ops.__all__
            if isinstance(op := getattr(ops, name), type) and issubclass(op, Function)}


def whose(op: type[Function] | str) -> str:
    """Whose implementation of `op` (an op of minigrad or its name) runs now in this thread:
    'yours' inside a `use` block that replaces it, else 'minigrad'."""
    plain = _known(op) if isinstance(op, str) else op
    return "minigrad" if function.implementation(plain) is plain else "yours"


class use:
    """Run your own `Function` in place of minigrad's op, inside a `with` block (in this thread).

        with minigrad.use(CrossEntropy=MyCrossEntropy): ...

    Each keyword is an op's class name (`minigrad.engine.ops`); its value a `Function` subclass
    whose forward takes the same arguments as minigrad's op, or None for minigrad's own. An inner
    block may name an op an outer one replaced; leaving it, even by an exception, brings back
    the outer one. `use(fast=False)` (switching the fast kernels off) is deprecated: use
    `minigrad.kernels.plain_only()`.
    """

    def __init__(self, fast: bool | None = None, **replacements: type[Function] | None):
        self._table: dict[type[Function], type[Function]] = {}
        self._plain_kernels: AbstractContextManager[None] | None = None
        for name, impl in replacements.items():
            plain = _known(name)
            if impl is not None and not (isinstance(impl, type) and issubclass(impl, Function)):
                raise TypeError(f"use({name}=...): expected a subclass of minigrad.Function (with "
                                f"static forward(ctx, ...) and backward(ctx, grad)), got {impl!r}")
            self._table[plain] = plain if impl is None else impl  # None: minigrad's own op
        if fast is not None:
            self._plain_kernels = _deprecated_fast_switch(fast)
        self._entered = False  # (set last: a refused use(...) has nothing to warn about)

    def __enter__(self) -> use:
        if self._entered:
            raise RuntimeError("use(...): this block is open already; make a new use(...) to nest one")
        self._entered = True
        if self._plain_kernels is not None:
            self._plain_kernels.__enter__()
        with function.open_blocks_lock:
            function.overrides.blocks.append(self._table)
            function.open_blocks += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        blocks = function.overrides.blocks
        with function.open_blocks_lock:
            # this block's own entry, wherever it is: blocks may end in any order
            del blocks[next(i for i, block in enumerate(blocks) if block is self._table)]
            function.open_blocks -= 1
        if self._plain_kernels is not None:
            self._plain_kernels.__exit__(*exc)

    def __del__(self) -> None:
        if getattr(self, "_entered", None) is False:
            warnings.warn("minigrad.use(...) did nothing: it replaces ops only inside a `with` block",
                          RuntimeWarning, stacklevel=2)


def _known(name: str) -> type[Function]:
    known = known_ops()
    if name not in known:
        raise ValueError(f"use(): {name!r} is not an op of minigrad; the ops are: "
                         f"{', '.join(sorted(known))}")
    return known[name]


def _deprecated_fast_switch(fast: bool) -> AbstractContextManager[None]:
    """The kernels' switch that `use(fast=...)` stood for, as a context manager (or a no-op)."""
    if not isinstance(fast, bool):
        raise TypeError(f"use(fast=...): expected True or False, got {fast!r}")
    warnings.warn("use(fast=...) is deprecated: use `with minigrad.kernels.plain_only():` to run the "
                  "plain kernels", DeprecationWarning, stacklevel=3)
    return nullcontext() if fast else kernels.plain_only()
