"""An MCP SDK ``Server`` served over Streamable HTTP by aiohttp, behind the library's door.

Contract (extras ``mcp`` and ``http``):

- ``mcp_app(server, path="/mcp", host="127.0.0.1", authenticate=..., limiter=..., caller_key=...)``
  answers an ``aiohttp.web.Application``. Its door, in order: on a loopback ``host``, the
  DNS-rebinding guard (``http.host_check`` of ``hosts.LOOPBACK_POLICY``: a foreign ``Host`` 421,
  ``Origin`` 403, as the SDK's own app does); ``http.shape_checks`` (``POST`` only: the
  endpoint is stateless, so a ``GET`` stream or a ``DELETE`` is a 405), ``http.bearer_check``
  when ``authenticate`` is given (it answers the caller or a ``doors.Refusal``; the caller is
  stored under ``http.ACCEPTED``: ``http.accepted(ctx.request)`` in a handler), then
  ``http.rate_limit`` over ``caller_key(caller)`` when ``limiter`` is given (one token per
  message). Every refusal is a JSON-RPC error body (``http.refusal_response``).
- ``POST``: the body is one JSON-RPC message (capped at ``max_body_bytes`` while read → 413).
  Not JSON → 400 ``-32700``; a faulty envelope (``envelope.envelope_fault``: not one request or
  notification object → ``-32600``, ``params`` not an object → ``-32602``) → 400, answering the
  request's id when it could be read; a notification → 202. A request with an ``MCP-Protocol-Version`` of the 2026-07-28 era goes
  through the SDK's envelope checks (``sdk_kernel.modern_route``: a routing header sent twice,
  then ``classify_inbound_request``; a rejection keeps the SDK's
  code and status); then ``sdk_kernel.answer_request`` answers it, one JSON body, both eras.
- The server's lifespan is entered once, when the app starts.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing, plainly
except ModuleNotFoundError as missing:  # test_installs_alone reads this message
    raise ModuleNotFoundError(
        "mcp_gateway_middleware.sdk_aiohttp needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
    ) from missing

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from aiohttp import web
from mcp.server import Server
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, InboundLadderRejection
from mcp_types import PARSE_ERROR, ErrorData
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_gateway_middleware.asgi import Authenticate
from mcp_gateway_middleware.doors import MAX_BODY_BYTES, TWO_CREDENTIALS, Refusal, rate_refusal
from mcp_gateway_middleware.envelope import envelope_fault
from mcp_gateway_middleware.hosts import LOOPBACK, LOOPBACK_POLICY
from mcp_gateway_middleware.http import (
    ACCEPTED,
    Stage,
    bearer_check,
    host_check,
    rate_limit,
    refusal_response,
    shape_checks,
)
from mcp_gateway_middleware.ratelimit import Decision, Limiter
from mcp_gateway_middleware.sdk_kernel import answer_request, error_reply, modern_route

__all__ = ["mcp_app"]

_STATE: Final = web.AppKey("mcp_gateway_middleware.lifespan_state", object)
_HANDSHAKE: Final = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
VERSION_HEADER: Final = "MCP-Protocol-Version"


def mcp_app(
    server: Server[Any],
    *,
    path: str = "/mcp",
    host: str = "127.0.0.1",
    authenticate: Authenticate | None = None,
    limiter: Limiter | None = None,
    caller_key: Callable[[Any], str | None] = str,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> web.Application:
    """``server`` at ``path`` behind the door (module contract)."""
    stages: list[Stage] = [host_check(LOOPBACK_POLICY)] if host in LOOPBACK else []
    stages.append(shape_checks(max_body_bytes=max_body_bytes, methods=frozenset({"POST"})))
    if authenticate is not None:
        stages.append(
            bearer_check(
                authenticate, refusal_response, ACCEPTED, rejection=Refusal, duplicate=TWO_CREDENTIALS
            )
        )
        if limiter is not None:
            stages.append(rate_limit(limiter, lambda request: caller_key(request[ACCEPTED]), _refuse_rate))
    app = web.Application(middlewares=stages, client_max_size=max_body_bytes)

    async def lifespan(app: web.Application) -> AsyncIterator[None]:
        async with server.lifespan(server) as state:
            app[_STATE] = state
            yield

    async def post(request: web.Request) -> web.Response:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return refusal_response(
                request, Refusal(413, "request_too_large", f"The body is larger than {max_body_bytes} bytes.")
            )
        status, reply = await _answer(server, request.app[_STATE], request, body)
        if reply is None:
            return web.Response(status=status)  # a notification: accepted, nothing to answer
        return web.Response(status=status, body=json.dumps(reply).encode(), content_type="application/json")

    app.cleanup_ctx.append(lifespan)
    app.router.add_post(path, post)
    return app


def _refuse_rate(request: web.Request, decision: Decision) -> web.Response:
    return refusal_response(request, rate_refusal(decision.retry_after_seconds))


async def _answer(
    server: Server[Any], state: Any, request: web.Request, body: bytes
) -> tuple[int, dict[str, Any] | None]:
    try:
        message = json.loads(body)
    except ValueError:
        return 400, error_reply(
            None, ErrorData(code=PARSE_ERROR, message="Parse error: send one JSON-RPC 2.0 object.")
        )
    fault = envelope_fault(message)
    if fault is not None:
        return 400, error_reply(
            fault.request_id, ErrorData(code=fault.rpc_code, message=_FAULTS[fault.reason])
        )
    if "id" not in message:
        return 202, None
    version = request.headers.get(VERSION_HEADER)
    route = None
    if version is not None and version not in _HANDSHAKE:
        verdict = modern_route(message, request.headers.items())
        if isinstance(verdict, InboundLadderRejection):
            error = ErrorData(code=verdict.code, message=verdict.message, data=verdict.data)
            return ERROR_CODE_HTTP_STATUS.get(verdict.code, 400), error_reply(message["id"], error)
        route = verdict
    return await answer_request(
        server,
        state,
        request,
        request.headers,
        message["id"],
        message["method"],
        message.get("params"),
        route,
        handshake_version=version,
    )


_FAULTS: Final = {
    "batch": "Invalid request: send one JSON-RPC 2.0 object (no batches).",
    "envelope": 'Invalid request: send one JSON-RPC 2.0 object ("jsonrpc": "2.0", a string method, '
    "an integer or string id).",
    "params": "Invalid params: params must be a JSON object (or left out).",
}
