"""A stdin line read by the SDK's own parser, once the SDK serves the stdio door.

Contract (pydantic-core, never the SDK: the stdio door checks each line the SDK is about
to read with it):

- ``value(line)`` is the line's JSON value as the SDK's ``stdio_server`` parses it
  (``pydantic_core.from_json``, ``NaN`` and ``Infinity`` allowed); it raises
  ``ValueError`` (the parser's own reason) where that parser refuses the line.
- ``plain_request(line)`` is the line's request when ``JSONRPCRequest`` reads it exactly
  as it is: an object with ``"jsonrpc": "2.0"``, a string ``method``, an integer or string
  ``id``, ``params`` an object if present, and no ``result`` or ``error``; else ``None``.
  The line is parsed once.
"""

from __future__ import annotations

from typing import Any

import pydantic_core


def value(line: str) -> Any:
    """The line's JSON value, read as the SDK's parser reads it."""
    return pydantic_core.from_json(line, allow_inf_nan=True)


def plain_request(line: str) -> dict[str, Any] | None:
    """The line's request when ``JSONRPCRequest`` reads it as it is, else ``None``."""
    try:
        message = value(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id, params = message.get("id"), message.get("params")
    plain = (
        isinstance(message.get("method"), str)
        and (isinstance(request_id, str) or type(request_id) is int)
        and isinstance(params, dict | None)
        and "result" not in message
        and "error" not in message
    )
    return message if plain else None
