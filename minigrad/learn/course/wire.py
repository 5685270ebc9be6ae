"""What crosses between a check and the learner's process: data, never objects.

The learner's code runs in a process of its own (minigrad.learn.course.learner); the check runs
in minigrad's and decides the verdict there. Between them go messages: one JSON document each,
framed by its length in 8 bytes. Inside a message a value is one of

    None, bool, int, float, str, list         as JSON has them
    {"tuple": [...]}                          a tuple (JSON has lists only)
    {"dict": [[key, value], ...]}             a dict, whose keys may be ints or tuples too
    {"array": [dtype, shape, base64 bytes]}   a numpy array of numbers or bools
    {"scalar": [dtype, base64 bytes]}         a numpy number (np.float32(1.5) stays float32)
    {"Tensor": [array, requires_grad]}        a minigrad Tensor's values (its graph stays behind)
    {"RowSparse": [indices, values, shape, coalesced]}
    {"object": [module, type name, repr]}     anything else, named but never rebuilt: an Opaque

Nothing is unpickled and no code is sent back: a message can only ever be numbers, text and the
names of things. A message that is not of this form is a WireError.
"""

from __future__ import annotations

import base64
import json
import os
import select
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from minigrad.engine import RowSparse, Tensor

MAX_MESSAGE = 256 * 1024 * 1024  # bytes: a check's data is small; a flood is not data
MAX_DEPTH = 40  # nesting of lists, tuples and dicts
REPR_LENGTH = 200  # characters of an Opaque's repr kept
NUMERIC_KINDS = "biufc"  # bool, signed and unsigned int, float, complex
HEADER = 8  # bytes of length before each message


class WireError(ValueError):
    """A message that is not the data a check and the learner's process exchange."""


@dataclass(frozen=True)
class Opaque:
    """Something the learner's code returned that is not data (a module, a Context, an object of
    its own class): only its type's name and its repr come back, for the diagnosis."""

    module: str
    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


# ---- values -> JSON -----------------------------------------------------------------------------

def encode(value: Any, depth: int = 0) -> Any:
    """`value` as JSON-ready data (see the module docstring); what is not data becomes an Opaque."""
    if depth > MAX_DEPTH:
        return _opaque(value, "(nested too deeply to send)")
    for kinds, write in _WRITERS:
        if isinstance(value, kinds):
            written = write(value, depth)
            if written is not _NOT_DATA:
                return written
    return _opaque(value)


_NOT_DATA = object()


def _scalar(value: np.generic, depth: int) -> Any:
    data = np.asarray(value)  # np.float64 is a float too: its dtype is kept
    return {"scalar": [data.dtype.str, _bytes(data)]} if data.dtype.kind in NUMERIC_KINDS else _NOT_DATA


def _ndarray(value: np.ndarray, depth: int) -> Any:
    if value.dtype.kind not in NUMERIC_KINDS or value.dtype.fields is not None:
        return _NOT_DATA
    return {"array": _array(value)}


def _sequence(value: Any, depth: int) -> Any:
    if type(value) not in (list, tuple):  # a subclass may carry more than its items
        return _NOT_DATA
    items = [encode(item, depth + 1) for item in value]
    return items if type(value) is list else {"tuple": items}


def _mapping(value: dict, depth: int) -> Any:
    if type(value) is not dict:
        return _NOT_DATA
    return {"dict": [[encode(key, depth + 1), encode(item, depth + 1)] for key, item in value.items()]}


# (types, writer) in order: a numpy number before int and float (np.float64 is a float), a bool
# before int. An int or float subclass (Tensor.size) sends its plain value, whatever it overrides.
_WRITERS: list[tuple[Any, Any]] = [
    ((bool, str, type(None)), lambda value, depth: value),
    (np.generic, _scalar),
    (int, lambda value, depth: int.__int__(value)),
    (float, lambda value, depth: float.__float__(value)),
    (np.ndarray, _ndarray),
    (Tensor, lambda value, depth: {"Tensor": [encode(value.data, depth + 1), bool(value.requires_grad)]}),
    (RowSparse, lambda value, depth: {"RowSparse": [encode(value.indices, depth + 1),
                                                    encode(value.values, depth + 1),
                                                    list(value.shape), bool(value.coalesced)]}),
    ((list, tuple), _sequence),
    (dict, _mapping),
]


def _array(value: np.ndarray) -> list:
    data = np.array(value, dtype=value.dtype.newbyteorder("="), order="C")  # keeps a 0-d array 0-d
    return [data.dtype.str, list(data.shape), _bytes(data)]


def _bytes(data: np.ndarray) -> str:
    return base64.b64encode(data.tobytes(order="C")).decode("ascii")


def _opaque(value: Any, note: str = "") -> dict:
    kind = type(value)
    try:
        text = note or repr(value)
    except Exception as exc:  # a repr of the learner's that raises: name the type instead
        text = f"<{kind.__name__} whose repr raised {type(exc).__name__}>"
    if len(text) > REPR_LENGTH:
        text = text[: REPR_LENGTH - 3] + "..."
    return {"object": [str(getattr(kind, "__module__", "")), kind.__qualname__, text]}


# ---- JSON -> values -----------------------------------------------------------------------------

def decode(data: Any, depth: int = 0) -> Any:
    """The value `encode` made; WireError for anything else."""
    if depth > MAX_DEPTH + 2:
        raise WireError("a message nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(item, depth + 1) for item in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise WireError(f"a value of an unknown form: {str(data)[:80]}")
    ((tag, body),) = data.items()
    reader = _READERS.get(tag)
    if reader is None:
        raise WireError(f"a value tagged {tag[:40]!r}, which is not one of {sorted(_READERS)}")
    try:
        return reader(body, depth)
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise WireError(f"a {tag} that cannot be read: {exc}") from exc


def _read_array(body: Any, depth: int) -> np.ndarray:
    dtype_text, shape, text = body
    dtype = _numeric_dtype(dtype_text)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise WireError(f"an array of shape {shape}")
    raw = base64.b64decode(text, validate=True)
    if len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise WireError(f"an array of shape {shape} and dtype {dtype} with {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _read_scalar(body: Any, depth: int) -> np.generic:
    dtype_text, text = body
    dtype = _numeric_dtype(dtype_text)
    raw = base64.b64decode(text, validate=True)
    if len(raw) != dtype.itemsize:
        raise WireError(f"a {dtype} number of {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype)[0]


def _numeric_dtype(text: Any) -> np.dtype:
    if not isinstance(text, str) or len(text) > 8:
        raise WireError(f"a dtype {str(text)[:20]!r}")
    dtype = np.dtype(text)
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.hasobject:
        raise WireError(f"an array of dtype {dtype}, which is not numbers")
    return dtype


def _read_tensor(body: Any, depth: int) -> Tensor:
    data, requires_grad = body
    array = decode(data, depth + 1)
    if not isinstance(array, np.ndarray):
        raise WireError("a Tensor without an array")
    return Tensor(array, requires_grad=bool(requires_grad) and array.dtype.kind == "f")


def _read_row_sparse(body: Any, depth: int) -> RowSparse:
    indices, values, shape, coalesced = body
    return RowSparse(decode(indices, depth + 1), decode(values, depth + 1), tuple(int(s) for s in shape),
                     coalesced=bool(coalesced))


def _read_dict(body: Any, depth: int) -> dict:
    result = {}
    for key, value in body:
        key = decode(key, depth + 1)
        try:
            result[key] = decode(value, depth + 1)
        except TypeError as exc:  # an unhashable key
            raise WireError(f"a dict key of type {type(key).__name__}") from exc
    return result


def _read_object(body: Any, depth: int) -> Opaque:
    module, type_name, text = body
    return Opaque(str(module)[:200], str(type_name)[:200], str(text)[:REPR_LENGTH])


_READERS = {
    "tuple": lambda body, depth: tuple(decode(item, depth + 1) for item in body),
    "dict": _read_dict,
    "array": _read_array,
    "scalar": _read_scalar,
    "Tensor": _read_tensor,
    "RowSparse": _read_row_sparse,
    "object": _read_object,
}


# ---- messages on a pipe -------------------------------------------------------------------------

def write_message(fd: int, message: Any, deadline: float | None = None) -> None:
    """Send one JSON-ready `message` on the file descriptor `fd`. TimeoutError when the other
    side does not take it before `deadline` (time.monotonic()); BrokenPipeError when it is gone."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    data = memoryview(len(body).to_bytes(HEADER, "big") + body)
    while data:
        _wait(fd, deadline, write=True)
        written = os.write(fd, data[: 1 << 16])
        data = data[written:]


def read_message(fd: int, deadline: float | None = None) -> Any:
    """One message from `fd`, as JSON-ready data; None when the other side closed it before a
    message began. TimeoutError past `deadline`; WireError for bytes that are not a message."""
    header = _read_exactly(fd, HEADER, deadline)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes (at most {MAX_MESSAGE})")
    body = _read_exactly(fd, size, deadline)
    if body is None:
        raise WireError(f"the message ended after its header (it announced {size} bytes)")
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError(f"a message that is not JSON: {exc}") from exc


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, got = [], 0
    while got < size:
        _wait(fd, deadline, write=False)
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise WireError(f"the message stopped after {got} of {size} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _wait(fd: int, deadline: float | None, write: bool) -> None:
    """Block until `fd` can be read (or written), or raise TimeoutError at `deadline`."""
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise TimeoutError("the other side did not answer in time")
        wanted: tuple[list[int], list[int], list[int]] = ([], [fd], []) if write else ([fd], [], [])
        if any(select.select(*wanted, left)):
            return
