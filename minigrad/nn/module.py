"""Module and Parameter, named as in PyTorch so skills carry both ways."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import Tensor, zeroed


class Parameter(Tensor):
    """A leaf tensor that requires grad. Assign the same Parameter twice to tie weights."""

    def __init__(self, data: Any, requires_grad: bool = True, name: str | None = None):
        super().__init__(data, requires_grad=requires_grad, name=name)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__() + ")"


class Module:
    """A container of Parameters and sub-Modules, registered by attribute assignment.

    Tying is assignment: `head.weight = emb.weight` makes both names refer to one Parameter
    (one AccumulateGrad node, one `.grad`). Every walk below goes depth-first in registration
    order, as PyTorch's does, so the first name of a shared parameter is the same in both.
    """

    # set in __init__ with object.__setattr__, as __setattr__ below needs them to exist
    _parameters: dict[str, Parameter]
    _modules: dict[str, Module]
    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__(); call super().__init__() first"
            )
        if isinstance(value, Parameter | Module):
            _check_name(self, name)
        where = f"{type(self).__name__}.{name}"
        old = self._parameters.get(name)
        if old is not None and not (value is None or isinstance(value, Parameter)):
            # e.g. `head.weight = emb.weight * 1.0` would otherwise silently stop training it
            raise TypeError(
                f"cannot assign a {type(value).__name__} to {where}, which is a Parameter: "
                f"expected a minigrad.nn.Parameter (to tie weights) or None; to change its values "
                f"use `with minigrad.no_grad(): {name}.copy_(new_values)`"
            )
        if isinstance(value, Parameter) and old is not None and old.shape != value.shape:
            raise ValueError(
                f"cannot assign a Parameter of shape {value.shape} to {where}, which has shape "
                f"{old.shape}: tied weights must have the same shape (del the attribute first to "
                f"replace it with a new shape)"
            )
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` under `name`, as PyTorch's add_module: the name may not hold "."
        nor hide an attribute or method the module already has (e.g. "eval")."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module, got {type(module).__name__}")
        _check_name(self, name, hides=True)
        setattr(self, name, module)

    register_module = add_module

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` under `name`, with add_module's rules for the name."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter, got {type(param).__name__}")
        _check_name(self, name, hides=True)
        setattr(self, name, param)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---- walking the tree --------------------------------------------------------------------
    def _walk(self) -> Iterator[tuple[str, Module]]:
        """Every (path, module), depth-first; a shared submodule once per path that reaches it."""
        stack: list[tuple[str, Module, tuple[int, ...]]] = [("", self, ())]
        while stack:
            name, module, ancestors = stack.pop()
            yield name, module
            path = (*ancestors, id(module))
            children = [
                (f"{name}.{child_name}" if name else child_name, child, path)
                for child_name, child in module._modules.items()
                if id(child) not in path  # a module inside itself would make the walk endless
            ]
            stack.extend(reversed(children))

    def named_modules(self) -> Iterator[tuple[str, Module]]:
        """Each module once, under the first path that reaches it."""
        return _first_of_each(self._walk())

    def _all_named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """Every (name, parameter) pair, a shared parameter once per name it goes by."""
        for module_name, module in self._walk():
            for name, p in module._parameters.items():
                yield (f"{module_name}.{name}" if module_name else name), p

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """Each parameter once, under the first name it goes by (see `aliases()` for all)."""
        return _first_of_each(self._all_named_parameters())

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def param_names(self) -> dict[int, list[str]]:
        """id(parameter) -> every name it goes by; the drawing and the ledger label with this."""
        by_id: dict[int, list[str]] = {}
        for name, p in self._all_named_parameters():
            by_id.setdefault(id(p), []).append(name)
        return by_id

    def aliases(self) -> dict[str, list[str]]:
        """{first name: every name} per parameter, e.g. {'emb.weight': ['emb.weight', 'head.weight']}."""
        return {names[0]: names for names in self.param_names().values()}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every gradient: `.grad = None` (PyTorch's default), or with set_to_none=False
        zeros of the same layout (an array zeroed in place, a RowSparse with no rows)."""
        for p in self.parameters():
            p.grad = None if set_to_none else zeroed(p.grad)

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
        """Every name -> the parameter's live array (not a copy, as in PyTorch).

        Tied names map to the *same* array object: that identity is how a state dict carries
        a tie (`minigrad.save` stores it once, `minigrad.load` gives it back the same way).
        """
        return {name: p.data for name, p in self._all_named_parameters()}

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Copy `state`'s arrays into the parameters, in place, so ties in the model are kept.

        Everything is checked before anything is written: on any error the model is unchanged.
        Errors: KeyError for missing / unexpected names (strict; a tied parameter counts as
        present when any of its names is), ValueError for a shape or dtype mismatch, for tied
        names that the state gives different values, and (strict) for names the state ties
        (one array object) that the model keeps apart.
        """
        params = dict(self._all_named_parameters())
        groups = list(self.aliases().values())  # the names of one parameter per group
        if strict:
            _check_same_names(state, params, groups)
        # a Tensor's own array (not ndarray.data, a memoryview): array identity marks a tie
        arrays = {k: v.data if isinstance(v, Tensor) else np.asarray(v)
                  for k, v in state.items() if k in params}
        for name, value in arrays.items():
            _check_loadable(name, value, params[name])
        plan = _load_plan(groups, arrays, params)
        if strict:
            _check_no_extra_ties(arrays, params)
        for p, value in plan:  # all checks passed: nothing below can fail half-way
            p.data[...] = value
            p._version += 1

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for name, m in self._modules.items():
            lines.append(f"  ({name}): " + repr(m).replace("\n", "\n  "))
        return "\n".join(lines) + ")" if self._modules else f"{type(self).__name__}({self.extra_repr()})"

    def extra_repr(self) -> str:
        return ""


class ModuleNameError(KeyError):
    """A name a module or parameter cannot be registered under (a KeyError, as in PyTorch)."""

    def __str__(self) -> str:  # the message as written, without KeyError's added quotes
        return str(self.args[0]) if self.args else ""


def _check_same_names(state: Mapping[str, Any], params: dict[str, Parameter],
                      groups: list[list[str]]) -> None:
    """load_state_dict(strict=True): the state names every parameter (a tied one by any of its
    names) and nothing else, or a KeyError listing what is missing and what is unexpected."""
    unexpected = [k for k in state if k not in params]
    missing = [n for names in groups if not any(k in state for k in names) for n in names]
    if missing or unexpected:
        raise KeyError(
            f"load_state_dict: missing keys {missing}, unexpected keys {unexpected} "
            f"(pass strict=False to load only the names both have)"
        )


def _load_plan(groups: list[list[str]], arrays: dict[str, np.ndarray],
               params: dict[str, Parameter]) -> list[tuple[Parameter, np.ndarray]]:
    """(parameter, the array to copy into it) for each parameter the state gives, once per tie
    group, after checking that the tied names the state gives agree."""
    plan = []
    for names in groups:
        present = [k for k in names if k in arrays]
        if present:
            _check_tied_values_agree(present, arrays)
            plan.append((params[present[0]], arrays[present[0]]))
    return plan


def _check_name(owner: Module, name: Any, hides: bool = False) -> None:
    """A name a parameter or submodule can be registered under: a non-empty str without "."
    (state_dict() joins names with ".", so "a.b" would collide with b inside a), and with
    `hides`, not an attribute the module already has, other than one registered under it."""
    who = type(owner).__name__
    if not isinstance(name, str):
        raise TypeError(f"{who}: a name must be a str, got {type(name).__name__} {name!r}")
    if name == "":
        raise ModuleNameError(f"{who}: a name cannot be empty")
    if "." in name:
        raise ModuleNameError(f'{who}: the name {name!r} contains ".", which state_dict() uses to join '
                       f"the names of nested modules, so two parameters could get one name; use "
                       f"another name, such as {name.replace('.', '_')!r}")
    registered = name in owner._modules or name in owner._parameters
    if hides and not registered and hasattr(owner, name):
        kind = "a method" if callable(getattr(type(owner), name, None)) else "an attribute"
        raise ModuleNameError(f"{who}: the key {name!r} would hide {who}.{name} ({kind}), and the module "
                       f"would stop working as one; choose another key")


def _first_of_each(pairs: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The (name, object) pairs whose object has not come before: shared objects once."""
    seen: set[int] = set()
    for name, obj in pairs:
        if id(obj) not in seen:
            seen.add(id(obj))
            yield name, obj


def _check_loadable(name: str, value: np.ndarray, p: Parameter) -> None:
    if value.shape != p.shape:
        raise ValueError(
            f"load_state_dict: {name!r} has shape {value.shape} in the state but {p.shape} in "
            f"the model"
        )
    if not np.can_cast(value.dtype, p.dtype, casting="same_kind"):
        raise ValueError(f"load_state_dict: {name!r} has dtype {value.dtype} in the state, which "
                         f"cannot be stored in the model's {p.dtype}")


def _check_tied_values_agree(names: list[str], arrays: dict[str, np.ndarray]) -> None:
    """The model ties `names`: the state must give them one value (one array, or equal ones)."""
    first = arrays[names[0]]
    for other in names[1:]:
        if arrays[other] is not first and not np.array_equal(arrays[other], first):
            raise ValueError(
                f"load_state_dict: the model ties {names[0]!r} and {other!r} (one shared "
                f"Parameter), but the state gives them different values; was the checkpoint "
                f"saved from an untied model?"
            )


def _check_no_extra_ties(arrays: dict[str, np.ndarray], params: dict[str, Parameter]) -> None:
    """Names that share one array in the state must share one Parameter in the model."""
    owner: dict[int, str] = {}
    for name, value in arrays.items():
        first = owner.setdefault(id(value), name)
        if params[first] is not params[name]:
            raise ValueError(
                f"load_state_dict: the state ties {first!r} and {name!r} (one shared array), "
                f"but the model keeps them as separate Parameters; tie them in the model first "
                f"(e.g. `model.{name} = model.{first}`), or pass strict=False to load the same "
                f"values into both without tying them"
            )


# ---- containers ----------------------------------------------------------------------------------

class ModuleList(Module):
    """Modules in a list, registered as '0', '1', ... (so parameters are named 'h.0.ln_1.weight')."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: can only hold Modules, got {type(module).__name__} at "
                            f"index {len(self)}")
        setattr(self, str(len(self)), module)
        return self

    def __getitem__(self, index: int) -> Module:
        if not -len(self) <= index < len(self):
            raise IndexError(f"ModuleList: index {index} is out of range for {len(self)} modules")
        return self._modules[str(index % len(self))]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """Modules by name; `d["wte"]` and `d.wte` are the same module."""

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        for name, m in (modules or {}).items():
            self[name] = m

    def __setitem__(self, name: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {name!r} must be a Module, got {type(module).__name__}")
        self.add_module(name, module)

    def __getitem__(self, name: str) -> Module:
        if name not in self._modules:
            raise KeyError(f"ModuleDict: no module named {name!r} (names: {list(self._modules)})")
        return self._modules[name]

    def __contains__(self, name: str) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    if TYPE_CHECKING:
        # `d.wte` is an attribute set by add_module; which kind of module it is, only the
        # code that filled the dict knows (TinyGPT's transformer.wte is an Embedding)
        def __getattr__(self, name: str) -> Any: ...


class Sequential(ModuleList):
    """Modules applied in order: Sequential(a, b)(x) = b(a(x))."""

    def __init__(self, *modules: Module):
        super().__init__(modules)

    def forward(self, x: Any) -> Any:
        for m in self:
            x = m(x)
        return x
