"""Module and Parameter, named as in PyTorch so skills carry both ways."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from minigrad.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad. Assign the same Parameter twice to tie weights."""

    def __init__(self, data: Any, requires_grad: bool = True, name: str | None = None):
        super().__init__(data, requires_grad=requires_grad, name=name)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """A container of Parameters and sub-Modules, registered by attribute assignment."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__(); call super().__init__() first"
            )
        old = self._parameters.get(name)
        if isinstance(value, Parameter) and old is not None and old.shape != value.shape:
            raise ValueError(
                f"cannot assign a Parameter of shape {value.shape} to {type(self).__name__}."
                f"{name}, which has shape {old.shape}: tied weights must have the same shape "
                f"(del the attribute first to replace it with a new shape)"
            )
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- walking the tree --------------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop(0)
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            for child_name, child in module._modules.items():
                stack.append((f"{name}.{child_name}" if name else child_name, child))

    def _all_named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """Every (name, parameter) pair, a shared parameter once per name it goes by."""
        for module_name, module in self.named_modules():
            for name, p in module._parameters.items():
                yield (f"{module_name}.{name}" if module_name else name), p

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """Each parameter once, under the first name it was registered by."""
        seen: set[int] = set()
        for name, p in self._all_named_parameters():
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def aliases(self) -> dict[str, list[str]]:
        """{first name: every name} for each parameter, e.g. {'emb.weight': ['emb.weight', 'head.weight']}."""
        by_id: dict[int, list[str]] = {}
        for name, p in self._all_named_parameters():
            by_id.setdefault(id(p), []).append(name)
        return {names[0]: names for names in by_id.values()}

    def param_names(self) -> dict[int, list[str]]:
        """id(parameter) -> every name it goes by; the drawing and the ledger label with this."""
        by_id: dict[int, list[str]] = {}
        for name, p in self._all_named_parameters():
            by_id.setdefault(id(p), []).append(name)
        return by_id

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def num_parameters(self) -> int:
        """Number of distinct scalars: a tied table counts once."""
        return sum(p.size for p in self.parameters())

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Every name -> its array; tied names share the same array object."""
        return {name: p.data for name, p in self._all_named_parameters()}

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        own = dict(self._all_named_parameters())
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(
                f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}"
            )
        for name, p in own.items():
            if name not in state:
                continue
            value = np.asarray(getattr(state[name], "data", state[name]))
            if value.shape != p.shape:
                raise ValueError(
                    f"load_state_dict: {name!r} has shape {value.shape} in the state but "
                    f"{p.shape} in the model"
                )
            p.data[...] = value
            p._version += 1

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for name, m in self._modules.items():
            lines.append(f"  ({name}): " + repr(m).replace("\n", "\n  "))
        return "\n".join(lines) + ")" if self._modules else f"{type(self).__name__}({self.extra_repr()})"

    def extra_repr(self) -> str:
        return ""
