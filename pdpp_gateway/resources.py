"""MCP resources: stream metadata, records and blobs, each one forwarded GET.

Contract:

- ``pdpp://stream/{name}``            → ``GET /v1/streams/{name}`` (JSON)
- ``pdpp://record/{handle}``          → ``GET /v1/streams/{s}/records/{id}[?connection_id]`` (JSON);
  ``handle`` is any record handle form (see ``ids``), percent-encoded.
- ``pdpp://blob/{connection_id}/{blob_id}`` and ``pdpp://blob/{blob_id}``
                                       → ``GET /v1/blobs/{id}[?connection_id]`` (bytes, base64),
  refused with a clear error past ``MAX_BLOB_BYTES`` rather than silently cut.
- ``resources/list`` lists one ``pdpp://stream/`` resource per granted stream name
  (``GET /v1/streams``), so stream listing stays reachable without a tool.

Every read uses the caller's bound client (same grant token as the tools). Error codes
say whose fault it is: only a caller mistake (a malformed or unknown URI, a bad
segment) is ``-32602`` (invalid params); an RS 404 is ``-32002`` (resource not found);
everything upstream (the RS unreachable, timing out, answering garbage, any other RS
error, a refused credential) is ``-32603`` (internal error) with a bounded message and
the typed envelope in the JSON-RPC error ``data``. (An RS 400/409/422, e.g. an
ambiguous record handle, is the caller's to fix: ``-32602``.) Segments are checked for traversal
before any RS call. ``resources/list`` failing upstream logs one line (no traceback)
and answers ``-32603`` the same way.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

import mcp.types as types
import orjson
from mcp.shared.exceptions import MCPError

from middleware import ToolError
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RECORD_URI_PREFIX, check_segment, parse_handle
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError, RsStatusError

STREAM_PREFIX: Final = "pdpp://stream/"
BLOB_PREFIX: Final = "pdpp://blob/"
MAX_BLOB_BYTES: Final = 8 * 1024 * 1024
RESOURCE_NOT_FOUND: Final = -32002
MAX_ERROR_MESSAGE: Final = 300
_CALLER_STATUSES: Final = frozenset({400, 409, 422})
_log = logging.getLogger(__name__)

TEMPLATES: Final = (
    types.ResourceTemplate(
        name="pdpp-stream",
        uri_template="pdpp://stream/{name}",
        mime_type="application/json",
        description="Metadata of one granted stream (GET /v1/streams/{name}).",
    ),
    types.ResourceTemplate(
        name="pdpp-record",
        uri_template="pdpp://record/{handle}",
        mime_type="application/json",
        description="One record by handle (connection_id/stream:id, percent-encoded), "
        "e.g. pdpp://record/cin_a%2Fmessages%3Am1.",
    ),
    types.ResourceTemplate(
        name="pdpp-blob",
        uri_template="pdpp://blob/{connection_id}/{blob_id}",
        description="Binary content referenced by a record's blob_ref (GET /v1/blobs/{blob_id}).",
    ),
)


async def list_stream_resources(context: GatewayContext) -> list[types.Resource]:
    """One resource per granted stream name, with its sources in the description."""
    try:
        response = await _forward(context, "/v1/streams", [])
    except ToolError as error:
        _log.warning("resources/list failed: %s", _bounded(str(error)))
        raise protocol_error(error) from None
    sources: dict[str, list[str]] = {}
    for row in response.get("data") or ():
        if isinstance(row, Mapping) and isinstance(row.get("name"), str):
            label = row.get("display_name") or row.get("connection_id") or "default"
            sources.setdefault(row["name"], []).append(str(label))
    return [
        types.Resource(
            name=name,
            uri=STREAM_PREFIX + name,
            mime_type="application/json",
            description=f"Stream {name} ({', '.join(labels)})",
        )
        for name, labels in sorted(sources.items())
    ]


async def read(context: GatewayContext, uri: str) -> types.ReadResourceResult:
    """Read one ``pdpp://`` resource with the caller's grant."""
    try:
        if uri.startswith(STREAM_PREFIX):
            name = check_segment(unquote(uri[len(STREAM_PREFIX) :]), "stream name", param="uri")
            return _json(uri, await _forward(context, rs_path("v1", "streams", name), []))
        if uri.startswith(RECORD_URI_PREFIX):
            ref = parse_handle(uri, param="uri")
            query = [("connection_id", ref.connection_id)] if ref.connection_id else []
            body = await _forward(
                context, rs_path("v1", "streams", ref.stream, "records", ref.record_id), query
            )
            return _json(uri, body)
        if uri.startswith(BLOB_PREFIX):
            return await _read_blob(context, uri)
    except ToolError as error:
        raise protocol_error(error) from None
    raise MCPError(
        types.INVALID_PARAMS,
        f"Unknown resource URI {uri[:200]!r}; readable: pdpp://stream/{{name}}, pdpp://record/{{handle}}, "
        "pdpp://blob/{connection_id}/{blob_id}.",
    )


def protocol_error(error: ToolError) -> MCPError:
    """The JSON-RPC error for a failed resource operation: caller mistakes only are -32602."""
    if isinstance(error, RsStatusError):
        if error.status == 404:
            code = RESOURCE_NOT_FOUND
        elif error.status in _CALLER_STATUSES:
            code = types.INVALID_PARAMS  # the RS says the URI asked for something wrong or ambiguous
        else:
            code = types.INTERNAL_ERROR
    elif isinstance(error, RsError):
        code = types.INTERNAL_ERROR  # timeout, unreachable, unusable answer
    elif error.envelope.get("type") == "invalid_request_error" or error.code == "ambiguous_connection":
        code = types.INVALID_PARAMS  # refused before any RS call: fix the URI
    else:
        code = types.INTERNAL_ERROR
    message = _bounded(f"{error.code}: {error.envelope.get('message', '')}")
    return MCPError(code, message, data=error.envelope)


def _bounded(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_MESSAGE else text[: MAX_ERROR_MESSAGE - 1] + "…"


async def _read_blob(context: GatewayContext, uri: str) -> types.ReadResourceResult:
    parts = uri[len(BLOB_PREFIX) :].split("/")
    if len(parts) not in (1, 2):
        raise MCPError(types.INVALID_PARAMS, "Blob URI must be pdpp://blob/{connection_id}/{blob_id}.")
    segments = [check_segment(unquote(part), "blob URI segment", param="uri") for part in parts]
    blob_id = segments[-1]
    query = [("connection_id", segments[0])] if len(segments) == 2 else []
    blob = await context.rs.get_bytes(rs_path("v1", "blobs", blob_id), query, max_bytes=MAX_BLOB_BYTES)
    if blob.truncated:
        size = f"{blob.total_bytes} bytes" if blob.total_bytes is not None else "too large"
        raise MCPError(
            types.INVALID_PARAMS,
            f"Blob {blob_id} is {size}; resource reads stop at {MAX_BLOB_BYTES} bytes. "
            "Use its record's metadata (mime type, size) instead.",
        )
    contents = types.BlobResourceContents(
        uri=uri, mime_type=blob.content_type, blob=base64.b64encode(blob.data).decode("ascii")
    )
    return types.ReadResourceResult(contents=[contents])


async def _forward(context: GatewayContext, path: str, query: list[tuple[str, str]]) -> dict[str, Any]:
    response = await context.rs.get_json(path, query)
    return response.body


def _json(uri: str, body: Mapping[str, Any]) -> types.ReadResourceResult:
    text = orjson.dumps(body, option=orjson.OPT_INDENT_2).decode()
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
    )
