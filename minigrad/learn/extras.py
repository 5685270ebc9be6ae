"""What a plain install leaves out, and how to say so without a traceback.

The core install (`make tour`, or `pip install .`) runs the library and the tour (numpy, Graphviz
bindings and the WebAssembly Graphviz renderer); the lessons also plot, so they need the `lessons`
extra. A command that needs an extra checks for it first and prints one line naming the extra and
the command that installs it for this Python (`minigrad.tools.install_hint`), instead of dying on
`ModuleNotFoundError` halfway through a lesson.
"""

from __future__ import annotations

import importlib.util

from minigrad.tools.install_hint import install_extra

EXTRA_MODULES = {"lessons": ("matplotlib",), "lab": ("threadpoolctl",)}  # extra -> modules code imports


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` (a key of EXTRA_MODULES) that cannot be imported here."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"missing_modules: extra must be one of {sorted(EXTRA_MODULES)}, got {extra!r}")
    missing = []
    for name in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder refused it, or a broken half-install
            found = False
        if not found:
            missing.append(name)
    return missing


def install_hint(extra: str) -> str:
    """The one command that installs `extra` for the Python running now (see install_hint.install_extra)."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"install_hint: extra must be one of {sorted(EXTRA_MODULES)}, got {extra!r}")
    return install_extra(extra)


def extra_problem(extra: str, needed_by: str) -> str | None:
    """One sentence when `extra` is not installed (None when it is), e.g. for 'lesson 3'."""
    missing = missing_modules(extra)
    if not missing:
        return None
    return (f"{needed_by} needs {', '.join(missing)}, from the `{extra}` extra, which is not installed; "
            f"install it with: {install_hint(extra)}")
