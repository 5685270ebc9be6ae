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

What `load` returns is a `Checkpoint`: a dict (so it is used as before) whose `.metadata` is the
text `save(metadata=...)` wrote.

A whole training state goes in one file too, as nested plain data (see checkpoint_tree.py):

    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict(), "step": step}, "run.safetensors")
    ckpt = mg.load("run.safetensors")
    model.load_state_dict(ckpt["model"]); opt.load_state_dict(ckpt["optimizer"])

Its arrays are tensors of the file (named by their path, "optimizer/state/0/exp_avg"), and the
rest of the tree is JSON in minigrad's metadata entry ("tree", with its checksum "tree_sha256").
A flat state dict is written exactly as before, without those two keys.

Where it is written: `save` and `load` take a path or a binary file object (`io.BytesIO`, or
`open(path, "wb")` / `"rb"`). A path is written atomically (below) and only as a regular file:
a folder, FIFO, device or socket at that path is refused (saving to /dev/null would otherwise
replace it), and a FIFO is never opened, so nothing blocks. A symbolic link is written
*through*: the file it points to gets the checkpoint and the link stays, as `open(path, "wb")`
would do. A file object is written as it is, in one `write` (no atomic rename: it is yours).

safetensors is imported on first use, so `import minigrad` does not load it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import struct
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from minigrad.engine import Tensor
from minigrad.nn.module import Module
from minigrad.tools.checkpoint_tree import flatten, is_flat_state, unflatten

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing's own from Python 3.13

METADATA_KEY = "minigrad"

Target = str | os.PathLike | IO[bytes]

# safetensors dtype -> what numpy reads it as (safetensors stores little-endian bytes only)
NUMPY_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?", "C64": "<c8",
}


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint: truncated, corrupted, or inconsistent metadata."""


class NotARegularFileError(OSError):
    """The path names a FIFO, a device, a socket: a checkpoint is read from and written to a
    regular file only."""


class Checkpoint(dict):
    """What `load` returns: the saved dict (a state dict, or the nested checkpoint) with
    `.metadata`, the text {key: value} that `save(metadata=...)` wrote, sorted by key
    (minigrad's own entry left out; for a file from another tool, its header metadata)."""

    def __init__(self, content: Mapping[Any, Any], metadata: Mapping[str, str]):
        super().__init__(content)
        self.metadata = dict(metadata)


# ---- saving ----------------------------------------------------------------------------------

def save(obj: Module | Mapping[Any, Any], path: Target, metadata: Mapping[str, str] | None = None) -> None:
    """Write a module's parameters, a state dict, or a nested checkpoint in the safetensors format.

    obj: a Module; {name: array or Tensor} (names that share one array, as a tied module's
         `state_dict()` gives them, are one tensor in the file plus recorded aliases); or a dict
         of nested plain data: state dicts, optimizer and scheduler `state_dict()`s, numbers,
         strings, None, lists, tuples, dicts and arrays
    path: a path, or a binary file object open for writing (the name is kept from when only
         paths were taken, so `save(model, path=...)` still works)
    metadata: extra text {key: value} for the header (the key "minigrad" is ours); `load`
         gives it back as `.metadata`
    A path is written atomically: a temporary file in the same directory, then `os.replace`, so
    a crash leaves either the old file or the new one, never half of one.
    """
    import safetensors.numpy

    state = obj.state_dict() if isinstance(obj, Module) else obj
    if not isinstance(state, Mapping):
        raise TypeError(f"save: expected a Module, a state dict or a dict of checkpoint parts, got "
                        f"{type(obj).__name__}")
    tree = None
    if not is_flat_state(state):
        tree, state = flatten(state)
    groups = tie_groups(state)
    tensors = {names[0]: _as_stored(names[0], array) for names, array in groups}
    header = _user_metadata(metadata)
    names = [names for names, _ in groups]
    info: dict[str, Any] = {
        "names": names,
        "names_sha256": _names_digest(names),
        "sha256": {key: _digest(a) for key, a in tensors.items()},
    }
    if tree is not None:
        info.update(tree=tree, tree_sha256=_names_digest(tree))
    header[METADATA_KEY] = json.dumps(info)
    blob = safetensors.numpy.save(tensors, metadata=header)
    if _is_file_object(path, "write"):
        _write_to_file_object(path, blob)
    else:
        _write_atomically(_writable_target(os.fspath(path)), blob)


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


def _names_digest(names: Any) -> str:
    """The sha256 of a JSON-able part of our metadata (the names, or the tree's skeleton)."""
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()


def _digest(array: np.ndarray) -> str:
    h = hashlib.sha256(f"{array.dtype.str}{list(array.shape)}".encode())
    h.update(np.ascontiguousarray(array).data)
    return h.hexdigest()


def _is_file_object(f: Target, method: str) -> TypeIs[IO[bytes]]:
    return not isinstance(f, str | bytes | os.PathLike) and callable(getattr(f, method, None))


def _write_to_file_object(f: IO[bytes], blob: bytes) -> None:
    try:
        f.write(blob)
    except TypeError as err:  # a text-mode file wants str
        raise TypeError(f"save: the file object {_file_object_name(f)} takes text, not bytes; open "
                        f"it in binary mode ('wb')") from err


def _file_object_name(f: Any) -> str:
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"


def _writable_target(path: str) -> str:
    """The regular file a checkpoint for `path` goes to: `path` itself, or the file a symbolic
    link points to (written through, the link kept). Refuses a folder that cannot be reached
    and a target that exists but is not a regular file (never opening it: a FIFO would block)."""
    target = os.path.realpath(path)
    _check_folder(os.path.dirname(target), path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target  # a new file (or the missing file a dangling link names)
    if not stat.S_ISREG(mode):
        link = f" (a link to {target!r})" if target != os.path.abspath(path) else ""
        error = IsADirectoryError if stat.S_ISDIR(mode) else NotARegularFileError
        raise error(f"save: cannot write {path!r}{link}: it is {_kind(mode)}, not a regular file; a "
                    f"checkpoint is written only to a regular file or a new path")
    return target


def _kind(mode: int) -> str:
    """'a FIFO (named pipe)', 'a character device', ...: what a non-regular file is."""
    kinds = [(stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check_folder(directory: str, path: str) -> None:
    """The folder a checkpoint goes into exists and can be entered; else an error saying which."""
    try:
        mode = os.stat(directory).st_mode
    except PermissionError:
        raise PermissionError(f"save: cannot write {path!r}: permission denied on the way to the "
                              f"folder {directory!r} (it, or a folder above it, cannot be entered)"
                              ) from None
    except NotADirectoryError:
        blocker = _first_file_on_the_way(directory)
        raise NotADirectoryError(f"save: cannot write {path!r}: {blocker!r} on its path is a file, "
                                 f"not a folder") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"save: cannot write {path!r}: directory {directory!r} does not "
                                f"exist") from None
    if not stat.S_ISDIR(mode):
        raise NotADirectoryError(f"save: cannot write {path!r}: {directory!r} is a file, not a folder")


def _first_file_on_the_way(directory: str) -> str:
    """The deepest existing ancestor of `directory`: the file that stands where a folder should."""
    while not os.path.lexists(directory) and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
    return directory


def _write_atomically(path: str, blob: bytes) -> None:
    directory = os.path.dirname(path)
    try:
        fd, tmp = _create_temp_file(directory, os.path.basename(path))
    except PermissionError:
        raise PermissionError(f"save: cannot write {path!r}: the folder {directory!r} does not let "
                              f"you create files in it (permission denied)") from None
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

def load(path: Target) -> Checkpoint:
    """Read a checkpoint: {every name: array}, tied names sharing one (writable) array object;
    for a nested checkpoint, the dict that was saved (arrays as numpy arrays).

    path: a path, or a binary file object open for reading.
    Returns a Checkpoint: that dict, with `.metadata` = the text `save(metadata=...)` wrote.
    Raises FileNotFoundError for a missing file, an OSError naming what else stands in the way
    (a folder, a FIFO, permission), and CheckpointError for a truncated or corrupted file, one
    whose minigrad metadata does not match its tensors, or a dtype numpy cannot hold.
    """
    if _is_file_object(path, "read"):
        where, blob = f"the file object {_file_object_name(path)}", path.read()
        if not isinstance(blob, bytes | bytearray):
            raise TypeError(f"load: {where} gives text, not bytes; open it in binary mode ('rb')")
    else:
        where, blob = repr(os.fspath(path)), _read_regular_file(os.fspath(path))
    metadata, stored = _deserialize(where, bytes(blob))
    info = _minigrad_metadata(where, metadata)
    groups = _read_names(where, info, stored)
    _verify_digests(where, info, stored)
    state = {name: stored[names[0]] for names in groups for name in names}
    if info is not None and "tree" in info:
        state = _rebuild_tree(where, info, state)
    # sorted: safetensors keeps header entries in no fixed order
    return Checkpoint(state, {k: metadata[k] for k in sorted(metadata) if k != METADATA_KEY})


def _read_regular_file(path: str) -> bytes:
    """The bytes of the file at `path`, with an error naming what stands in the way."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"load: no checkpoint file at {path!r}") from None
    except NotADirectoryError:
        raise NotADirectoryError(f"load: no checkpoint file at {path!r}: "
                                 f"{_first_file_on_the_way(path)!r} on its path is a file, not a "
                                 f"folder") from None
    except PermissionError:
        raise PermissionError(f"load: cannot read {path!r}: permission denied on the way to it (a "
                              f"folder above it cannot be entered)") from None
    if not stat.S_ISREG(mode):  # never open it: a FIFO would block
        error = IsADirectoryError if stat.S_ISDIR(mode) else NotARegularFileError
        raise error(f"load: {path!r} is {_kind(mode)}, not a checkpoint file")
    try:
        with open(path, "rb") as file:
            return file.read()
    except PermissionError:
        raise PermissionError(f"load: cannot read {path!r}: permission denied") from None


def _deserialize(where: str, blob: bytes) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """(header metadata, {key: writable array}); bfloat16 is read as float32 (exact: every
    bfloat16 is a float32 with its low 16 bits zero), with a warning that says so."""
    import safetensors

    try:
        raw = safetensors.deserialize(blob)
        (length,) = struct.unpack("<Q", blob[:8])  # valid now: deserialize has read the header
        metadata = json.loads(blob[8:8 + length]).get("__metadata__") or {}
    except Exception as err:  # whatever the reader trips on, the file is bad
        raise CheckpointError(
            f"load: {where} is not a readable safetensors file (truncated or corrupted?): "
            f"{type(err).__name__}: {err}"
        ) from None
    stored = {}
    for key, tensor in raw:
        dtype, shape, data = tensor["dtype"], tuple(tensor["shape"]), tensor["data"]
        if dtype == "BF16":
            warnings.warn(f"load: {key!r} in {where} is bfloat16, which numpy has no dtype for; it "
                          f"is read as float32 (exactly the same values)", stacklevel=3)
            high = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
            stored[key] = high.view(np.float32).reshape(shape)
        elif dtype in NUMPY_DTYPES:
            stored[key] = np.frombuffer(data, dtype=NUMPY_DTYPES[dtype]).reshape(shape)
        else:
            raise CheckpointError(
                f"load: {key!r} in {where} has dtype {dtype}, which numpy (and so minigrad) cannot "
                f"hold; minigrad reads {', '.join(NUMPY_DTYPES)} and BF16 (as float32). Convert it "
                f"where it was made, e.g. in PyTorch with `tensor.float()`, and save again"
            )
    return metadata, stored


def _rebuild_tree(where: str, info: dict[str, Any], state: dict[str, np.ndarray]) -> Any:
    if info.get("tree_sha256") != _names_digest(info["tree"]):
        raise CheckpointError(f"load: {where}: the checkpoint's layout does not match the checksum "
                              f"saved with it: the file is corrupted")
    try:
        tree = unflatten(info["tree"], state, f"load: {where}")
    except ValueError as err:
        raise CheckpointError(str(err)) from None
    if not isinstance(tree, dict):
        raise CheckpointError(f"load: {where}: the checkpoint's layout is a {type(tree).__name__}, "
                              f"not a dict")
    return tree


def load_into(module: Module, path: Target, strict: bool = True) -> Module:
    """`module.load_state_dict(load(path), strict)`, every failure a CheckpointError naming
    the file: a bad file, and names, shapes, dtypes or ties the module does not have.
    On any error the module is unchanged. Returns the module.
    """
    state = load(path)
    where = _file_object_name(path) if _is_file_object(path, "read") else repr(os.fspath(path))
    if not is_flat_state(state):
        raise CheckpointError(f"load_into: {where} holds a checkpoint of several parts "
                              f"({list(state)}), not one state dict: load it with minigrad.load and "
                              f"pass its model's part to load_state_dict")
    try:
        module.load_state_dict(state, strict=strict)
    except (KeyError, ValueError) as err:
        reason = str(err.args[0] if err.args else err)  # a KeyError's str() adds quotes
        reason = reason.removeprefix("load_state_dict: ")
        raise CheckpointError(f"load_into: {where} does not fit this "
                              f"{type(module).__name__}: {reason}") from err
    return module


def _minigrad_metadata(where: str, metadata: dict[str, str]) -> dict[str, Any] | None:
    """Our entry of the header, parsed; None for a file written by another tool."""
    if METADATA_KEY not in metadata:
        for key, text in metadata.items():  # ours, under a damaged key, would load untied
            if _looks_like_ours(text):
                raise CheckpointError(f"load: {where}: the metadata holds minigrad's names and "
                                      f"checksums under the key {key!r}, not {METADATA_KEY!r}: "
                                      f"the file is corrupted")
        return None
    try:
        info = json.loads(metadata[METADATA_KEY])
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"load: {where}: metadata {METADATA_KEY!r} is not valid JSON ({err})") from None
    if not isinstance(info, dict) or set(info) not in (_INFO_KEYS, _INFO_KEYS | _TREE_KEYS):
        raise CheckpointError(f"load: {where}: metadata {METADATA_KEY!r} must be a JSON object with "
                              f"exactly the keys {sorted(_INFO_KEYS)} (and for a nested checkpoint "
                              f"{sorted(_TREE_KEYS)}), got "
                              f"{metadata[METADATA_KEY][:200]!r}")
    return info


_INFO_KEYS = {"names", "names_sha256", "sha256"}
_TREE_KEYS = {"tree", "tree_sha256"}  # a nested checkpoint's layout, and its checksum


def _looks_like_ours(text: str) -> bool:
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(info, dict) and "names_sha256" in info


def _read_names(where: str, info: dict[str, Any] | None, stored: dict[str, np.ndarray]) -> list[list[str]]:
    if info is None:  # written by another tool: every tensor under its own name
        return [[key] for key in stored]
    groups = info["names"]
    if not _is_list_of_name_lists(groups):
        raise CheckpointError(f"load: {where}: metadata 'names' must be a list of non-empty lists "
                              f"of names, got {json.dumps(groups)[:200]}")
    keys = [g[0] for g in groups]
    if sorted(keys) != sorted(stored):
        raise CheckpointError(
            f"load: {where}: the metadata lists stored tensors {sorted(keys)} but the file holds "
            f"{sorted(stored)}"
        )
    repeated = sorted(n for n, count in Counter(n for g in groups for n in g).items() if count > 1)
    if repeated:
        raise CheckpointError(f"load: {where}: the metadata gives the names {repeated} to more "
                              f"than one tensor")
    # last, so that a hand-edited file gets the specific messages above
    if info["names_sha256"] != _names_digest(groups):
        raise CheckpointError(f"load: {where}: the tensor names in the metadata do not match the "
                              f"checksum saved with them: the file is corrupted")
    return groups


def _is_list_of_name_lists(groups: Any) -> bool:
    """Whether the metadata's 'names' is what save writes: a list of non-empty lists of str."""
    return isinstance(groups, list) and all(
        isinstance(g, list) and g and all(isinstance(n, str) for n in g) for g in groups)


def _verify_digests(where: str, info: dict[str, Any] | None, stored: dict[str, np.ndarray]) -> None:
    if info is None:
        return
    digests = info["sha256"]
    for key, array in stored.items():
        if not isinstance(digests, dict) or digests.get(key) != _digest(array):
            raise CheckpointError(
                f"load: {where}: tensor {key!r} {array.shape} does not match the checksum "
                f"saved with it: the file is corrupted"
            )
