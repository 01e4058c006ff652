"""MCP resources: stream metadata, records and blobs, each one forwarded GET.

Contract:

- ``pdpp://stream/{name}``            → ``GET /v1/streams/{name}`` (JSON)
- ``pdpp://record/{handle}``          → ``GET /v1/streams/{s}/records/{id}[?connection_id]`` (JSON);
  ``handle`` is any record handle form (see ``ids``), percent-encoded.
- ``pdpp://blob/{connection_id}/{blob_id}`` and ``pdpp://blob/{blob_id}``
                                       → ``GET /v1/blobs/{id}[?connection_id]`` (bytes, base64),
  refused with a clear error past ``resource_reads.MAX_BLOB_BYTES`` rather than silently cut.
- ``resources/list`` lists one ``pdpp://stream/`` resource per granted stream name
  (``GET /v1/streams``), so stream listing stays reachable without a tool.

Each read runs through the resource pipeline (``resource_reads``: the URI parsed once,
routed for a package like a tool call, its RS failure worded by the tool pipeline's
``upstream_errors``), with the caller's bound client (same grant token as the tools).
This module puts the answer on the wire. A refusal's JSON-RPC error says it the way a
tool result would: its ``data`` is the typed envelope, its message (at most
``MAX_ERROR_MESSAGE`` characters) ``<code>: <message>`` and then the next step
(``render.errors.next_step``). The JSON-RPC code comes from the one status table every
door uses (``rpc_codes.for_status``): a caller mistake (a malformed or unknown URI, a bad
segment, an RS 400/409/422 such as an ambiguous record handle) is ``-32602`` (invalid
params); an RS 404 (or a connection the package does not hold) is ``-32002`` (resource not
found) in the handshake era and ``-32602`` in the 2026-07-28 era (which retired
``-32002``); a credential refused (by the RS, or by its kind) is ``-32001``; the RS
unreachable, held back, too slow or answering 503/504 is ``-32000`` (try again shortly);
an RS 429 is ``-32029``; an unusable answer or any other RS error is ``-32603``. Every
read error's ``data`` names the ``uri`` it was about (cut past ``MAX_URI_ECHO``
characters). ``resources/list`` failing upstream logs one line (no traceback) and
answers with the code of its first failure, by the same table; a package's list that
some members answered lists theirs.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any, Final

import mcp.types as types
import orjson
from mcp.shared.exceptions import MCPError

from middleware import ToolCall, ToolError
from pdpp_gateway import rpc_codes
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.refusals import REFUSALS
from pdpp_gateway.render.errors import next_step
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.resource_reads import (
    BLOB,
    BODIES,
    FAILED,
    LIST,
    PIPELINE,
    STREAM_PREFIX,
    kind_of,
    unknown_uri,
)
from pdpp_gateway.rs.client import RsBlob
from pdpp_gateway.rs.errors import RsError

MAX_ERROR_MESSAGE: Final = 300
MAX_STEP_CHARS: Final = 160  # of MAX_ERROR_MESSAGE, kept for the next step
MAX_URI_ECHO: Final = 1000  # characters of the URI named back in an error's data
_TRY_AGAIN: Final = frozenset({"upstream_unavailable", "upstream_timeout"})
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
        result = await PIPELINE(ToolCall(LIST, {}, context))
    except ToolError as error:
        failed: list[ToolError] = [error]
        bodies: list[Any] = []
    else:
        failed, bodies = result.annotations.get(FAILED) or [], result.structured[BODIES]
    rows = [row for body in bodies for row in body.get("data") or ()]
    if failed:
        refusal = protocol_error(failed[0])
        _log.warning("resources/list failed for %d source(s): %s", len(failed), refusal.error.message)
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
    kind = kind_of(uri)
    try:
        if kind is None:
            raise unknown_uri(uri)
        result = await PIPELINE(ToolCall(kind, {"uri": uri}, context))
    except ToolError as error:
        raise _naming(protocol_error(error), uri, modern=modern) from None
    blob = result.annotations.get(BLOB)
    if isinstance(blob, RsBlob):
        contents = types.BlobResourceContents(
            uri=uri, mime_type=blob.content_type, blob=base64.b64encode(blob.data).decode("ascii")
        )
        return types.ReadResourceResult(contents=[contents])
    return _json(uri, *result.structured[BODIES])


def _naming(error: MCPError, uri: str, *, modern: bool) -> MCPError:
    """``error`` with ``data.uri`` (bounded); in the 2026-07-28 era a missing resource is
    ``-32602`` (that era retired ``-32002``)."""
    data = dict(error.data) if isinstance(error.data, Mapping) else {}
    data["uri"] = uri if len(uri) <= MAX_URI_ECHO else uri[: MAX_URI_ECHO - 1] + "…"
    code = types.INVALID_PARAMS if modern and error.code == rpc_codes.NOT_FOUND else error.code
    return MCPError(code, error.message, data=data)


def protocol_error(error: ToolError | RsError) -> MCPError:
    """The JSON-RPC error for a failed resource operation (see the module contract)."""
    typed = tool_error(error) if isinstance(error, RsError) else error
    param = typed.envelope.get("param")
    step = next_step(
        typed.envelope, typed.extra.get("http_status"), param if isinstance(param, str) else None
    )
    step = _bounded(step, MAX_STEP_CHARS) if step else ""
    said = _bounded(f"{typed.code}: {typed.envelope.get('message', '')}", MAX_ERROR_MESSAGE - len(step) - 1)
    return MCPError(_json_rpc_code(typed), f"{said} {step}" if step else said, data=typed.envelope)


def _json_rpc_code(error: ToolError) -> int:
    """By the one status table (``rpc_codes``); a caller's mistake is a bad URI (``-32602``)."""
    if error.code in REFUSALS:  # a credential refused, by the RS or by its kind
        return REFUSALS[error.code].rpc_code
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
