"""tinygrad's names for minigrad's ops, so tinygrad's own op tests (test_ops.py, read from a
tinygrad checkout, never copied here) run against minigrad unchanged.

The adapter only renames: every tinygrad name below points at the minigrad function or method
that PyTorch users know by the PyTorch name (`x.dot(y)` is `x @ y`, `x.cast(d)` is `x.to(d)`,
`cond.where(a, b)` is `minigrad.where(cond, a, b)`, `x.binary_crossentropy_logits(y)` is
`F.binary_cross_entropy_with_logits(x, y)`), plus the three calls tinygrad's test helper makes
of its lazy engine: `realize()` (nothing to do: minigrad computes at once), `numpy()` and
`loss.gradient(*inputs)` (the inputs' gradients, by `backward`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

import minigrad as mg
from minigrad.nn import functional as F

# Where tinygrad's op tests are: a tinygrad checkout given by MINIGRAD_TINYGRAD (its test file has
# lived at test/test_ops.py and, later, test/backend/test_ops.py)
CHECKOUT_VARIABLE = "MINIGRAD_TINYGRAD"


def tinygrad_test_file() -> Path | None:
    root = os.environ.get(CHECKOUT_VARIABLE)
    if not root:
        return None
    for relative in ("test/backend/test_ops.py", "test/test_ops.py", "test_ops.py"):
        if (Path(root) / relative).is_file():
            return Path(root) / relative
    return None


def _tensor(data: Any, dtype: Any = None, requires_grad: Any = None, **_: Any) -> mg.Tensor:
    """tinygrad's Tensor(data): every float tensor can be differentiated (tinygrad's default)."""
    if isinstance(data, mg.Tensor):
        data = data.data
    t = mg.tensor(data, dtype=dtype)
    if t.dtype.kind == "f" and requires_grad is not False:
        t.requires_grad_()
    return t


def _gradient(self: mg.Tensor, *inputs: mg.Tensor) -> list[mg.Tensor]:
    for t in inputs:
        t.grad = None
    self.backward()
    return [mg.tensor(np.zeros(t.shape, t.dtype) if t.grad is None else mg.engine.to_dense(t.grad))
            for t in inputs]


def _listed(tensors: tuple[Any, ...]) -> list[Any]:
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)


class _TensorClassNames(type):
    """`Tensor.exp` and the rest: minigrad.Tensor's own methods, by the same names."""

    def __getattr__(cls, name: str) -> Any:
        return getattr(mg.Tensor, name)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, mg.Tensor)


class Tensor(metaclass=_TensorClassNames):
    """tinygrad's `Tensor`: makes minigrad tensors; its static constructors are minigrad's."""

    training = False

    def __new__(cls, data: Any, dtype: Any = None, device: Any = None, requires_grad: Any = None) -> Any:
        return _tensor(data, dtype, requires_grad)

    zeros = staticmethod(lambda *shape, dtype=np.float32, **_: mg.zeros(*shape, dtype=dtype))
    ones = staticmethod(lambda *shape, dtype=np.float32, **_: mg.ones(*shape, dtype=dtype))
    full = staticmethod(lambda shape, fill_value, dtype=None, **_: mg.full(shape, fill_value, dtype=dtype))
    full_like = staticmethod(lambda t, fill_value, dtype=None, **_: mg.full_like(t, fill_value, dtype=dtype))
    zeros_like = staticmethod(lambda t, dtype=None, **_: mg.zeros_like(t, dtype=dtype))
    ones_like = staticmethod(lambda t, dtype=None, **_: mg.ones_like(t, dtype=dtype))
    arange = staticmethod(lambda *args, **kw: mg.arange(*args, **kw))
    randn = staticmethod(lambda *shape, dtype=np.float32, **_: mg.randn(*shape, dtype=dtype))
    stack = staticmethod(lambda *tensors, dim=0: mg.stack(_listed(tensors), dim=dim))
    cat = staticmethod(lambda *tensors, dim=0: mg.cat(_listed(tensors), dim=dim))
    eye = staticmethod(lambda n, m=None, dtype=np.float32, **_: mg.eye(n, m, dtype=dtype))
    linspace = staticmethod(lambda start, stop, steps, dtype=np.float32, **_:
                            mg.linspace(start, stop, steps, dtype=dtype))

    @staticmethod
    def realize(*tensors: Any) -> Any:
        return tensors[0] if tensors else None


# tinygrad's method names on a tensor, each a minigrad function or method of PyTorch's name
METHODS = {
    "realize": lambda self, *others: self,
    "scaled_dot_product_attention": lambda self, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw:
        F.scaled_dot_product_attention(self, k, v, attn_mask, dropout_p, is_causal, **kw),
    "gradient": _gradient,
    "dot": lambda self, other: self @ other,
    "matmul": lambda self, other: self @ other,
    "cast": lambda self, dtype: self.to(dtype),
    "where": lambda self, a, b: mg.where(self, a, b),
    "stack": lambda self, *others, dim=0: mg.stack([self, *others], dim=dim),
    "cat": lambda self, *others, dim=0: mg.cat([self, *others], dim=dim),
    "full_like": lambda self, fill_value, **kw: mg.full_like(self, fill_value, **kw),
    "softmin": lambda self, axis=-1: F.softmin(self, dim=axis),
    "one_hot": lambda self, num_classes=-1: F.one_hot(self, num_classes),
    "softplus": lambda self, beta=1.0: F.softplus(self, beta=beta),
    "leaky_relu": lambda self, neg_slope=0.01: F.leaky_relu(self, neg_slope),
    "logsigmoid": lambda self: F.logsigmoid(self),
    "silu": lambda self: F.silu(self),
    "swish": lambda self: F.silu(self),
    "add": lambda self, other: self + other,
    "sub": lambda self, other: self - other,
    "mul": lambda self, other: self * other,
    "mod": lambda self, other: self % other,
    "cross_entropy": lambda self, y, reduction="mean", label_smoothing=0.0:
        F.cross_entropy(self, y, reduction=reduction, label_smoothing=label_smoothing),
    "sparse_categorical_crossentropy": lambda self, y, ignore_index=-1, label_smoothing=0.0, reduction="mean":
        F.cross_entropy(self, y, ignore_index=ignore_index, label_smoothing=label_smoothing,
                        reduction=reduction),
    "nll_loss": lambda self, y, weight=None, ignore_index=None, reduction="mean":
        F.nll_loss(self, y, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                   reduction=reduction),
    "elu": lambda self, alpha=1.0: F.elu(self, alpha),
    "celu": lambda self, alpha=1.0: F.celu(self, alpha),
    "selu": lambda self: F.selu(self),
    "relu6": lambda self: F.relu6(self),
    "hardtanh": lambda self, min_val=-1, max_val=1: F.hardtanh(self, min_val, max_val),
    "hardsigmoid": lambda self: F.hardsigmoid(self),
    "hardswish": lambda self: F.hardswish(self),
    "softsign": lambda self: F.softsign(self),
    "mish": lambda self: F.mish(self),
    "normalize": lambda self, p=2.0, dim=1, eps=1e-12: F.normalize(self, p, dim, eps),
    "pad": lambda self, padding, mode="constant", value=0.0: F.pad(self, padding, mode, value),
    "meshgrid": lambda self, *others, indexing="ij": mg.meshgrid(self, *others, indexing=indexing),
    "binary_crossentropy": lambda self, y, reduction="mean":
        F.binary_cross_entropy(self, y, reduction=reduction),
    "binary_crossentropy_logits": lambda self, y, reduction="mean", pos_weight=None:
        F.binary_cross_entropy_with_logits(self, y, reduction=reduction, pos_weight=pos_weight),
}


def _limited(scalar_type: type, limits: Any) -> type:
    """numpy's scalar type under tinygrad's name, with the .min and .max tinygrad's dtypes have
    (np.dtype of it is numpy's own dtype, so minigrad takes it as any numpy dtype)."""
    return type(scalar_type.__name__, (scalar_type,), {"min": limits.min, "max": limits.max})


class _Dtypes:
    """tinygrad's dtype names: numpy's dtypes, which minigrad's are."""

    float16 = half = _limited(np.float16, np.finfo(np.float16))
    float32 = float = default_float = _limited(np.float32, np.finfo(np.float32))
    float64 = double = _limited(np.float64, np.finfo(np.float64))
    int8, int16, int32, int64 = (_limited(t, np.iinfo(t)) for t in (np.int8, np.int16, np.int32, np.int64))
    uint8, uint16, uint32, uint64 = (_limited(t, np.iinfo(t))
                                     for t in (np.uint8, np.uint16, np.uint32, np.uint64))
    int = default_int = int32
    bool = np.bool_


class _Device:
    """One device, the CPU, with no renderer of tinygrad's."""

    DEFAULT = "CPU"

    def __getitem__(self, name: str) -> Any:
        every_dtype = [v for k, v in vars(_Dtypes).items() if not k.startswith("_")]
        return types.SimpleNamespace(renderer=types.SimpleNamespace(supported_dtypes=lambda: every_dtype))


def _getenv(key: str, default: Any = 0) -> Any:
    value = os.environ.get(key)
    return default if value is None else type(default)(value)


def _modules() -> dict[str, types.ModuleType]:
    """The tinygrad modules test_ops.py imports, made of the names above."""
    tinygrad = types.ModuleType("tinygrad")
    tinygrad.Tensor, tinygrad.dtypes = Tensor, _Dtypes
    tinygrad.Device = _Device()
    helpers = types.ModuleType("tinygrad.helpers")
    helpers.getenv, helpers.DEBUG, helpers.IMAGE = _getenv, 0, 0
    helpers.DEV = types.SimpleNamespace(interface="", renderer="", device="CPU")
    helpers.Context = lambda **_: contextlib.nullcontext()
    tensor = types.ModuleType("tinygrad.tensor")
    tensor.Tensor, tensor._to_np_dtype = Tensor, np.dtype  # tinygrad's name for numpy's dtype
    renderer = types.ModuleType("tinygrad.renderer")
    nir = types.ModuleType("tinygrad.renderer.nir")
    nir.NIRRenderer = type("NIRRenderer", (), {})
    return {"tinygrad": tinygrad, "tinygrad.helpers": helpers, "tinygrad.tensor": tensor,
            "tinygrad.renderer": renderer, "tinygrad.renderer.nir": nir}


def load_test_ops(path: Path, monkeypatch: Any) -> types.ModuleType:
    """tinygrad's test_ops.py as a module whose `tinygrad` is minigrad under tinygrad's names.
    monkeypatch (pytest's) puts back sys.modules and minigrad.Tensor when the test ends."""
    for name, module in _modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    for name, method in METHODS.items():
        monkeypatch.setattr(mg.Tensor, name, method, raising=False)
    module = types.ModuleType("tinygrad_test_ops")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module
