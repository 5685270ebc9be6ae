"""Grad mode, anomaly mode and gradient recorders: switches each thread sets for itself.

As in PyTorch, the state is per thread (`threading.local`): one thread evaluating inside
`no_grad()` does not stop another thread from recording its graph. A new thread starts with grad
enabled, anomaly detection off and no recorders.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

Recorder = Callable[[Any, Any, Any], None]  # (sending node, receiving AccumulateGrad, gradient)


class _ThreadState(threading.local):
    def __init__(self) -> None:  # runs once in every thread that looks at the state
        self.grad_enabled = True
        self.anomaly_enabled = False
        self.recorders: list[Recorder] = []


_state = _ThreadState()


def is_grad_enabled() -> bool:
    return _state.grad_enabled


def is_anomaly_enabled() -> bool:
    return _state.anomaly_enabled


@contextlib.contextmanager
def _setting(name: str, value: bool) -> Iterator[None]:
    previous = getattr(_state, name)
    setattr(_state, name, value)
    try:
        yield
    finally:
        setattr(_state, name, previous)


def no_grad() -> contextlib.AbstractContextManager[None]:
    """Run ops without recording a graph (evaluation, optimizer steps), in this thread."""
    return _setting("grad_enabled", False)


def enable_grad() -> contextlib.AbstractContextManager[None]:
    """Record graphs again (inside a `no_grad()` block), in this thread."""
    return _setting("grad_enabled", True)


def detect_anomaly() -> contextlib.AbstractContextManager[None]:
    """Remember where each op was created; raise when backward produces NaN or Inf."""
    return _setting("anomaly_enabled", True)


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Call `recorder(sender, receiver, grad)` for every gradient sent into a leaf's node.

    Only backward passes run in this thread are recorded.
    """
    _state.recorders.append(recorder)
    try:
        yield recorder
    finally:
        _state.recorders.remove(recorder)


def record(sender: Any, receiver: Any, grad: Any) -> None:
    """Show one gradient on its way into a leaf's AccumulateGrad to every recorder."""
    for recorder in _state.recorders:
        recorder(sender, receiver, grad)
