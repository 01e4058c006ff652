"""Streamable HTTP at ``/mcp``: stateless, JSON responses, both protocol eras.

Contract (one JSON-RPC message per POST, answered with one ``application/json`` body;
no ``Mcp-Session-Id``, no server-sent events):

- Any method but ``POST`` answers 405 with ``Allow: POST`` (no standalone ``GET``
  stream, no sessions to ``DELETE``).
- Every request passed ``inbound.header_checks`` (before the bearer check) and
  ``inbound.body_checks`` (after it): the parsed message rides on the request (``INBOUND``).
- ``McpEndpoint.post``: a notification → 202, empty. A request runs through the SDK's
  single-request kernel (``serve_one``) with this aiohttp request as the request
  context, so the server's ``context_for`` reads the caller's ``GatewayContext`` from
  it. Handshake era: ``initialize`` is answered, any request works without it
  (born-ready connection), errors ride HTTP 200. 2026 era: errors take their HTTP
  status from the SDK's table (400, or 404 for an unknown method). A plain
  ``tools/call`` takes the fast path instead (``fast_call``: the same pipeline and the
  same answer, byte for byte, without the SDK's pydantic round trip); anything it does
  not fully understand goes to ``serve_one``.
- Metrics: each answered ``/mcp`` POST is counted once by the app with the method and
  tool labels ``inbound`` put on the request (``MCP_LABELS``) and the outcome the endpoint
  put there (``MCP_OUTCOME``); a POST answered before the endpoint is ``refused``
  (method ``unparsed`` when refused before its body was read).

Where this differs from the SDK's own transports, on purpose: the SDK's handshake-era
transport answers every envelope defect with ``-32602`` and its 2026 handler answers
every one with ``-32600``, both with ``id: null``; here a defect of the envelope is
``-32600`` and a defect of ``params`` alone is ``-32602`` with the request's id, in
both eras. The SDK ignores ``q=0`` in ``Accept``; this transport honours it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
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
    InboundModernRoute,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
)

from pdpp_gateway.hosted.fast_call import FastToolCall, PlainCall
from pdpp_gateway.hosted.inbound import INBOUND, VERSION_HEADER, Inbound, Request
from pdpp_gateway.hosted.ops import DRAIN
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.wire.call_result import RETRY_AFTER_META
from pdpp_gateway.wire.codes import SERVER_RESTARTING

_log = logging.getLogger(__name__)


@dataclass
class _Exchange:
    """The ``DispatchContext`` of one POST: no back channel, notifications dropped (JSON only)."""

    transport: TransportContext
    request_id: Any
    message_metadata: MessageMetadata
    can_send_request: bool = field(default=False, init=False)
    _cancel: anyio.Event | None = field(default=None, init=False)

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set (one POST cannot be cancelled by another), so made only when asked for."""
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


RESTART_RETRY_SECONDS: Final = 2
MCP_OUTCOME: Final = web.RequestKey("mcp_outcome", str)


async def method_not_allowed(request: web.Request) -> web.Response:
    return refusal(
        405,
        "method_not_allowed",
        "Method not allowed: use POST with one JSON-RPC message; this endpoint is stateless "
        "(no SSE stream, no sessions).",
        headers={"Allow": "POST"},
    )


class McpEndpoint:
    """``POST /mcp`` after the shape and bearer checks: one JSON-RPC message."""

    def __init__(self, server: Server[Any], lifespan_state: Any, fast: FastToolCall | None = None) -> None:
        self._server = server
        self._state = lifespan_state
        self._fast = fast

    async def post(self, request: web.Request) -> web.StreamResponse:
        inbound = request[INBOUND]
        message = inbound.message
        if message is None:
            return web.Response(status=202)
        drain = request.app.get(DRAIN)
        if drain is None:
            return await self._answer(request, inbound, message)
        bound = drain.bound()
        try:
            async with bound:
                return await self._answer(request, inbound, message)
        except TimeoutError:
            if not bound.expired():
                raise
            request[MCP_OUTCOME] = "unavailable"
            return refusal(
                503,
                "server_restarting",
                f"The gateway is restarting and stopped this call before it finished. Retry in "
                f"{RESTART_RETRY_SECONDS} s: another instance answers it.",
                rpc_code=SERVER_RESTARTING,
                request_id=message.id,
                headers={"Retry-After": str(RESTART_RETRY_SECONDS)},
                retry_after_seconds=RESTART_RETRY_SECONDS,
            )
        finally:
            drain.unbound(bound)

    async def _answer(self, request: web.Request, inbound: Inbound, message: Request) -> web.StreamResponse:
        header = request.headers.get(VERSION_HEADER)
        version = inbound.modern_version or header or DEFAULT_NEGOTIATED_VERSION
        call = None if self._fast is None else self._fast.match(inbound.decoded, version)
        if call is not None:
            status, reply, body = await self._fast_answer(
                request, message.id, call, inbound.route is not None
            )
        else:
            if inbound.route is not None:
                status, reply = await self._modern(request, message, inbound.route)
            else:
                status, reply = await self._handshake(request, message, header)
            body = orjson.dumps(reply)
        request[MCP_OUTCOME] = _outcome(reply)
        response = web.Response(status=status, body=body, content_type="application/json")
        wait = _retry_after(reply)
        if wait is not None:
            response.headers["Retry-After"] = str(wait)
        return response

    async def _fast_answer(
        self, request: web.Request, request_id: Any, call: PlainCall, modern: bool
    ) -> tuple[int, dict[str, Any], bytes]:
        """A plain ``tools/call`` without the SDK's round trip (``fast_call``): same answer,
        errors mapped as the SDK path maps them (and the final encoding outside, as there)."""
        assert self._fast is not None
        try:
            result, source = await self._fast.run(request, call)
            reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
            body = self._fast.encode(reply)
            if body is None:
                reply["result"] = self._fast.sdk_shaped(source, call.version)
        except Exception as error:
            status, reply = (
                self._modern_failure(request_id, error) if modern else self._failure(request_id, error)
            )
            return status, reply, orjson.dumps(reply)
        return 200, reply, orjson.dumps(reply) if body is None else body

    async def _handshake(
        self, request: web.Request, message: Request, version: str | None
    ) -> tuple[int, dict[str, Any]]:
        connection = Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None)
        try:
            result = await self._serve(request, message, connection)
        except Exception as error:
            return self._failure(message.id, error)
        return 200, {"jsonrpc": "2.0", "id": message.id, "result": result}

    async def _modern(
        self, request: web.Request, message: Request, route: InboundModernRoute
    ) -> tuple[int, dict[str, Any]]:
        connection = Connection.from_envelope(
            route.protocol_version, route.client_info, route.client_capabilities
        )
        try:
            result = await self._serve(request, message, connection)
        except Exception as error:
            return self._modern_failure(message.id, error)
        return 200, {"jsonrpc": "2.0", "id": message.id, "result": result}

    def _failure(self, request_id: Any, error: Exception) -> tuple[int, dict[str, Any]]:
        """A handshake-era request whose handler raised: HTTP 200 with the error."""
        data = handler_exception_to_error_data(error) or self._internal(error)
        return 200, _error_body(request_id, data)

    def _modern_failure(self, request_id: Any, error: Exception) -> tuple[int, dict[str, Any]]:
        """A 2026-era request whose handler raised: the SDK's error and its HTTP status."""
        if handler_exception_to_error_data(error) is None:
            self._internal(error)
        data = modern_error_data(error)
        return ERROR_CODE_HTTP_STATUS.get(data.code, 200), _error_body(request_id, data)

    async def _serve(self, request: web.Request, message: Request, connection: Connection) -> dict[str, Any]:
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


def _retry_after(reply: dict[str, Any]) -> int | None:
    """A tool error's retry hint (the RS breaker is open), for a ``Retry-After`` header."""
    result = reply.get("result")
    meta = result.get("_meta") if isinstance(result, dict) else None
    wait = meta.get(RETRY_AFTER_META) if isinstance(meta, dict) else None
    return wait if isinstance(wait, int) and not isinstance(wait, bool) else None


def _outcome(reply: dict[str, Any]) -> str:
    result = reply.get("result")
    if "error" in reply:
        return "protocol_error"
    if isinstance(result, dict) and result.get("isError"):
        return "tool_error"
    return "ok"


def _error_body(request_id: Any, error: ErrorData) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
