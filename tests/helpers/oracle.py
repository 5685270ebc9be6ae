"""PyTorch as the second oracle, live where it is installed and recorded where it is not.

A comparison asks the `oracle` fixture for PyTorch's answer and checks minigrad's against it:

    def torch_gelu(x, approximate):              # PyTorch's side: numpy in, tensors out
        t = torch.tensor(x, requires_grad=True)
        TF.gelu(t, approximate=approximate).sum().backward()
        return t.grad

    def test_gelu_matches_torch(oracle):
        ...                                      # minigrad's side, as in any test
        np.testing.assert_allclose(x.grad, oracle(torch_gelu, a, "tanh"), rtol=1e-10)

`oracle(fn, *args, **kwargs)` returns what `fn(*args, **kwargs)` returns, with every tensor made
a numpy array. Where torch imports, fn runs, and its answer must equal the one recorded in
tests/oracle_recordings/<test module>.npz (a recording that no longer says what torch says
fails the test); where torch is missing, the recording answers and fn never runs. Either way
minigrad's side runs and is compared the same way, so a change in minigrad that alters a result
fails the recorded comparison exactly as it fails the live one.

A recording is keyed by fn's name and a digest of its arguments: everything the torch side
depends on must be an argument (arrays, numbers, strings, bytes, None, functions by name, and
tuples, lists and dicts of them), never a global or a closure the digest cannot see. New
inputs, or a changed torch side, need a new recording: `python scripts/record_oracle.py` where
torch is installed (the failure says so).

MINIGRAD_ORACLE chooses the mode: unset, live when torch imports and recorded otherwise;
"recorded" answers from the recordings even with torch installed; "record" (and "record-all",
which rewrites each module's file from scratch) is what scripts/record_oracle.py sets.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

RECORDINGS = Path(__file__).resolve().parents[1] / "oracle_recordings"
RECORD_COMMAND = "python scripts/record_oracle.py"
MODES = ("live", "recorded", "record", "record-all")
# How far the live answer may drift from the recorded one (relative to the array's largest entry)
# before the recording counts as stale: far below any comparison's tolerance, far above the last
# bits a different CPU or BLAS build changes.
DRIFT = {2: 1e-3, 4: 1e-5, 8: 1e-10}


class LazyModule:
    """A module imported the first time one of its names is used. Where it is not installed, a
    name is a stand-in that says so if it is ever called: in recorded mode the torch side never runs,
    so tables of cases may name torch's functions (`torch.maximum`) at import time."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        try:
            module = importlib.import_module(self._name)
        except ImportError:
            return Missing(f"{self._name}.{attr}")
        return getattr(module, attr)


class Missing:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Missing:
        return Missing(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self._name}: torch is not installed, so the torch side cannot run here")

    def __repr__(self) -> str:
        return f"<{self._name}: torch is not installed>"


torch = LazyModule("torch")
TF = LazyModule("torch.nn.functional")


def torch_installed() -> bool:
    try:
        importlib.import_module("torch")
    except ImportError:
        return False
    return True


def mode() -> str:
    chosen = os.environ.get("MINIGRAD_ORACLE", "")
    if chosen and chosen not in MODES:
        raise ValueError(f"MINIGRAD_ORACLE must be one of {', '.join(MODES)} or unset, got {chosen!r}")
    if not chosen:
        return "live" if torch_installed() else "recorded"
    if chosen != "recorded" and not torch_installed():
        raise RuntimeError(f"MINIGRAD_ORACLE={chosen} runs PyTorch, which is not installed")
    return chosen


# ---- the arguments' digest ------------------------------------------------------------------------

def _feed(h, value: Any, where: str) -> None:
    """Add a canonical form of `value` to the hash `h` (`where` names it in an error)."""
    if isinstance(value, (np.ndarray, np.generic)):  # first: np.float64 is a float too
        array = np.asarray(value, order="C")
        h.update(f"{'array' if isinstance(value, np.ndarray) else 'scalar'}:{array.dtype.str}:"
                 f"{array.shape};".encode())
        h.update(array.tobytes())
    elif value is None or isinstance(value, (bool, int, float, str)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, bytes):
        h.update(f"bytes:{len(value)};".encode() + value)
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}:{len(value)}(".encode())
        for i, item in enumerate(value):
            _feed(h, item, f"{where}[{i}]")
        h.update(b")")
    elif isinstance(value, dict):
        h.update(f"dict:{len(value)}(".encode())
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"oracle: {where} has a key of type {type(key).__name__}; use str keys")
            _feed(h, key, where)
            _feed(h, item, f"{where}[{key!r}]")
        h.update(b")")
    elif isinstance(value, type) and issubclass(value, np.generic):
        h.update(f"dtype:{np.dtype(value).str};".encode())
    elif callable(value):
        # by name, not module: pytest's import modes name a test module differently
        h.update(f"callable:{value.__qualname__};".encode())
    else:
        raise TypeError(f"oracle: {where} is a {type(value).__name__}; pass arrays, numbers, strings, "
                        "bytes, functions, or tuples, lists and dicts of them")


def digest(fn: Callable, args: tuple, kwargs: dict) -> str:
    h = hashlib.sha256()
    _feed(h, fn, "fn")
    _feed(h, list(args), "args")
    _feed(h, dict(sorted(kwargs.items())), "kwargs")
    return h.hexdigest()[:24]


# ---- answers: a JSON tree whose leaves name arrays --------------------------------------------------

def encode(value: Any, arrays: list[np.ndarray]) -> Any:
    """A JSON-ready tree for `value`, its arrays appended to `arrays` (tensors become arrays)."""
    if value is None or (isinstance(value, (bool, int, float, str)) and not isinstance(value, np.generic)):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        if value.is_sparse:
            value = value.to_dense()
        value = value.detach().cpu().numpy()  # bfloat16 cannot: convert it in the torch side
    if isinstance(value, (np.ndarray, np.generic, bytes)):
        kind = "bytes" if isinstance(value, bytes) else "array" if isinstance(value, np.ndarray) else "scalar"
        arrays.append(np.frombuffer(value, np.uint8) if kind == "bytes" else np.array(value))
        return {"__" + kind + "__": len(arrays) - 1}
    if isinstance(value, tuple):  # torch.Size too
        return {"__tuple__": [encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [encode(v, arrays) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[str(k), encode(v, arrays)] for k, v in value.items()]}
    raise TypeError(f"oracle: cannot record a {type(value).__name__}; return tensors, arrays, numbers, "
                    "strings, bytes, or tuples, lists and dicts of them")


def decode(tree: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(tree, list):
        return [decode(v, arrays) for v in tree]
    if not isinstance(tree, dict):
        return tree
    (kind, body), = tree.items()
    if kind == "__array__":
        return arrays[body].copy()
    if kind == "__scalar__":
        return arrays[body][()]
    if kind == "__bytes__":
        return arrays[body].tobytes()
    if kind == "__tuple__":
        return tuple(decode(v, arrays) for v in body)
    return {k: decode(v, arrays) for k, v in body}


def differences(live: Any, recorded: Any, where: str = "result") -> list[str]:
    """Where `live` and `recorded` differ beyond DRIFT (an empty list when they agree)."""
    if type(live) is not type(recorded):
        return [f"{where}: {type(live).__name__} now, {type(recorded).__name__} recorded"]
    if isinstance(live, (tuple, list)):
        if len(live) != len(recorded):
            return [f"{where}: {len(live)} items now, {len(recorded)} recorded"]
        return [d for i, (a, b) in enumerate(zip(live, recorded)) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(live, dict):  # in any order: some answers (a file's names) come in no fixed order
        if sorted(live) != sorted(recorded):
            return [f"{where}: keys {sorted(live)} now, {sorted(recorded)} recorded"]
        return [d for k in live for d in differences(live[k], recorded[k], f"{where}[{k!r}]")]
    if isinstance(live, (np.ndarray, np.generic)):
        if live.dtype != recorded.dtype or live.shape != recorded.shape:
            return [f"{where}: {live.dtype} {live.shape} now, {recorded.dtype} {recorded.shape} recorded"]
        if live.dtype.kind in "fc":
            finite = np.abs(live[np.isfinite(live)])
            tolerance = DRIFT.get(live.dtype.itemsize, 1e-10) * (finite.max() if finite.size else 1.0)
            same = np.isclose(live, recorded, rtol=0, atol=tolerance, equal_nan=True)
        else:
            same = live == recorded
        if not np.all(same):
            return [f"{where}: {int(np.size(same) - np.sum(same))} of {np.size(same)} entries differ"]
        return []
    same = live == recorded or (isinstance(live, float) and live != live and recorded != recorded)
    return [] if same else [f"{where}: {live!r} now, {recorded!r} recorded"]


# ---- the recording files ----------------------------------------------------------------------------

class Recording:
    """The answers recorded for one test module: {digest: (fn name, tree, arrays)}, read from its
    file unless `read` is False. In the file, the arrays of one dtype are laid end to end in one
    member (many small arrays as many members would cost more in headers than in numbers), and a
    JSON index says where each one starts and its shape."""

    def __init__(self, module: str, read: bool = True):
        self.module, self.path = module, RECORDINGS / f"{module}.npz"
        self.entries: dict[str, tuple[str, Any, list[np.ndarray]]] = {}
        if read and self.path.exists():
            with np.load(self.path, allow_pickle=False) as stored:
                index = json.loads(stored["index"].item())
                blobs = {name: stored[name] for name in stored.files if name != "index"}
            for key, (name, tree, places) in index.items():
                arrays = [blobs[dtype][start:start + int(np.prod(shape))].reshape(shape)
                          for dtype, start, shape in places]
                self.entries[key] = (name, tree, arrays)

    def write(self) -> None:
        """The file, byte for byte the same for the same answers (fixed dates, sorted names)."""
        index, blobs = {}, {}
        for key in sorted(self.entries):
            name, tree, arrays = self.entries[key]
            places = []
            for array in arrays:
                blob = blobs.setdefault(array.dtype.str, [])
                places.append([array.dtype.str, sum(b.size for b in blob), list(array.shape)])
                blob.append(array.ravel())
            index[key] = [name, tree, places]
        members = {dtype: np.concatenate(parts) for dtype, parts in blobs.items()}
        members["index"] = np.array(json.dumps(index, sort_keys=True))
        RECORDINGS.mkdir(exist_ok=True)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in sorted(members):
                out = io.BytesIO()
                np.lib.format.write_array(out, np.asarray(members[name], order="C"), allow_pickle=False)
                info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, out.getvalue(), compresslevel=9)
        self.path.write_bytes(buffer.getvalue())


class Oracle:
    """PyTorch's answers for one test module (the `oracle` fixture)."""

    # per session: the recordings read, the answers recorded, and live answers already computed
    loaded: dict[str, Recording] = {}
    recorded: dict[str, Recording] = {}
    computed: dict[tuple[str, str], tuple[Any, list[np.ndarray]]] = {}

    def __init__(self, module: str):
        self.module = module
        self.mode = mode()

    def recording(self) -> Recording:
        if self.module not in Oracle.loaded:
            Oracle.loaded[self.module] = Recording(self.module)
        return Oracle.loaded[self.module]

    def __call__(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        key, name = digest(fn, args, kwargs), fn.__qualname__
        where = f"tests/oracle_recordings/{self.module}.npz"
        stored = self.recording().entries.get(key)
        if self.mode == "recorded":
            if stored is None:
                pytest.fail(f"no recorded PyTorch answer for {name} with these arguments in {where}: the "
                            f"inputs or the comparison changed since it was recorded. Record it where "
                            f"torch is installed: {RECORD_COMMAND}", pytrace=False)
            return decode(stored[1], stored[2])
        tree, arrays = self.live(key, fn, args, kwargs)
        live = decode(tree, arrays)
        if self.mode.startswith("record"):
            mine = Oracle.recorded.setdefault(self.module, Recording(self.module, read=False))
            mine.entries[key] = (name, tree, arrays)
            return live
        if stored is None:
            pytest.fail(f"{name} with these arguments has no recorded answer in {where}, so this comparison "
                        f"would fail without torch. Record it: {RECORD_COMMAND}", pytrace=False)
        stale = differences(live, decode(stored[1], stored[2]))
        if stale:
            pytest.fail(f"the recording of {name} in {where} no longer says what torch says ("
                        f"{'; '.join(stale[:3])}). Record it again: {RECORD_COMMAND}", pytrace=False)
        return live

    def live(self, key: str, fn: Callable, args: tuple, kwargs: dict) -> tuple[Any, list[np.ndarray]]:
        """Run fn (once per session for the same arguments); a second answer that differs from the
        first means fn depends on something its arguments do not say."""
        arrays: list[np.ndarray] = []
        tree = encode(fn(*args, **kwargs), arrays)
        first = Oracle.computed.setdefault((self.module, key), (tree, arrays))
        if differences(decode(tree, arrays), decode(*first)):
            raise AssertionError(f"oracle: {fn.__qualname__} gave two answers for the same arguments: it "
                                 "depends on something it is not given (a global, a closure, an unseeded "
                                 "random draw); pass that as an argument")
        return tree, arrays


def write_recordings() -> list[Path]:
    """At the end of a recording session: merge the answers into each module's file ("record"), or
    replace the file with them ("record-all"). Returns the files written."""
    if not Oracle.recorded:
        return []
    replace = os.environ.get("MINIGRAD_ORACLE") == "record-all"
    written = []
    for module, mine in sorted(Oracle.recorded.items()):
        target = Recording(module)
        target.entries = mine.entries if replace else {**target.entries, **mine.entries}
        target.write()
        written.append(target.path)
    return written
