"""The JSON-RPC envelopes the SDK writes around a result or an error, restated without it.

Contract (standard library only: the stdio door writes its first answers with it before
the SDK, or even orjson, has loaded; ``tests/wire`` holds each piece to the SDK's bytes):

- ``SERVER_INFO_META_KEY``, ``RESULT_TYPE`` and ``COMPLETE`` are the names the SDK's
  runner writes into a 2026-07-28-era result, stated here once: the server's identity
  under ``_meta``, and ``resultType`` ``"complete"``.
- ``stamped(result, stamp)`` adds the server's identity ``stamp`` to a 2026-era result's
  ``_meta``, last, as the runner does after its per-version sieve: a ``_meta`` that
  already names a server, or that is not an object, is left as it is. (The runner's
  other step, ``resultType`` when a result has none, never applies to the gateway's
  results: the SDK's result models and ``call_result``/``read_result`` always write it.)
- ``error(code, message, data)`` is an error object in the SDK's key order (``data`` left
  out when ``None``); ``handler_error(exception, modern=...)`` the one the SDK answers
  over stdio for an exception out of a handler (neither ``MCPError`` nor a validation
  error): in the handshake era its dispatcher's ``code`` ``HANDLER_EXCEPTION`` (0) with
  the exception's text, in the 2026-07-28 era the runner's ``INTERNAL_ERROR`` with
  ``INTERNAL_MESSAGE`` (the exception's text never reaches the wire there).
- ``frame(id_key, member, body)`` is one stdio frame as the SDK's ``stdio_server`` writes
  it: ``{"jsonrpc":"2.0","id":<id_key>,"<member>":<body>}`` and a newline (``body``
  written by ``json_bytes.encode``).
"""

from __future__ import annotations

from typing import Any, Final

from pdpp_gateway.wire.codes import HANDLER_EXCEPTION, INTERNAL_ERROR

# The SDK's ``mcp_types.SERVER_INFO_META_KEY`` (``tests/wire/test_envelope.py`` holds them equal).
SERVER_INFO_META_KEY: Final = "io.modelcontextprotocol/serverInfo"
RESULT_TYPE: Final = "resultType"
COMPLETE: Final = "complete"
INTERNAL_MESSAGE: Final = "Internal server error"  # the SDK's, for a 2026-era handler's exception


def stamped(result: dict[str, Any], stamp: dict[str, Any] | None) -> dict[str, Any]:
    """``result`` with the server's identity in its ``_meta`` (a 2026-era result)."""
    meta = result.get("_meta")
    if meta is None:
        result["_meta"] = {SERVER_INFO_META_KEY: stamp}
    elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
        result["_meta"] = {**meta, SERVER_INFO_META_KEY: stamp}
    return result


def error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object, keys in the SDK's order."""
    return (
        {"code": code, "message": message}
        if data is None
        else {"code": code, "message": message, "data": data}
    )


def handler_error(exception: BaseException, *, modern: bool) -> dict[str, Any]:
    """The SDK's stdio answer to an exception a handler raised, in the request's era."""
    return error(INTERNAL_ERROR, INTERNAL_MESSAGE) if modern else error(HANDLER_EXCEPTION, str(exception))


def frame(id_key: str, member: bytes, body: bytes) -> bytes:
    """A response frame: ``id_key`` the request id as JSON text, ``member`` ``result`` or ``error``."""
    return b'{"jsonrpc":"2.0","id":' + id_key.encode() + b',"' + member + b'":' + body + b"}\n"
