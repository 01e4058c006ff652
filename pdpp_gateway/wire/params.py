"""What is wrong with a request's params, in words, before the SDK's model would only say "Invalid request parameters".

Contract: ``params_problem(method, params)`` returns one sentence saying what to send
instead, for the params of the methods this server serves whose shape the SDK validates
(``tools/call``: ``name`` a string, ``arguments`` an object or left out;
``resources/read``: ``uri`` a string), else ``None``. Both doors answer such a request
with ``-32602`` and the request's own id (stdio before the SDK reads the line, the
hosted door in its shape ladder). Standard library only: the stdio door runs it on every
line. A value is never echoed whole: only its JSON type is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_JSON_TYPES = ((bool, "boolean"), (int | float, "number"), (str, "string"), (list, "array"), (dict, "object"))


def json_type(value: object) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def params_problem(method: str, params: Mapping[str, Any] | None) -> str | None:
    if method == "tools/call":
        given = params or {}
        if not isinstance(given.get("name"), str):
            return f'Invalid params: tools/call needs "name", the tool name as a string (got {json_type(given.get("name"))}).'
        arguments = given.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            return (
                f'Invalid params: tools/call "arguments" must be a JSON object of the tool\'s arguments '
                f'(got {json_type(arguments)}), e.g. {{"stream": "messages"}}; leave it out for none.'
            )
    elif method == "resources/read" and not isinstance((params or {}).get("uri"), str):
        return f'Invalid params: resources/read needs "uri", a pdpp:// URI string (got {json_type((params or {}).get("uri"))}).'
    return None
