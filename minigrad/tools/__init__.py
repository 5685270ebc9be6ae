"""Tools that look at a graph: finite-difference checks, the gradient ledger, the drawing,
and checkpoints that keep ties. They import the engine and nn, nothing above."""

import importlib

_SUBMODULES = ("checkpoint_tree", "gradcheck", "install_hint", "io", "labels", "ledger", "render", "viz")


def __getattr__(name: str):
    """`minigrad.tools.viz` without importing it first: submodules load when first read, so
    the drawing module (and graphviz with it) waits until something draws."""
    if name in _SUBMODULES:
        return importlib.import_module(f"minigrad.tools.{name}")
    raise AttributeError(f"module 'minigrad.tools' has no attribute {name!r}")
