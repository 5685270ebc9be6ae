"""Function and Context: an op's forward and backward, side by side, and what one keeps for the other.

A `Function`'s forward and backward work on numpy arrays only. `Function.apply` is the bridge to
tensors: it asks the seam which implementation runs, unwraps the input tensors, runs `forward`,
wraps the result in a Tensor and, when an input requires grad, records the backward node. As in
PyTorch, that node is the very `ctx` the forward saved into (a `FunctionNode`): one object per op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import grad_mode, seam
from minigrad.engine.graph import Node, record_forward_trace
from minigrad.engine.tensor import Tensor, share_version_with_viewed_input


class Context:
    """What a forward keeps for its backward: saved arrays, and named attributes (`ctx.axis`)."""

    # class-level defaults, overridden per context only when set (most ops save nothing)
    _saved: tuple[Any, ...] | None = ()
    # (version counter, index in saved, version when saved, tensor name) per watched tensor
    _versions: list[tuple[Any, int, int, str | None]] | tuple = ()
    needs_input_grad: tuple[bool, ...] = ()
    # False while the walk runs this backward for the last time (no retain_graph): the saved
    # arrays are freed right after, so a fast twin may write its result into a saved buffer.
    retain_graph = True

    def save_for_backward(self, *arrays: Any) -> None:
        self._saved = arrays

    @property
    def saved(self) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError("saved arrays were freed (pass retain_graph=True to keep them)")
        return self._saved

    def watch_versions(self, tensors: list[Any]) -> None:
        """Remember the version of every tensor (input or output) whose array the forward saved,
        as it is or as a numpy view of it (`x.reshape(-1, n)`).

        The version counter is kept, not the tensor: a view made for this op alone (`w[1:3]`)
        may be gone by backward while its base is changed in place, and the counter they share
        still tells. Keeping the tensor would also make a cycle for an op that saves its own
        output (output -> node -> ctx -> output) that only the cycle collector frees.
        """
        versions = []
        for i, array in enumerate(self._saved):
            owner = getattr(array, "base", None)  # a view's base: the array that owns its memory
            for t in tensors:
                if array is t.data or (owner is not None and _is_view_of(array, owner, t.data)):
                    counter = t._version_counter
                    versions.append((counter, i, counter.value, t.name))
        self._versions = versions

    def check_versions(self, node: Any) -> None:
        """Refuse to run the backward `node` (named in the message) on an array changed since."""
        for counter, i, version, name in self._versions:
            if counter.value != version:
                label = f"'{name}'" if name else f"of shape {np.shape(self.saved[i])}"
                raise RuntimeError(
                    f"{node.name}: a tensor {label} that this op saved for backward (saved input "
                    f"{i}) was modified in place: it is at version {counter.value}, but the op "
                    f"saved it at version {version}. Clone it before modifying, or modify it "
                    "after backward."
                )

    def release(self) -> None:
        self._saved = None
        self._versions = ()


def _is_view_of(array: np.ndarray, owner: np.ndarray, data: np.ndarray) -> bool:
    """Whether `array`, whose memory `owner` owns, is a view into `data` (numpy's word on it)."""
    return (owner is data or owner is data.base) and np.may_share_memory(array, data)


class FunctionNode(Context, Node):
    """The backward of one call of a `Function`: the ctx its forward saved into, and the node of
    the graph, with edges to the nodes of the inputs (as in PyTorch, `y.grad_fn` is the ctx).

    Its own attributes are `op`, `function`, `next_nodes` and `grad_shape` (and Context's): a
    forward should not save anything under those names.
    """

    forward_trace: list[str] | None = None  # set in anomaly mode

    def __init__(self, op: type[Function], function: type[Function]):
        self.op = op  # the op that was called (its name names the node)
        self.function = function  # the implementation that ran: the op, its fast twin, or yours

    @property
    def ctx(self) -> FunctionNode:
        """The Context its backward receives: the node itself."""
        return self

    @property
    def name(self) -> str:
        return self.op.__name__ + "Backward" + seam.owner_label(self.function)

    def apply(self, grad: Any, retain_graph: bool = True) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time, but its "
                "saved arrays were already freed. Pass retain_graph=True to the first "
                "backward() if you need to backward twice."
            )
        if self._versions:
            self.check_versions(self)
        self.retain_graph = retain_graph
        grads = self.function.backward(self, grad)
        if type(grads) is not tuple:
            grads = (grads,)
        if len(grads) != len(self.next_nodes):
            raise RuntimeError(
                f"{self.name}: backward returned {len(grads)} gradients but forward had "
                f"{len(self.next_nodes)} inputs (return None for inputs that need none)."
            )
        return grads

    @property
    def released(self) -> bool:
        return self._saved is None


class Function:
    """Subclass with `forward(ctx, *arrays, **kw)` and `backward(ctx, grad)`, both static.

    `forward` receives numpy arrays (tensors are unwrapped) and returns one array: a new one, or
    a numpy view of an input (which then shares that input's version counter); return
    `a.view()` rather than an input array `a` itself.
    `backward` receives G = d(loss)/d(output) and returns one gradient per positional input
    (an array of that input's shape, or a RowSparse for a table), or None where an input needs
    none. Call `YourFunction.apply(*tensors, **kw)` to run it on tensors.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("minigrad.engine.ops."):  # a plain op: known to the seam by name
            seam.register_plain(cls)

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the op on tensors (and plain values): a Tensor, with its node when one is needed."""
        impl = seam.running.get(cls, cls)  # the plain op, its fast twin, or a learner's own
        recording = grad_mode.is_grad_enabled()
        arrays, needs, edges, tensors = [], [], [], []  # one pass over the inputs: unwrap, note
        for a in args:  # who needs grad and where its gradient will go
            if isinstance(a, Tensor):
                arrays.append(a.data)
                needs.append(a.requires_grad)
                edges.append(a._grad_node() if recording and a.requires_grad else None)
                tensors.append(a)
            else:
                arrays.append(a)
                needs.append(False)
                edges.append(None)
        ctx = FunctionNode(cls, impl)  # the ctx forward saves into; the node, if one is recorded
        ctx.needs_input_grad = tuple(needs)
        result = Tensor._wrap(impl.forward(ctx, *arrays, **kwargs))
        if result.data.base is not None:  # a numpy view, maybe of an input's array
            share_version_with_viewed_input(result, tensors)
        if recording and True in needs:
            ctx.next_nodes = tuple(edges)
            ctx.grad_shape = result.data.shape
            result.grad_fn = ctx
            result.requires_grad = True
            if ctx._saved:
                tensors.append(result)
                ctx.watch_versions(tensors)
            if grad_mode.is_anomaly_enabled():
                record_forward_trace(result.grad_fn)
        return result
