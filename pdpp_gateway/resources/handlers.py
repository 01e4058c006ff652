"""MCP resources: stream metadata, records and blobs, each one forwarded GET.

Contract:

- ``pdpp://stream/{name}``            → ``GET /v1/streams/{name}`` (JSON)
- ``pdpp://record/{handle}``          → ``GET /v1/streams/{s}/records/{id}[?connection_id]`` (JSON);
  ``handle`` is any record handle form (see ``ids``), percent-encoded.
- ``pdpp://blob/{connection_id}/{blob_id}`` and ``pdpp://blob/{blob_id}``
                                       → ``GET /v1/blobs/{id}[?connection_id]`` (bytes, base64),
  refused with a clear error past ``resources.reads.MAX_BLOB_BYTES`` rather than silently cut.
- ``resources/list`` lists one ``pdpp://stream/`` resource per granted stream name
  (``GET /v1/streams``), so stream listing stays reachable without a tool.

Each read runs through the resource pipeline (``resources.reads``: the URI parsed once,
routed for a package like a tool call, its RS failure worded by the tool pipeline's
``upstream_errors``), with the caller's bound client (same grant token as the tools).
This module hands the SDK the answer ``resources.answers`` shapes (without the SDK, so the
stdio door's early reads say exactly the same). A refusal's JSON-RPC error says it the way
a tool result would: its ``data`` is the typed envelope, its message (at most
``resources.answers.MAX_ERROR_MESSAGE`` characters) ``<code>: <message>`` and then the next
step (``render.errors.next_step``). The JSON-RPC code comes from the one status table every
door uses (``wire.codes.for_status``): a caller mistake (a malformed or unknown URI, a bad
segment, an RS 400/409/422 such as an ambiguous record handle) is ``-32602`` (invalid
params); an RS 404 (or a connection the package does not hold) is ``-32002`` (resource not
found) in the handshake era and ``-32602`` in the 2026-07-28 era (which retired
``-32002``); a stream or connection outside the grant (the RS's 401
``context.stream_not_allowed`` or ``context.instance_mismatch``) is ``-32602`` too: the URI
asks for what the grant does not hold; a credential refused (by the RS, or by its kind)
is ``-32001``; the RS
unreachable, held back, too slow or answering 503/504 is ``-32000`` (try again shortly);
an RS 429 is ``-32029``; an unusable answer or any other RS error is ``-32603``. Every
read error's ``data`` names the ``uri`` it was about (cut past
``resources.answers.MAX_URI_ECHO`` characters). ``resources/list`` failing upstream logs one
line (no traceback) and answers with the code of its first failure, by the same table; a
package's list that some members answered lists theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_gateway_middleware import ToolCall, ToolError

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.resources import answers as resource_answers
from pdpp_gateway.resources.reads import BODIES, FAILED, LIST, PIPELINE, STREAM_PREFIX

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
    try:
        result = await resource_answers.run(context, uri)
    except ToolError as error:
        raise _mcp_error(resource_answers.error_object(error, uri, modern=modern)) from None
    return types.ReadResourceResult.model_validate({"contents": resource_answers.contents(uri, result)})


def protocol_error(error: ToolError) -> MCPError:
    """The JSON-RPC error for a failed resource operation that names no URI (the list)."""
    return _mcp_error(resource_answers.error_object(error, None, modern=False))


def _mcp_error(error: dict[str, Any]) -> MCPError:
    return MCPError(error["code"], error["message"], data=error["data"])
