"""A resource read's answer, shaped without the SDK: its contents, or its JSON-RPC error.

Contract (no SDK import: the stdio door answers reads with it before the SDK has loaded;
``resources`` builds the SDK's types from the same parts, so both paths say the same):

- ``run(context, uri)`` reads one ``pdpp://`` URI through ``resource_reads.PIPELINE``
  (an unknown kind of URI is refused as ``invalid_uri``) and returns its ``ToolResult``,
  or raises the ``ToolError`` it was refused with.
- ``contents(uri, result)``: the read's ``contents`` as the SDK writes them (keys in the
  SDK's order): JSON bodies as ``{"mimeType": "application/json", "text": <indented JSON>,
  "uri"}``, one per answering source; a blob as ``{"blob": <base64>, "mimeType", "uri"}``
  (its ``Content-Type``, ``application/octet-stream`` when the RS names none).
- ``result_wire(contents, modern=..., stamp=...)``: the JSON-RPC ``result`` of a read; in
  the 2026-07-28 era with the SDK's defaults (``cacheScope``, ``resultType``, ``ttlMs``) and
  the server's identity ``stamp`` in ``_meta``.
- ``error_object(error, uri, modern=...)``: the JSON-RPC error of a refused read:
  ``code`` from the one status table (``rpc_codes``; see ``resources``), ``message``
  ``<code>: <message>`` and the next step (``render.errors.next_step``) within
  ``MAX_ERROR_MESSAGE`` characters, ``data`` the typed envelope naming the ``uri`` (cut
  past ``MAX_URI_ECHO``); ``uri`` None leaves it out (``resources/list``).
"""

from __future__ import annotations

import base64
from typing import Any, Final

import orjson
from mcp_gateway_middleware import ToolCall, ToolError, ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.refusals import REFUSALS
from pdpp_gateway.render.errors import meaning, next_step
from pdpp_gateway.resources.reads import BLOB_DATA, BODIES, PARSERS, PIPELINE, kind_of, unknown_uri
from pdpp_gateway.rs.client import RsBlob
from pdpp_gateway.rs.errors import ASKED_OUTSIDE_GRANT
from pdpp_gateway.wire import codes as rpc_codes
from pdpp_gateway.wire.call_result import SERVER_INFO_META_KEY

MAX_ERROR_MESSAGE: Final = 300
MAX_STEP_CHARS: Final = 160  # of MAX_ERROR_MESSAGE, kept for the next step
MAX_URI_ECHO: Final = 1000  # characters of the URI named back in an error's data
_TRY_AGAIN: Final = frozenset({"upstream_unavailable", "upstream_timeout"})


async def run(context: GatewayContext, uri: str) -> ToolResult:
    """Read ``uri`` with the caller's grant; a refusal is raised as its ``ToolError``."""
    kind = kind_of(uri)
    if kind is None:
        raise unknown_uri(uri)
    return await PIPELINE(ToolCall(kind, {"uri": uri}, context))


def contents(uri: str, result: ToolResult) -> list[dict[str, Any]]:
    blob = result.annotations.get(BLOB_DATA)
    if isinstance(blob, RsBlob):
        encoded = base64.b64encode(blob.data).decode("ascii")
        return [{"blob": encoded, "mimeType": blob.content_type, "uri": uri}]
    return [
        {
            "mimeType": "application/json",
            "text": orjson.dumps(body, option=orjson.OPT_INDENT_2).decode(),
            "uri": uri,
        }
        for body in result.structured[BODIES]
    ]


def result_wire(read: list[dict[str, Any]], *, modern: bool, stamp: dict[str, Any] | None) -> dict[str, Any]:
    if not modern:
        return {"contents": read}
    return {
        "cacheScope": "private",
        "contents": read,
        "resultType": "complete",
        "ttlMs": 0,
        "_meta": {SERVER_INFO_META_KEY: stamp},
    }


def error_object(error: ToolError, uri: str | None, *, modern: bool) -> dict[str, Any]:
    """The JSON-RPC error object of a refused read (see the module contract)."""
    param = error.envelope.get("param")
    step = next_step(
        error.envelope, error.extra.get("http_status"), param if isinstance(param, str) else None
    )
    step = _bounded(step, MAX_STEP_CHARS) if step else ""
    message = _meaning(error.code, uri) or error.envelope.get("message", "")
    said = _bounded(f"{error.code}: {message}", MAX_ERROR_MESSAGE - len(step) - 2)
    if step and not said.endswith((".", "!", "?", "…")):
        said += "."  # an RS message without its full stop must not run into the next step
    code = _json_rpc_code(error)
    if modern and code == rpc_codes.NOT_FOUND:
        code = rpc_codes.INVALID_PARAMS  # the 2026-07-28 era retired -32002
    data = dict(error.envelope)
    if uri is not None:
        data["uri"] = uri if len(uri) <= MAX_URI_ECHO else uri[: MAX_URI_ECHO - 1] + "…"
    return {"code": code, "message": f"{said} {step}" if step else said, "data": data}


def _meaning(code: str, uri: str | None) -> str | None:
    """The tool error's words for an RS refusal whose own words mislead (a stream outside the
    grant worded as a failed token check), naming the stream the URI reads."""
    kind = kind_of(uri) if uri is not None else None
    if kind is None or uri is None:
        return None
    try:
        read = PARSERS[kind]({"uri": uri})
    except ToolError:
        return None
    return meaning(code, read.stream, read.connection_id)


def _json_rpc_code(error: ToolError) -> int:
    """By the one status table (``rpc_codes``); a caller's mistake is a bad URI (``-32602``)."""
    if error.code in REFUSALS:  # a credential refused, by the RS or by its kind
        return REFUSALS[error.code].rpc_code
    if error.code in ASKED_OUTSIDE_GRANT:  # a 401 for a stream or connection the grant lacks
        return rpc_codes.INVALID_PARAMS
    if error.code in _TRY_AGAIN:
        return rpc_codes.UNAVAILABLE  # unreachable, held back or too slow: try again shortly
    status = error.extra.get("http_status")
    if isinstance(status, int):  # the RS's own answer, or a package connection not found
        return rpc_codes.for_status(status, caller_fault=rpc_codes.INVALID_PARAMS)
    if error.envelope.get("type") == "invalid_request_error" or error.code == "ambiguous_connection":
        return rpc_codes.INVALID_PARAMS  # refused before any RS call: fix the URI
    return rpc_codes.INTERNAL_ERROR  # an unusable answer


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
