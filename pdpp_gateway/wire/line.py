"""A stdin line read before the SDK has loaded, only where the SDK's parser reads the same.

Contract (standard library only: the stdio door reads every early line with it):

- ``read_message(line)`` is the line's JSON-RPC request or notification as the SDK's
  parser (jiter, through pydantic) would read it, or ``None`` for anything it might read
  otherwise or refuse: more than ``SDK_PARSE_DEPTH`` brackets (in strings or not), an
  escaped surrogate, duplicate keys, ``NaN``/``Infinity`` or a number beyond a double, a
  value that is not one object, a member besides ``jsonrpc``, ``id``, ``method`` and
  ``params``, ``jsonrpc`` other than ``"2.0"``, a ``method`` that is not a string, or
  ``params`` neither an object nor absent.
- ``id_key(request_id)`` is a request id as the JSON text the SDK echoes it with, for the
  ids the early path echoes exactly like the SDK (an integer within a double's exact
  range, a string of printable ASCII without ``"`` or ``\\``, at most 256 characters),
  else ``None``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

# The nesting the SDK's parser (jiter) reads. A line with more brackets than that, in
# strings or not, is left to the SDK: never parsed deeper here, never answered where it refuses.
SDK_PARSE_DEPTH: Final = 200
MAX_SAFE_ID: Final = 2**53
_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_PLAIN_ID: Final = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]{0,256}")  # printable ASCII but " and \


def read_message(line: str) -> dict[str, Any] | None:
    """The message as a request or notification envelope, or ``None`` for anything unusual."""
    if _ESCAPED_SURROGATE.search(line) or line.count("[") + line.count("{") > SDK_PARSE_DEPTH:
        return None
    try:
        message = json.loads(
            line, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite
        )
    except ValueError:
        return None
    if not isinstance(message, dict) or not message.keys() <= _REQUEST_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None
    params = message.get("params")
    return message if params is None or isinstance(params, dict) else None


def id_key(request_id: object) -> str | None:
    """A request id as JSON text, when it is one the early path echoes exactly like the SDK."""
    if type(request_id) is int and -MAX_SAFE_ID < request_id < MAX_SAFE_ID:
        return str(request_id)
    if type(request_id) is str and _PLAIN_ID.fullmatch(request_id):
        return f'"{request_id}"'
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: the SDK's parser may read them otherwise


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("a number too large for a double")
    return value
