"""Function and Context: an op's forward and backward, side by side, and what one keeps for the other.

A `Function` works on numpy arrays only; this module knows nothing of tensors. `Function.apply`,
which unwraps tensors, runs `forward` and records the backward node, lives in tensor.py, beside
the Tensor it makes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np


class Context:
    """What a forward keeps for its backward: saved arrays, and named attributes (`ctx.axis`)."""

    # class-level defaults, overridden per context only when set (most ops save nothing)
    _saved: tuple[Any, ...] | None = ()
    # (version counter, index in saved, version when saved, tensor name) per watched tensor
    _versions: list[tuple[Any, int, int, str | None]] | tuple = ()
    needs_input_grad: tuple[bool, ...] = ()
    # True while the engine runs this backward for the last time (no retain_graph): the saved
    # arrays are freed right after, so a backward may reuse a private saved buffer as its result.
    last_backward = False

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved(self) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError("saved arrays were freed (pass retain_graph=True to keep them)")
        return self._saved

    def watch_versions(self, tensors: list[Any]) -> None:
        """Remember the version of every tensor (input or output) whose array the forward saved.

        The version counter is kept, not the tensor: a view made for this op alone (`w[1:3]`)
        may be gone by backward while its base is changed in place, and the counter they share
        still tells. Keeping the tensor would also make a cycle for an op that saves its own
        output (output -> node -> ctx -> output) that only the cycle collector frees.
        """
        versions = []
        for i, array in enumerate(self._saved):
            for t in tensors:
                if array is t.data:
                    counter = t._version_counter
                    versions.append((counter, i, counter.value, t.name))
        self._versions = versions

    def check_versions(self, node: Any) -> None:
        """Refuse to run the backward `node` (named in the message) on an array changed since."""
        for counter, i, version, name in self._versions:
            if counter.value != version:
                op = node.name
                label = f"'{name}'" if name else f"of shape {np.shape(self.saved[i])}"
                raise RuntimeError(
                    f"{op}: a tensor {label} that this op saved for backward (saved input "
                    f"{i}) was modified in place: it is at version {counter.value}, but the op "
                    f"saved it at version {version}. Clone it before modifying, or modify it "
                    "after backward."
                )

    def release(self) -> None:
        self._saved = None
        self._versions = ()


class Function:
    """Subclass with `forward(ctx, *arrays, **kw)` and `backward(ctx, grad)`, both static.

    `forward` receives numpy arrays (tensors are unwrapped) and returns one array: a new one, or
    a numpy view of an input (which then shares that input's version counter); return
    `a.view()` rather than an input array `a` itself.
    `backward` receives G = d(loss)/d(output) and returns one gradient per positional input
    (an array of that input's shape, or a RowSparse for a table), or None where an input needs
    none. Call `YourFunction.apply(*tensors, **kw)` to run it on tensors.
    """

    apply: ClassVar[Callable[..., Any]]  # defined in tensor.py, beside the Tensor it returns

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError
