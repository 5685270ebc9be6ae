"""Save and load parameters as safetensors, without losing ties.

The file is a plain safetensors file, so PyTorch (`safetensors.torch.load_file`) and any other
safetensors reader can load the weights. A tied parameter is stored once, under its first
name; the header's text metadata holds one entry, "minigrad", a JSON object with

    "names":  a list with one entry per stored tensor, in the state dict's order:
              [stored key, alias, alias, ...], so every name a tensor goes by is kept
    "sha256": {stored key: sha256 of dtype, shape and bytes}, so a flipped byte in the data
              (which the format itself cannot notice) is caught on load

One entry, not two: safetensors writes metadata entries in no fixed order, so with a single
entry the same model always gives the same bytes.

`load` gives back a state dict in which tied names share one array object (an update through
one name is seen through the other); `module.load_state_dict(load(path))` copies it into a
model in place, keeping the model's own ties and refusing a checkpoint whose ties disagree.
A file written by another tool (no minigrad metadata) loads as untied tensors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import safetensors
import safetensors.numpy

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
    state = obj.state_dict() if isinstance(obj, Module) else obj
    groups = tie_groups(state)
    tensors = {names[0]: np.ascontiguousarray(array) for names, array in groups}
    header = _user_metadata(metadata)
    header[METADATA_KEY] = json.dumps({
        "names": [names for names, _ in groups],
        "sha256": {key: _digest(a) for key, a in tensors.items()},
    })
    _write_atomically(os.fspath(path), safetensors.numpy.save(tensors, metadata=header))


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


def _digest(array: np.ndarray) -> str:
    h = hashlib.sha256(f"{array.dtype.str}{list(array.shape)}".encode())
    h.update(np.ascontiguousarray(array).data)
    return h.hexdigest()


def _write_atomically(path: str, blob: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: cannot write {path!r}: directory {directory!r} does not exist")
    # same directory as the target, so os.replace is a rename within one file system
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.chmod(tmp, _default_file_mode())  # mkstemp makes 0600; a saved file should not be
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


def _default_file_mode() -> int:
    umask = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(umask)
    return 0o666 & ~umask


# ---- loading ---------------------------------------------------------------------------------

def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a checkpoint: {every name: array}, tied names sharing one (writable) array object.

    Raises FileNotFoundError for a missing file and CheckpointError for a truncated or
    corrupted one, or one whose minigrad metadata does not match its tensors.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load: no checkpoint file at {path!r}")
    try:
        with safetensors.safe_open(path, framework="np") as f:
            metadata = f.metadata() or {}
            # copies: writable, and the file is not held open (memory-mapped) after loading
            stored = {key: np.array(f.get_tensor(key)) for key in f.keys()}
    except safetensors.SafetensorError as err:
        raise CheckpointError(
            f"load: {path!r} is not a readable safetensors file (truncated or corrupted?): {err}"
        ) from None
    info = _minigrad_metadata(path, metadata)
    groups = _read_names(path, info, stored)
    _verify_digests(path, info, stored)
    return {name: stored[names[0]] for names in groups for name in names}


def _minigrad_metadata(path: str, metadata: dict[str, str]) -> dict[str, Any] | None:
    """Our entry of the header, parsed; None for a file written by another tool."""
    if METADATA_KEY not in metadata:
        return None
    try:
        info = json.loads(metadata[METADATA_KEY])
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"load: {path!r}: metadata {METADATA_KEY!r} is not valid JSON ({err})") from None
    if not isinstance(info, dict) or not {"names", "sha256"} <= set(info):
        raise CheckpointError(f"load: {path!r}: metadata {METADATA_KEY!r} must be a JSON object with "
                              f"'names' and 'sha256', got {metadata[METADATA_KEY][:200]!r}")
    return info


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
