"""The hosted ``/mcp`` fast path for ``tools/call``: the process's tool pipeline run
directly and its result written as the wire dict, without the SDK's pydantic round trip.

Contract: the answer is the one the SDK path (``serve_one`` with ``server.call_tool``)
gives, byte for byte, status, headers and metric labels included (pinned by
``tests/hosted/test_fast_call.py`` in both eras); only the work is less. What that
path spends and this one skips: the request's surface validation, the params model, the
``CallToolResult`` model, its dump, the per-version result sieve (a validate and a dump
of the whole ``structuredContent``), the per-request runner, session and context objects.

``FastToolCall.match(decoded, version)`` (a shape-checked body and the protocol version it
is served at) takes only a plain call, by the rule the stdio early path follows too
(``wire.plain``: ``name`` one of the gateway's tools, ``arguments`` an object, ``null`` or
left out, nothing else; no ``_meta`` in the handshake era, only the envelope at
``version`` in the 2026-07-28 era), and answers ``None`` for everything else, which then
goes to the SDK exactly as before.

``await run(request, call)`` runs the pipeline with the caller's ``GatewayContext`` (the
bearer check's) and returns the JSON-RPC ``result`` (and the pipeline's result); it raises
what the SDK handler would raise, and the endpoint maps that as it maps the SDK's. The
result is the wire kernel's (``wire.call_result``). ``encode(reply)`` writes it
(``wire.json_bytes``), or answers ``None`` for a value orjson would write differently from
pydantic; such a result, and any result whose parts are not the plain types the pipeline
promises, is shaped as the SDK's runner shapes it, from the SDK's public parts
(``sdk_shaped``: the result model's dump and ``mcp_types``' per-version result sieve, then
``wire.envelope.stamped``), so it still answers, or fails, as the SDK path does (pinned
for each such shape by ``tests/hosted/test_fast_call_results.py``). No private SDK
attribute is used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp_gateway_middleware import ToolCall, ToolResult
from mcp_types import INTERNAL_ERROR
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from pdpp_gateway.context import CallNext, GatewayContext
from pdpp_gateway.server import call_tool_result
from pdpp_gateway.tools.specs import TOOL_NAMES
from pdpp_gateway.wire import json_bytes
from pdpp_gateway.wire.call_result import result_wire
from pdpp_gateway.wire.envelope import stamped
from pdpp_gateway.wire.plain import CALL_METHOD, plain

_log = logging.getLogger(__name__)
_MODERN: Final = frozenset(MODERN_PROTOCOL_VERSIONS)


@dataclass(frozen=True, slots=True)
class PlainCall:
    """A ``tools/call`` the fast path answers."""

    name: str
    arguments: dict[str, Any]
    version: str  # the protocol version the SDK would serve it at


class FastToolCall:
    """The fast ``tools/call`` of one MCP server (one per public origin)."""

    def __init__(
        self,
        server: Server[Any],
        pipeline: CallNext,
        context_of: Callable[[web.Request], GatewayContext],
        names: tuple[str, ...] = TOOL_NAMES,
    ) -> None:
        self._names = frozenset(names)
        self._server = server
        self._pipeline = pipeline
        self._context_of = context_of
        # The SDK re-reads it per result; it is fixed for a server built once.
        self._stamp = server.server_info_stamp
        # Cache hints or middleware on the server would change the SDK's answer: then
        # every call takes the SDK path.
        self.enabled = CALL_METHOD not in server.cache_hints and not server.middleware

    def match(self, decoded: dict[str, Any], version: str) -> PlainCall | None:
        """The plain call in this (already shape-checked) body served at ``version`` (the
        request's era: its 2026 envelope's, else its handshake header's or the default),
        or ``None`` for the SDK."""
        if not self.enabled or decoded["method"] != CALL_METHOD:
            return None
        modern = (version,) if version in _MODERN else None
        taken = plain(CALL_METHOD, decoded.get("params"), names=self._names, modern_versions=modern)
        return None if taken is None else PlainCall(taken.name, taken.arguments, version)

    async def run(self, request: web.Request, call: PlainCall) -> tuple[dict[str, Any], ToolResult]:
        """The JSON-RPC ``result`` of ``call`` and the pipeline's result it was made from
        (raises what the SDK's handler raises)."""
        result = await self._pipeline(ToolCall(call.name, call.arguments, self._context_of(request)))
        wire = result_wire(result, modern=call.version in _MODERN, stamp=self._stamp)
        return (self.sdk_shaped(result, call.version) if wire is None else wire), result

    def encode(self, reply: dict[str, Any]) -> bytes | None:
        """``reply`` (carrying ``run``'s result) as the SDK path would write it, or ``None``
        when it holds a value orjson would write differently from pydantic (then answer
        with ``sdk_shaped``'s result instead)."""
        return json_bytes.encode(reply)

    def sdk_shaped(self, result: ToolResult, version: str) -> dict[str, Any]:
        """The result shaped as the SDK's runner shapes a ``tools/call`` result, from the SDK's
        public parts (for results the fast path does not write itself; raises as the SDK
        would for a result it cannot send): the ``CallToolResult`` dumped in JSON mode, the
        per-version result sieve (``mcp_types.methods.serialize_server_result``: in the
        2026-07-28 era it carries the model's ``resultType``), then in that era the server
        identity stamp."""
        dumped = call_tool_result(result).model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            dumped = sdk_methods.serialize_server_result(CALL_METHOD, version, dumped)
        except ValidationError:
            _log.exception("the %s result does not fit the %s result shape", CALL_METHOD, version)
            raise MCPError(code=INTERNAL_ERROR, message="Handler returned an invalid result") from None
        return stamped(dumped, self._stamp) if version in _MODERN else dumped
