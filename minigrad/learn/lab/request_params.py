"""Reading what an HTTP request sends: its JSON body, then every parameter in it, on the server.

`parse_json` turns a request body into plain data, refusing what `json` alone would turn into a
crash (integers past Python's digit limit, nesting deep enough to exhaust the stack). A page
function receives that plain dict and reads it with the helpers below. Anything out of bounds
raises `BadRequest`, whose message names the field and what was expected; the server answers it
with a 4xx and the page shows the message. Nothing a browser
sends is ever evaluated: numbers are parsed with `float`/`int`, choices are looked up in a tuple.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class BadRequest(ValueError):
    """A parameter the lab cannot use; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


MAX_DIGITS = 1000  # an integer longer than this is no parameter (Python reads at most 4300 digits)
MAX_DEPTH = 8  # our bodies nest 3 deep at most (an object holding a list of rows)


def parse_json(raw: bytes) -> Any:
    """A request body as plain data (an empty body is `{}`); BadRequest when it is not JSON, holds
    an integer of more than MAX_DIGITS digits or nests deeper than MAX_DEPTH."""
    try:
        value = json.loads(raw or b"{}", parse_int=_read_int)
    except BadRequest:
        raise
    except RecursionError:
        raise BadRequest(f"the request body nests too deeply (at most {MAX_DEPTH} levels)") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise BadRequest(f"the request body is not valid JSON: {err}") from None
    if _depth(value) > MAX_DEPTH:
        raise BadRequest(f"the request body nests too deeply (at most {MAX_DEPTH} levels)")
    return value


def _read_int(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise BadRequest(f"the request body holds an integer of {len(text)} digits (at most {MAX_DIGITS} "
                         "are read)")
    return int(text)


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                children = item.values() if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in children)
    return deepest


def shown(value: Any, limit: int = 60) -> str:
    """repr(value) for a message, cut to `limit` characters (a long input is not echoed whole)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"a {len(str(abs(value)))}-digit integer"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def as_mapping(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def integer(body: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    """body[name] as an int in [low, high] (a whole number, or a string of one)."""
    value = body.get(name, default)
    expected = f"{name}: expected a whole number from {low} to {high}, got {shown(value)}"
    if isinstance(value, int) and not isinstance(value, bool):
        number = value  # exact: float() of a long integer overflows
    elif isinstance(value, (float, str)):
        try:
            written = float(value)
        except ValueError:
            raise BadRequest(expected) from None
        if not math.isfinite(written) or written != int(written):
            raise BadRequest(expected)
        number = int(written)
    else:
        raise BadRequest(expected)
    if not low <= number <= high:
        raise BadRequest(f"{name}: {shown(number)} is out of range; expected {low} to {high}")
    return number


def number(body: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    """body[name] as a finite float in [low, high]."""
    value = body.get(name, default)
    if isinstance(value, int) and not isinstance(value, bool) and not -1e300 < value < 1e300:
        raise BadRequest(f"{name}: {shown(value)} is out of range; expected {low:g} to {high:g}")
    try:
        x = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else math.nan
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise BadRequest(f"{name}: expected a number from {low:g} to {high:g}, got {shown(value)}")
    if not low <= x <= high:
        raise BadRequest(f"{name}: {x:g} is out of range; expected {low:g} to {high:g}")
    return x


def choice(body: Mapping[str, Any], name: str, options: Sequence[str], default: str | None = None) -> str:
    """body[name], which must be one of `options`."""
    value = body.get(name, default)
    if value not in options:
        raise BadRequest(f"{name}: expected one of {', '.join(options)}, got {shown(value)}")
    return str(value)


def flag(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise BadRequest(f"{name}: expected true or false, got {shown(value)}")
    return value


def vector(body: Mapping[str, Any], name: str, length: int, default: np.ndarray, bound: float) -> np.ndarray:
    """body[name] as `length` finite numbers with |x| <= bound: a list, or text such as
    '0.05, -0.03' or '[0.05 -0.03]'. Missing or empty: `default`."""
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return np.array(default, dtype=np.float64)
    array = parse_array(value, name)
    if array.ndim != 1 or array.size != length:
        raise BadRequest(f"{name}: expected {length} numbers, got {array.size} "
                         f"(shape {array.shape})")
    if np.abs(array).max(initial=0.0) > bound:
        raise BadRequest(f"{name}: every number must be between -{bound:g} and {bound:g}")
    return array


MAX_ARRAY = 4096  # numbers one request may send


def parse_array(value: Any, name: str) -> np.ndarray:
    """A list of numbers (nested one level at most), or text of numbers separated by commas,
    spaces or newlines, optionally in brackets, as a float64 array. Never evaluated."""
    if isinstance(value, str):
        value = _numbers_in_text(value, name)
    if not isinstance(value, list):
        raise BadRequest(f"{name}: expected a list of numbers, got {type(value).__name__}")
    try:
        array = np.array(value, dtype=np.float64)
    except OverflowError:
        raise BadRequest(f"{name}: a number is too large (every number must be finite)") from None
    except (TypeError, ValueError):
        raise BadRequest(f"{name}: expected numbers in rows of equal length") from None
    _check_array_size(array, name)
    if not np.all(np.isfinite(array)):
        raise BadRequest(f"{name}: NaN and infinity are not allowed")
    return array


def _numbers_in_text(text: str, name: str) -> list:
    """The numbers of a text answer: one list for one line, a list of rows for several."""
    if len(text) > 20 * MAX_ARRAY:
        raise BadRequest(f"{name}: the text is too long (at most {MAX_ARRAY} numbers)")
    rows = [r for r in text.replace("[", " ").replace("]", "\n").split("\n") if r.strip(" ,;")]
    try:
        parsed = [[float(t) for t in r.replace(",", " ").replace(";", " ").split()] for r in rows]
    except ValueError as err:
        raise BadRequest(f"{name}: could not read the numbers ({err}); write numbers separated "
                         "by commas or spaces, e.g. 0.1, -0.2, 0.3") from None
    return parsed[0] if len(parsed) == 1 else parsed


def _check_array_size(array: np.ndarray, name: str) -> None:
    if array.size > MAX_ARRAY or array.ndim > 2:
        raise BadRequest(f"{name}: at most {MAX_ARRAY} numbers in at most 2 dimensions, got shape "
                         f"{array.shape}")
    if array.size == 0:
        raise BadRequest(f"{name}: no numbers given")
