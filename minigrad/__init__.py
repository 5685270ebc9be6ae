"""minigrad: a small reverse-mode autograd engine on numpy, for learning how token
embeddings, unembeddings and weight tying really learn."""

from minigrad import nn, optim
from minigrad.engine import (
    ArgumentError,
    Function,
    RowSparse,
    ShapeError,
    Tensor,
    arange,
    count_dependencies,
    detect_anomaly,
    dtype_names,
    enable_grad,
    eye,
    full,
    full_like,
    is_grad_enabled,
    kernels,
    linspace,
    manual_seed,
    no_grad,
    ones,
    ones_like,
    randn,
    tensor,
    unbroadcast,
    use,
    whose,
    zeros,
    zeros_like,
)
from minigrad.nn.functional import (
    cat,
    clamp,
    clip,
    concatenate,
    flip,
    logsumexp,
    maximum,
    meshgrid,
    minimum,
    stack,
    std_mean,
    var_mean,
    where,
)
from minigrad.tools.gradcheck import GradcheckError, GradcheckReport, gradcheck
from minigrad.tools.io import CheckpointError, load, load_into, save
from minigrad.tools.ledger import Ledger, ledger


def check(number: int, answers: object) -> object:
    """Mark lesson `number`'s exercise from a notebook: `minigrad.check(4, globals())`.

    answers: a module, a namespace, or a dict of your definitions such as `globals()`. Returns
    a result whose `passed` is a bool and that displays as `minigrad check N` prints (the
    same verdict and diagnosis); a plain script also gets the verdict printed. Loaded on
    first use, so `import minigrad` stays light.
    """
    from minigrad.learn.course.grading import check as check_lesson

    return check_lesson(number, answers)


__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

# Loaded on first use, so `import minigrad` does not import graphviz: `mg.draw` imports the
# drawing module (and graphviz) the first time it is read. (safetensors waits inside io.)
_LAZY = {"draw": "minigrad.tools.viz"}
# Subpackages loaded on first use (`mg.models.TinyLM` after `import minigrad as mg`)
_LAZY_MODULES = ("models", "tools")


def __getattr__(name: str):
    if name in dtype_names.__all__:  # mg.float32, mg.long, mg.bool (read here, so this module's
        return getattr(dtype_names, name)  # own `float`, `int` and `bool` stay Python's)
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"minigrad.{name}")
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later reads do not come back here
        return value
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES) | set(dtype_names.__all__))

__all__ = [
    "ArgumentError", "Function", "GradcheckError", "kernels", "GradcheckReport", "RowSparse", "ShapeError",
    "Tensor", "arange",
    "detect_anomaly", "enable_grad", "gradcheck", "is_grad_enabled", "nn", "no_grad", "ones", "optim",
    "randn", "tensor", "unbroadcast", "use", "zeros",
    "Ledger", "draw", "ledger",
    "CheckpointError", "load", "load_into", "save", "cat", "concatenate", "stack", "where", "check",
    "count_dependencies", "whose", "manual_seed", "clamp", "clip", "flip", "logsumexp", "maximum",
    "minimum", "full", "full_like", "ones_like", "zeros_like", "eye", "linspace", "meshgrid",
    "std_mean", "var_mean", *dtype_names.__all__,
]
