"""One JSON-RPC request answered by the MCP SDK's single-request kernel, in either protocol era.

Contract (extra ``mcp``; no web framework: the caller hands in its own request object):

- ``answer_request(server, state, request_context, headers, request_id, method, params,
  route)`` runs one request through ``mcp.server.runner.serve_one`` and answers ``(HTTP
  status, the JSON-RPC reply object)``. ``request_context`` is what a handler reads as
  ``ctx.request`` (an aiohttp request, say, with the caller a door accepted on it);
  ``headers`` are the transport's. ``route`` (``classify_inbound_request``'s verdict on the
  body, the 2026-07-28 era) or ``None`` (the handshake era, whose version is
  ``handshake_version``, default the SDK's).
- Handshake era: ``initialize`` is answered, any request works without it (a born-ready
  connection), and errors ride HTTP 200 (``handshake_failure``). 2026 era: errors take their
  HTTP status from the SDK's table, 400, or 404 for an unknown method (``modern_failure``).
  An exception a handler raises that the SDK has no error for is logged with its traceback
  (server side) and answered ``-32603 Internal server error``: nothing of it leaks.
- ``modern_route(message, headers)``: the SDK's envelope checks of one 2026-07-28-era request
  (``message`` the decoded body, ``headers`` the request's header pairs, repeats included): a
  routing header (``Mcp-Method``, ``Mcp-Name``) sent more than once → an
  ``InboundLadderRejection`` ``HEADER_MISMATCH`` naming it; else ``classify_inbound_request``'s
  verdict (a route, or a rejection whose code has its status in ``ERROR_CODE_HTTP_STATUS``).
- Each exchange has no back channel (a server-to-client request raises
  ``NoBackChannelError``) and drops notifications: answers are one JSON body.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing, plainly
except ModuleNotFoundError as missing:  # test_installs_alone reads this message
    raise ModuleNotFoundError(
        "mcp_gateway_middleware.sdk_kernel needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
    ) from missing

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import modern_error_data, serve_one
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, HEADER_MISMATCH, INTERNAL_ERROR, ErrorData

__all__ = ["Reply", "answer_request", "error_reply", "handshake_failure", "modern_failure", "modern_route"]

_log = logging.getLogger(__name__)
Reply = tuple[int, dict[str, Any]]  # (HTTP status, JSON-RPC reply)


@dataclass
class _Exchange:
    """The ``DispatchContext`` of one request: no back channel, notifications dropped (JSON only)."""

    transport: TransportContext
    request_id: Any
    message_metadata: MessageMetadata
    can_send_request: bool = field(default=False, init=False)
    _cancel: anyio.Event | None = field(default=None, init=False)

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set (one request cannot be cancelled by another), so made only when asked for."""
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


async def answer_request(
    server: Server[Any],
    state: Any,
    request_context: Any,
    headers: Mapping[str, str],
    request_id: str | int,
    method: str,
    params: dict[str, Any] | None,
    route: InboundModernRoute | None,
    *,
    handshake_version: str | None = None,
) -> Reply:
    """The SDK's answer to one request (module contract)."""
    if route is None:
        connection = Connection.from_envelope(handshake_version or DEFAULT_NEGOTIATED_VERSION, None, None)
    else:
        connection = Connection.from_envelope(
            route.protocol_version, route.client_info, route.client_capabilities
        )
    exchange = _Exchange(
        transport=TransportContext(kind="streamable-http", can_send_request=False, headers=headers),
        request_id=request_id,
        message_metadata=ServerMessageMetadata(request_context=request_context),
    )
    try:
        result = await serve_one(
            server, exchange, method, params, connection=connection, lifespan_state=state
        )
    except Exception as error:
        return handshake_failure(request_id, error) if route is None else modern_failure(request_id, error)
    return 200, {"jsonrpc": "2.0", "id": request_id, "result": result}


def handshake_failure(request_id: Any, error: Exception) -> Reply:
    """A handshake-era request whose handler raised: HTTP 200 with the error."""
    data = handler_exception_to_error_data(error) or _internal(error)
    return 200, error_reply(request_id, data)


def modern_failure(request_id: Any, error: Exception) -> Reply:
    """A 2026-era request whose handler raised: the SDK's error and its HTTP status."""
    if handler_exception_to_error_data(error) is None:
        _internal(error)
    data = modern_error_data(error)
    return ERROR_CODE_HTTP_STATUS.get(data.code, 200), error_reply(request_id, data)


def error_reply(request_id: Any, error: ErrorData) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def _internal(error: Exception) -> ErrorData:
    _log.error("MCP request failed: %s", type(error).__name__, exc_info=error)
    return ErrorData(code=INTERNAL_ERROR, message="Internal server error")


def modern_route(
    message: Mapping[str, Any], headers: Iterable[tuple[str, str]]
) -> InboundModernRoute | InboundLadderRejection:
    """The SDK's verdict on one 2026-era request's envelope and routing headers (module contract)."""
    pairs = list(headers)
    duplicated = find_duplicated_routing_header(pairs)
    if duplicated is not None:
        return InboundLadderRejection(
            code=HEADER_MISMATCH, message=f"{duplicated} header appears more than once"
        )
    return classify_inbound_request(dict(message), headers={name.lower(): value for name, value in pairs})
