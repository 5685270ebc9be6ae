"""Save and load parameters as safetensors, without losing ties.

The file is a plain safetensors file, so PyTorch (`safetensors.torch.load_file`) and any other
safetensors reader can load the weights. A tied parameter is stored once, under its first
name; the header's text metadata holds one entry, "minigrad", a JSON object with

    "names":  a list with one entry per stored tensor, in the state dict's order:
              [stored key, alias, alias, ...], so every name a tensor goes by is kept
    "sha256": {stored key: sha256 of dtype, shape and bytes}, so a flipped byte in the data
              (which the format itself cannot notice) is caught on load
    "names_sha256": sha256 of the "names" list, so a flipped byte in a name is caught too

Every dtype safetensors knows is kept, 0-d arrays included. Safetensors stores little-endian
bytes only, so a big-endian array (dtype ">f4") is saved as its little-endian twin and comes
back as that ("<f4", i.e. float32), with the same values and shape.

One entry, not two: safetensors writes metadata entries in no fixed order, so with a single
entry the same model always gives the same bytes.

`load` gives back a state dict in which tied names share one array object (an update through
one name is seen through the other); `module.load_state_dict(load(path))` copies it into a
model in place, keeping the model's own ties and refusing a checkpoint whose ties disagree.
A file written by another tool (no minigrad metadata) loads as untied tensors.
`load_into(module, path)` is both steps, with the errors naming the file.

safetensors is imported on first use, so `import minigrad` does not load it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from minigrad.engine import Tensor
from minigrad.nn.module import Module

METADATA_KEY = "minigrad"


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint: truncated, corrupted, or inconsistent metadata."""


# ---- saving ----------------------------------------------------------------------------------

def save(obj: Module | Mapping[str, Any], path: str | os.PathLike,
         metadata: Mapping[str, str] | None = None) -> None:
    """Write a module's parameters (or a state dict) to `path` in the safetensors format.

    obj: a Module, or {name: array or Tensor}; names that share one array (as a tied
         module's `state_dict()` gives them) are one tensor in the file plus recorded aliases.
    metadata: extra text {key: value} for the header (the key "minigrad" is ours).
    The write is atomic: a temporary file in the same directory, then `os.replace`, so a crash
    leaves either the old file or the new one, never half of one.
    """
    import safetensors.numpy

    state = obj.state_dict() if isinstance(obj, Module) else obj
    groups = tie_groups(state)
    tensors = {names[0]: _as_stored(names[0], array) for names, array in groups}
    header = _user_metadata(metadata)
    names = [names for names, _ in groups]
    header[METADATA_KEY] = json.dumps({
        "names": names,
        "names_sha256": _names_digest(names),
        "sha256": {key: _digest(a) for key, a in tensors.items()},
    })
    _write_atomically(os.fspath(path), safetensors.numpy.save(tensors, metadata=header))


def _as_stored(name: str, array: np.ndarray) -> np.ndarray:
    """The array as the file will hold it: C order, little-endian, its shape kept (0-d too).

    (np.ascontiguousarray would turn a 0-d array into shape (1,).) Checksums are taken of
    this form, so what load reads back is exactly what was summed.
    """
    if array.dtype.kind not in "biufc":
        raise TypeError(f"save: {name!r} has dtype {array.dtype}; a checkpoint holds bool, int, "
                        f"uint, float and complex tensors only")
    little_endian = array.dtype.newbyteorder("<")  # a no-op for native data on every usual machine
    return np.asarray(array, dtype=little_endian, order="C")


def tie_groups(state: Mapping[str, Any]) -> list[tuple[list[str], np.ndarray]]:
    """[(every name of one array, the array)] in the state's order; shared arrays form one group.

    Names share an array when they hold the same array object, or the same view of one
    memory (same address, shape, strides, dtype). Arrays that only partly overlap (a slice of
    another) are refused: a file stores whole tensors, so such sharing could not be kept.
    """
    groups: dict[Any, tuple[list[str], np.ndarray]] = {}
    for name, value in state.items():
        if not isinstance(name, str):
            raise TypeError(f"save: state dict keys must be str names, got {name!r}")
        # a Tensor's own array (not ndarray.data, a memoryview): array identity marks a tie
        array = value.data if isinstance(value, Tensor) else np.asarray(value)
        groups.setdefault(_memory_key(array), ([], array))[0].append(name)
    found = list(groups.values())
    for i, (names_a, a) in enumerate(found):
        for names_b, b in found[i + 1:]:
            if np.may_share_memory(a, b) and np.shares_memory(a, b):
                raise ValueError(
                    f"save: {names_a[0]!r} {a.shape} and {names_b[0]!r} {b.shape} share part of "
                    f"their memory without being the same array; a checkpoint stores whole "
                    f"tensors, so that sharing cannot be kept: save a copy of one of them"
                )
    return found


def _memory_key(array: np.ndarray) -> tuple:
    if array.size == 0:  # empty arrays may share an address without sharing anything
        return ("empty", id(array))
    address = array.__array_interface__["data"][0]
    return (address, array.shape, array.strides, array.dtype.str)


def _user_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    header = dict(metadata or {})
    for key, value in header.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"save: metadata must map str to str, got {key!r}: {value!r}")
        if key == METADATA_KEY:
            raise ValueError(f"save: metadata key {key!r} is reserved: minigrad writes its "
                             f"names and checksums there")
    return header


def _names_digest(names: list[list[str]]) -> str:
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()


def _digest(array: np.ndarray) -> str:
    h = hashlib.sha256(f"{array.dtype.str}{list(array.shape)}".encode())
    h.update(np.ascontiguousarray(array).data)
    return h.hexdigest()


def _write_atomically(path: str, blob: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: cannot write {path!r}: directory {directory!r} does not exist")
    fd, tmp = _create_temp_file(directory, os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable (POSIX; not on Windows)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _create_temp_file(directory: str, base: str) -> tuple[int, str]:
    """A new file beside the target, opened for writing: (fd, path).

    Created with mode 0o666, which the kernel itself narrows by the process umask, so the
    checkpoint gets the mode any new file would get (0o644 under the usual umask 022). Unlike
    tempfile.mkstemp (always 0o600, so a chmod would need the umask, and reading the umask
    means setting it, process-wide, under every other thread's feet) this never touches it.
    O_EXCL: the name is ours alone, never an existing file or link.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        # same directory as the target, so os.replace is a rename within one file system
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # 2**64 names: only ever a freak collision, so try another
            continue


# ---- loading ---------------------------------------------------------------------------------

def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a checkpoint: {every name: array}, tied names sharing one (writable) array object.

    Raises FileNotFoundError for a missing file and CheckpointError for a truncated or
    corrupted one, or one whose minigrad metadata does not match its tensors.
    """
    import safetensors

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load: no checkpoint file at {path!r}")
    try:
        with safetensors.safe_open(path, framework="np") as f:
            metadata = f.metadata() or {}
            # copies: writable, and the file is not held open (memory-mapped) after loading
            stored = {key: np.array(f.get_tensor(key)) for key in f.keys()}
    except OSError:
        raise  # permissions, a vanished file: the file system's own error says it best
    except Exception as err:  # whatever else the reader trips on, the file is bad
        raise CheckpointError(
            f"load: {path!r} is not a readable safetensors file (truncated or corrupted?): "
            f"{type(err).__name__}: {err}"
        ) from None
    info = _minigrad_metadata(path, metadata)
    groups = _read_names(path, info, stored)
    _verify_digests(path, info, stored)
    return {name: stored[names[0]] for names in groups for name in names}


def load_into(module: Module, path: str | os.PathLike, strict: bool = True) -> Module:
    """`module.load_state_dict(load(path), strict)`, every failure a CheckpointError naming
    the file: a bad file, and names, shapes, dtypes or ties the module does not have.
    On any error the module is unchanged. Returns the module.
    """
    state = load(path)
    try:
        module.load_state_dict(state, strict=strict)
    except (KeyError, ValueError) as err:
        reason = str(err.args[0] if err.args else err)  # a KeyError's str() adds quotes
        reason = reason.removeprefix("load_state_dict: ")
        raise CheckpointError(f"load_into: {os.fspath(path)!r} does not fit this "
                              f"{type(module).__name__}: {reason}") from err
    return module


def _minigrad_metadata(path: str, metadata: dict[str, str]) -> dict[str, Any] | None:
    """Our entry of the header, parsed; None for a file written by another tool."""
    if METADATA_KEY not in metadata:
        for key, text in metadata.items():  # ours, under a damaged key, would load untied
            if _looks_like_ours(text):
                raise CheckpointError(f"load: {path!r}: the metadata holds minigrad's names and "
                                      f"checksums under the key {key!r}, not {METADATA_KEY!r}: "
                                      f"the file is corrupted")
        return None
    try:
        info = json.loads(metadata[METADATA_KEY])
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"load: {path!r}: metadata {METADATA_KEY!r} is not valid JSON ({err})") from None
    if not isinstance(info, dict) or set(info) != _INFO_KEYS:
        raise CheckpointError(f"load: {path!r}: metadata {METADATA_KEY!r} must be a JSON object with "
                              f"exactly the keys {sorted(_INFO_KEYS)}, got "
                              f"{metadata[METADATA_KEY][:200]!r}")
    return info


_INFO_KEYS = {"names", "names_sha256", "sha256"}


def _looks_like_ours(text: str) -> bool:
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(info, dict) and "names_sha256" in info


def _read_names(path: str, info: dict[str, Any] | None, stored: dict[str, np.ndarray]) -> list[list[str]]:
    if info is None:  # written by another tool: every tensor under its own name
        return [[key] for key in stored]
    groups = info["names"]
    well_formed = isinstance(groups, list) and all(
        isinstance(g, list) and g and all(isinstance(n, str) for n in g) for g in groups)
    if not well_formed:
        raise CheckpointError(f"load: {path!r}: metadata 'names' must be a list of non-empty lists "
                              f"of names, got {json.dumps(groups)[:200]}")
    keys = [g[0] for g in groups]
    if sorted(keys) != sorted(stored):
        raise CheckpointError(
            f"load: {path!r}: the metadata lists stored tensors {sorted(keys)} but the file holds "
            f"{sorted(stored)}"
        )
    repeated = sorted(n for n, count in Counter(n for g in groups for n in g).items() if count > 1)
    if repeated:
        raise CheckpointError(f"load: {path!r}: the metadata gives the names {repeated} to more "
                              f"than one tensor")
    # last, so that a hand-edited file gets the specific messages above
    if info["names_sha256"] != _names_digest(groups):
        raise CheckpointError(f"load: {path!r}: the tensor names in the metadata do not match the "
                              f"checksum saved with them: the file is corrupted")
    return groups


def _verify_digests(path: str, info: dict[str, Any] | None, stored: dict[str, np.ndarray]) -> None:
    if info is None:
        return
    digests = info["sha256"]
    for key, array in stored.items():
        if not isinstance(digests, dict) or digests.get(key) != _digest(array):
            raise CheckpointError(
                f"load: {path!r}: tensor {key!r} {array.shape} does not match the checksum "
                f"saved with it: the file is corrupted"
            )
