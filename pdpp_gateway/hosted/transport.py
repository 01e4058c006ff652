"""Streamable HTTP at ``/mcp``: stateless, JSON responses, both protocol eras.

Contract (one JSON-RPC message per POST, answered with one ``application/json`` body;
no ``Mcp-Session-Id``, no server-sent events):

- ``GET`` and ``DELETE`` answer 405 with ``Allow: POST`` (no standalone stream, no
  sessions to end).
- ``shape_checks`` (before the bearer check, so a malformed request costs no token
  introspection): ``Accept`` must admit ``application/json`` (406), ``Content-Type``
  must be ``application/json`` (415), a declared body over the cap is 413 (aiohttp
  enforces the cap on the read as well).
- The body must be one JSON object: unparsable → 400 ``-32700``; a batch, a posted
  response or a malformed envelope → 400 ``-32600``; a notification → 202, empty.
- Era by ``MCP-Protocol-Version``: absent or a handshake version (2024-11-05 …
  2025-11-25) → the handshake era: ``initialize`` is answered, any request works
  without it (born-ready connection), errors ride HTTP 200. Any other value → the
  2026-07-28 rules: routing headers must not repeat and must match the body
  (``Mcp-Method``, ``Mcp-Name``), the ``_meta`` envelope must be complete, an
  unsupported version is 400; errors take their HTTP status from the SDK's table
  (400, or 404 for an unknown method).
- Each request runs through the SDK's single-request kernel (``serve_one``) with this
  aiohttp request as the request context, so the server's ``context_for`` reads the
  caller's ``GatewayContext`` from it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import orjson
from aiohttp import web
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import modern_error_data, serve_one
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    unsupported_protocol_version_rejection,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCRequest,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from pdpp_gateway.hosted.metrics import Metrics, tool_label

_log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
VERSION_HEADER: Final = "MCP-Protocol-Version"
_HANDSHAKE: Final = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


@dataclass
class _Exchange:
    """The ``DispatchContext`` of one POST: no back channel, notifications dropped (JSON only)."""

    transport: TransportContext
    request_id: Any
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def accepts_json(accept: str) -> bool:
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


def shape_checks(max_body_bytes: int) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not accepts_json(request.headers.get("Accept", "")):
            return _rpc_error(None, INVALID_REQUEST, "Accept must include application/json", 406)
        if request.content_type != "application/json":
            return _rpc_error(None, INVALID_REQUEST, "Content-Type must be application/json", 415)
        if request.content_length is not None and request.content_length > max_body_bytes:
            return _rpc_error(None, INVALID_REQUEST, f"Body is larger than {max_body_bytes} bytes", 413)
        return await handler(request)

    return check


async def method_not_allowed(request: web.Request) -> web.Response:
    return web.json_response(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": INVALID_REQUEST,
                "message": "Use POST: this endpoint is stateless (no SSE stream, no sessions).",
            },
        },
        status=405,
        headers={"Allow": "POST"},
    )


class McpEndpoint:
    """``POST /mcp``: one JSON-RPC request through ``serve_one``."""

    def __init__(self, server: Server[Any], lifespan_state: Any, metrics: Metrics) -> None:
        self._server = server
        self._state = lifespan_state
        self._metrics = metrics

    async def post(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _rpc_error(None, INVALID_REQUEST, "Body is too large", 413)
        try:
            decoded = orjson.loads(body)
        except orjson.JSONDecodeError:
            return _rpc_error(None, PARSE_ERROR, "Parse error", 400)
        if not isinstance(decoded, dict):
            return _rpc_error(
                None, INVALID_REQUEST, "Body must be a single JSON-RPC request object (no batches)", 400
            )
        version = request.headers.get(VERSION_HEADER)
        modern = version is not None and version not in _HANDSHAKE
        if "id" not in decoded:
            return self._notification(decoded, version if modern else None)
        try:
            message = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return _rpc_error(
                None, INVALID_REQUEST, "Body must be a single JSON-RPC request or notification object", 400
            )
        started = time.perf_counter()
        if modern:
            status, reply = await self._modern(request, decoded, message)
        else:
            status, reply = await self._handshake(request, message, version)
        self._observe(message, reply, time.perf_counter() - started)
        return web.Response(status=status, body=orjson.dumps(reply), content_type="application/json")

    def _notification(self, decoded: dict[str, Any], modern_version: str | None) -> web.Response:
        if not isinstance(decoded.get("method"), str):
            return _rpc_error(
                None, INVALID_REQUEST, "A posted response or malformed notification is not accepted", 400
            )
        if modern_version is not None:
            rejection = unsupported_protocol_version_rejection(modern_version)
            if rejection is not None:
                return _rejection(None, rejection)
        return web.Response(status=202)

    async def _handshake(
        self, request: web.Request, message: JSONRPCRequest, version: str | None
    ) -> tuple[int, dict[str, Any]]:
        connection = Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None)
        try:
            result = await self._serve(request, message, connection)
        except Exception as error:
            data = handler_exception_to_error_data(error) or self._internal(error)
            return 200, _error_body(message.id, data)
        return 200, {"jsonrpc": "2.0", "id": message.id, "result": result}

    async def _modern(
        self, request: web.Request, decoded: dict[str, Any], message: JSONRPCRequest
    ) -> tuple[int, dict[str, Any]]:
        duplicated = find_duplicated_routing_header(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in request.raw_headers
        )
        if duplicated is not None:
            rejection = InboundLadderRejection(
                code=HEADER_MISMATCH, message=f"{duplicated} header appears more than once"
            )
            return _rejection_status(rejection), _error_body(message.id, _data(rejection))
        headers = {name.lower(): value for name, value in request.headers.items()}
        verdict = classify_inbound_request(decoded, headers=headers)
        if isinstance(verdict, InboundLadderRejection):
            return _rejection_status(verdict), _error_body(message.id, _data(verdict))
        connection = Connection.from_envelope(
            verdict.protocol_version, verdict.client_info, verdict.client_capabilities
        )
        try:
            result = await self._serve(request, message, connection)
        except Exception as error:
            if handler_exception_to_error_data(error) is None:
                self._internal(error)
            data = modern_error_data(error)
            return ERROR_CODE_HTTP_STATUS.get(data.code, 200), _error_body(message.id, data)
        return 200, {"jsonrpc": "2.0", "id": message.id, "result": result}

    async def _serve(
        self, request: web.Request, message: JSONRPCRequest, connection: Connection
    ) -> dict[str, Any]:
        exchange = _Exchange(
            transport=TransportContext(
                kind="streamable-http", can_send_request=False, headers=request.headers
            ),
            request_id=message.id,
            message_metadata=ServerMessageMetadata(request_context=request),
        )
        return await serve_one(
            self._server,
            exchange,
            message.method,
            message.params,
            connection=connection,
            lifespan_state=self._state,
        )

    @staticmethod
    def _internal(error: Exception) -> ErrorData:
        _log.error("MCP request failed: %s", type(error).__name__, exc_info=error)
        return ErrorData(code=INTERNAL_ERROR, message="Internal server error")

    def _observe(self, message: JSONRPCRequest, reply: dict[str, Any], seconds: float) -> None:
        tool = ""
        if message.method == "tools/call":
            tool = tool_label((message.params or {}).get("name"))
        result = reply.get("result")
        if "error" in reply:
            outcome = "protocol_error"
        elif isinstance(result, dict) and result.get("isError"):
            outcome = "tool_error"
        else:
            outcome = "ok"
        method = message.method if message.method in _KNOWN_METHODS else "other"
        self._metrics.observe_request(method, tool, outcome, seconds)


_KNOWN_METHODS: Final = frozenset(
    {
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


def _data(rejection: InboundLadderRejection) -> ErrorData:
    return ErrorData(code=rejection.code, message=rejection.message, data=rejection.data)


def _rejection_status(rejection: InboundLadderRejection) -> int:
    return ERROR_CODE_HTTP_STATUS.get(rejection.code, 400)


def _rejection(request_id: Any, rejection: InboundLadderRejection) -> web.Response:
    return web.Response(
        status=_rejection_status(rejection),
        body=orjson.dumps(_error_body(request_id, _data(rejection))),
        content_type="application/json",
    )


def _error_body(request_id: Any, error: ErrorData) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def _rpc_error(request_id: Any, code: int, message: str, status: int) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}),
        content_type="application/json",
    )
