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

Every read uses the caller's bound client (same grant token as the tools). An RS
failure becomes the same ``ToolError`` a tool call gets (``render.upstream.tool_error``),
and the JSON-RPC error says it the same way: its ``data`` is that typed envelope, its
message (at most ``MAX_ERROR_MESSAGE`` characters) ``<code>: <message>`` and then the
next step a tool result would give (``render.errors.next_step``). The JSON-RPC code
comes from the one status table every door uses (``rpc_codes.for_status``): a caller
mistake (a malformed or unknown URI, a bad segment, an RS 400/409/422 such as an
ambiguous record handle) is ``-32602`` (invalid params); an RS 404 is ``-32002`` (resource
not found) in the handshake era and ``-32602`` in the 2026-07-28 era (which retired
``-32002``); a credential the RS refuses (401, 403) is ``-32001``; the RS unreachable,
held back, too slow or answering 503/504 is ``-32000`` (try again shortly); an RS 429 is
``-32029``; an unusable answer or any other RS error is ``-32603``. Segments are checked for traversal
before any RS call. Every read error's ``data`` names the ``uri`` it was about (cut past
``MAX_URI_ECHO`` characters). ``resources/list`` failing upstream logs one line (no
traceback) and answers with the code of its first failure, by the same table.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

import mcp.types as types
import orjson
from mcp.shared.exceptions import MCPError

from middleware import ToolError
from pdpp_gateway import rpc_codes
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RECORD_URI_PREFIX, check_segment, parse_handle
from pdpp_gateway.package import for_member, member_context, members_granting
from pdpp_gateway.refusals import REFUSALS
from pdpp_gateway.render.errors import next_step
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError, RsStatusError, RsTimeoutError, RsUnavailableError

STREAM_PREFIX: Final = "pdpp://stream/"
BLOB_PREFIX: Final = "pdpp://blob/"
MAX_BLOB_BYTES: Final = 8 * 1024 * 1024
MAX_ERROR_MESSAGE: Final = 300
MAX_STEP_CHARS: Final = 160  # of MAX_ERROR_MESSAGE, kept for the next step
MAX_URI_ECHO: Final = 1000  # characters of the URI named back in an error's data
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
    rows: list[Any] = []
    failures: list[ToolError | RsError] = []
    readers = _every_member(context, None)
    answers = await asyncio.gather(*(_forward(r, "/v1/streams", []) for r in readers), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, ToolError | RsError):
            failures.append(answer)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            rows.extend(answer.get("data") or ())
    if failures:
        refusal = protocol_error(failures[0])
        _log.warning("resources/list failed for %d source(s): %s", len(failures), refusal.error.message)
        if not rows:
            raise refusal from None
    sources: dict[str, list[str]] = {}
    for row in rows:
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


async def read(context: GatewayContext, uri: str, *, modern: bool = False) -> types.ReadResourceResult:
    """Read one ``pdpp://`` resource with the caller's grant; ``modern``: the 2026-07-28 era."""
    try:
        return await _read(context, uri)
    except MCPError as error:
        raise _naming(error, uri, modern=modern) from None


def _naming(error: MCPError, uri: str, *, modern: bool) -> MCPError:
    """``error`` with ``data.uri`` (bounded); in the 2026-07-28 era a missing resource is
    ``-32602`` (that era retired ``-32002``)."""
    data = dict(error.data) if isinstance(error.data, Mapping) else {}
    data["uri"] = uri if len(uri) <= MAX_URI_ECHO else uri[: MAX_URI_ECHO - 1] + "…"
    code = types.INVALID_PARAMS if modern and error.code == rpc_codes.NOT_FOUND else error.code
    return MCPError(code, error.message, data=data)


async def _read(context: GatewayContext, uri: str) -> types.ReadResourceResult:
    try:
        if uri.startswith(STREAM_PREFIX):
            name = check_segment(unquote(uri[len(STREAM_PREFIX) :]), "stream name", param="uri")
            path = rs_path("v1", "streams", name)
            readers = _every_member(context, name)
            answers = await asyncio.gather(*(_forward(r, path, []) for r in readers), return_exceptions=True)
            failed = next((a for a in answers if isinstance(a, BaseException)), None)
            if failed is not None:
                raise failed
            return _json(uri, *(a for a in answers if not isinstance(a, BaseException)))
        if uri.startswith(RECORD_URI_PREFIX):
            ref = parse_handle(uri, param="uri")
            query = [("connection_id", ref.connection_id)] if ref.connection_id else []
            reader = member_context(context, ref.connection_id, ref.stream)
            body = await _forward(
                reader, rs_path("v1", "streams", ref.stream, "records", ref.record_id), query
            )
            return _json(uri, body)
        if uri.startswith(BLOB_PREFIX):
            return await _read_blob(context, uri)
    except (ToolError, RsError) as error:
        raise protocol_error(error) from None
    raise MCPError(
        types.INVALID_PARAMS,
        f"Unknown resource URI {uri[:200]!r}; readable: pdpp://stream/{{name}}, pdpp://record/{{handle}}, "
        "pdpp://blob/{connection_id}/{blob_id}.",
    )


def protocol_error(error: ToolError | RsError) -> MCPError:
    """The JSON-RPC error for a failed resource operation: caller mistakes only are -32602."""
    code = _json_rpc_code(error)
    typed = tool_error(error) if isinstance(error, RsError) else error
    param = typed.envelope.get("param")
    step = next_step(
        typed.envelope, typed.extra.get("http_status"), param if isinstance(param, str) else None
    )
    step = _bounded(step, MAX_STEP_CHARS) if step else ""
    said = _bounded(f"{typed.code}: {typed.envelope.get('message', '')}", MAX_ERROR_MESSAGE - len(step) - 1)
    return MCPError(code, f"{said} {step}" if step else said, data=typed.envelope)


def _json_rpc_code(error: ToolError | RsError) -> int:
    """By the one status table (``rpc_codes``); a caller's mistake is a bad URI (``-32602``)."""
    if isinstance(error, RsStatusError):
        return rpc_codes.for_status(error.status, caller_fault=rpc_codes.INVALID_PARAMS)
    if isinstance(error, RsUnavailableError | RsTimeoutError):
        return rpc_codes.UNAVAILABLE  # unreachable, held back or too slow: try again shortly
    if isinstance(error, RsError):
        return rpc_codes.INTERNAL_ERROR  # an unusable answer
    if error.code in REFUSALS:  # a credential refused by its kind on the first read
        return REFUSALS[error.code].rpc_code
    if error.envelope.get("type") == "invalid_request_error" or error.code == "ambiguous_connection":
        return rpc_codes.INVALID_PARAMS  # refused before any RS call: fix the URI
    return rpc_codes.INTERNAL_ERROR


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _read_blob(context: GatewayContext, uri: str) -> types.ReadResourceResult:
    parts = uri[len(BLOB_PREFIX) :].split("/")
    if len(parts) not in (1, 2):
        raise MCPError(types.INVALID_PARAMS, "Blob URI must be pdpp://blob/{connection_id}/{blob_id}.")
    segments = [check_segment(unquote(part), "blob URI segment", param="uri") for part in parts]
    blob_id = segments[-1]
    connection_id = segments[0] if len(segments) == 2 else None
    query = [("connection_id", connection_id)] if connection_id else []
    blob = await member_context(context, connection_id, None).rs.get_bytes(
        rs_path("v1", "blobs", blob_id), query, max_bytes=MAX_BLOB_BYTES
    )
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


def _every_member(context: GatewayContext, stream: str | None) -> list[GatewayContext]:
    """The contexts a stream-wide read asks: the caller's own, or each package member
    granting ``stream`` (all of them when none does, so the RS words the refusal)."""
    if not context.package:
        return [context]
    return [for_member(context, member) for member in members_granting(context, stream) or context.package]


def _json(uri: str, *bodies: Mapping[str, Any]) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=uri,
                mime_type="application/json",
                text=orjson.dumps(body, option=orjson.OPT_INDENT_2).decode(),
            )
            for body in bodies
        ]
    )
