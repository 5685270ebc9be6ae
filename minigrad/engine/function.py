"""Function and Context: an op's forward and backward, side by side, and what one keeps for the other.

A `Function`'s forward and backward work on numpy arrays only. `Function.apply` is the bridge to
tensors: it unwraps the input tensors, runs `forward`, wraps the result in a Tensor and, when an
input requires grad, records the backward node. As in PyTorch, that node is the very `ctx` the
forward saved into (a `FunctionNode`): one object per op. Inside `minigrad.use(Embedding=Mine)`
(seam.py), `apply` runs the learner's `Mine` in place of minigrad's `Embedding`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import grad_mode
from minigrad.engine.arrays import Array
from minigrad.engine.graph import Node, record_forward_trace

if TYPE_CHECKING:
    from minigrad.engine.tensor import VersionCounter


class Context:
    """What a forward keeps for its backward: saved arrays, and named attributes (`ctx.axis`)."""

    # class-level defaults, overridden per context only when set (most ops save nothing)
    _saved: tuple[Any, ...] | None = ()
    # (version counter, index in saved, version when saved, tensor name) per watched tensor
    _versions: list[tuple[VersionCounter, int, int, str | None]] | tuple[()] = ()
    needs_input_grad: tuple[bool, ...] = ()

    if TYPE_CHECKING:  # a forward keeps what its backward needs under names it chooses
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def save_for_backward(self, *arrays: Array | None) -> None:  # None: an input not given
        self._saved = arrays

    @property
    def saved(self) -> tuple[Array, ...]:
        if self._saved is None:
            raise RuntimeError("saved arrays were freed (pass retain_graph=True to keep them)")
        return self._saved

    def watch_versions(self, tensors: list[Tensor]) -> None:
        """Remember the version of every tensor (input or output) whose array the forward saved,
        as it is or as a numpy view of it (`x.reshape(-1, n)`).

        The version counter is kept, not the tensor: a view made for this op alone (`w[1:3]`)
        may be gone by backward while its base is changed in place, and the counter they share
        still tells. Keeping the tensor would also make a cycle for an op that saves its own
        output (output -> node -> ctx -> output) that only the cycle collector frees.
        """
        versions = []
        for i, array in enumerate(self.saved):
            owner = getattr(array, "base", None)  # a view's base: the array that owns its memory
            for t in tensors:
                if array is t.data or (owner is not None and _is_view_of(array, owner, t.data)):
                    counter = t._version_counter
                    versions.append((counter, i, counter.value, t.name))
        self._versions = versions

    def check_versions(self, node: Node) -> None:
        """Refuse to run the backward `node` (named in the message) on an array changed since."""
        for counter, i, version, name in self._versions:
            if counter.value != version:
                label = f"'{name}'" if name else f"of shape {getattr(self.saved[i], 'shape', ())}"
                raise RuntimeError(
                    f"{node.name}: a tensor {label} that this op saved for backward (saved input "
                    f"{i}) was modified in place: it is at version {counter.value}, but the op "
                    f"saved it at version {version}. Clone it before modifying, or modify it "
                    "after backward."
                )

    def release(self) -> None:
        self._saved = None
        self._versions = ()


def _is_view_of(array: Array, owner: Array, data: Array) -> bool:
    """Whether `array`, whose memory `owner` owns, is a view into `data` (numpy's word on it)."""
    return (owner is data or owner is data.base) and bool(np.may_share_memory(array, data))


class FunctionNode(Context, Node):
    """The backward of one call of a `Function`: the ctx its forward saved into, and the node of
    the graph, with edges to the nodes of the inputs (as in PyTorch, `y.grad_fn` is the ctx).

    Its own attributes are `op`, `function`, `next_nodes`, `grad_shape`, `needs_input_grad` and
    `forward_trace`: a forward that sets one of them is refused, naming it (RESERVED).
    """

    forward_trace: list[str] | None = None  # set in anomaly mode

    def __init__(self, op: type[Function], function: type[Function]):
        self.op = op  # the op that was called (its name names the node)
        self.function = function  # the implementation that ran: the op itself, or yours

    @property
    def ctx(self) -> FunctionNode:
        """The Context its backward receives: the node itself."""
        return self

    @property
    def name(self) -> str:
        return self.op.__name__ + "Backward" + ("" if self.function is self.op else " (yours)")

    def apply(self, grad: Any, owned: bool = False) -> tuple[Any, ...]:
        if self._saved is None:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time, but its "
                "saved arrays were already freed. Pass retain_graph=True to the first "
                "backward() if you need to backward twice."
            )
        if self._versions:
            self.check_versions(self)
        returned = self.function.backward(self, grad)  # one gradient may come bare
        grads: tuple[Any, ...] = returned if type(returned) is tuple else (returned,)
        if len(grads) != len(self.next_nodes):
            raise RuntimeError(
                f"{self.name}: backward returned {len(grads)} gradients but forward had "
                f"{len(self.next_nodes)} inputs (return None for inputs that need none)."
            )
        return grads

    @property
    def released(self) -> bool:
        return self._saved is None


RESERVED = ("op", "function", "next_nodes", "grad_shape", "needs_input_grad", "forward_trace")


def check_reserved(ctx: FunctionNode, op: type[Function], function: type[Function],
                   needs: tuple[bool, ...]) -> None:
    """Refuse a forward (not one of minigrad's ops) that stored something under a name the node
    keeps for itself: the backward walk would read the forward's value instead of its own."""
    kept = {"op": op, "function": function, "needs_input_grad": needs}
    changed = [name for name, value in kept.items() if getattr(ctx, name) is not value]
    changed += [name for name in ("next_nodes", "grad_shape", "forward_trace") if name in vars(ctx)]
    if changed:
        raise AttributeError(
            f"{function.__name__}.forward set ctx.{changed[0]}, a name the backward node keeps for "
            f"itself (reserved: {', '.join(RESERVED)}); save it under another name, such as "
            f"ctx.my_{changed[0]}"
        )


# ---- the learner's seam: which Function runs for an op --------------------------------------------

class _Overrides(threading.local):
    """Per thread, the open `minigrad.use(...)` blocks (seam.py), innermost last: each a dict
    {minigrad's op: the learner's Function}."""

    def __init__(self) -> None:
        self.blocks: list[dict[type[Function], type[Function]]] = []


overrides = _Overrides()
open_blocks = 0  # `use` blocks open in every thread: while 0, an op looks no further than itself
open_blocks_lock = threading.Lock()


def implementation(op: type[Function]) -> type[Function]:
    """The Function that runs for `op` in this thread: the learner's, from the innermost open
    block that names it, else the op itself."""
    for block in reversed(overrides.blocks):
        if op in block:
            return block[op]
    return op


class Function:
    """Subclass with `forward(ctx, *arrays, **kw)` and `backward(ctx, grad)`, both static.

    `forward` receives numpy arrays (tensors are unwrapped) and returns one array: a new one, or
    a numpy view of an input (which then shares that input's version counter); return
    `a.view()` rather than an input array `a` itself.
    `backward` receives G = d(loss)/d(output) and returns one gradient per positional input
    (an array of that input's shape, or a RowSparse for a table), or None where an input needs
    none. Call `YourFunction.apply(*tensors, **kw)` to run it on tensors.
    """

    minigrads_own = False  # True for the ops of minigrad/engine/ops (trusted with the ctx's names)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.minigrads_own = cls.__module__.startswith("minigrad.engine.ops.")

    @staticmethod
    def forward(ctx: Context, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        """Run the op on tensors (and plain values): a Tensor, with its node when one is needed."""
        impl = implementation(cls) if open_blocks else cls  # minigrad's op, or the learner's own
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
        ctx.needs_input_grad = needs_input_grad = tuple(needs)
        result = Tensor._wrap(impl.forward(ctx, *arrays, **kwargs))
        if not impl.minigrads_own:  # a learner's forward: it must leave the node's own names alone
            check_reserved(ctx, cls, impl, needs_input_grad)
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
                record_forward_trace(ctx)
        return result


# Tensor's methods call the ops, and the ops are Functions whose apply makes Tensors: the one
# circle of the engine's imports, closed here, once Function exists for the ops to subclass.
from minigrad.engine.tensor import Tensor, share_version_with_viewed_input  # noqa: E402
