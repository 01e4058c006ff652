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
  it (the library's ``mcp_gateway_middleware.sdk_kernel``, which the library's own aiohttp
  endpoint uses too). Handshake era: ``initialize`` is answered, any request works without it
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

from typing import Any, Final

import orjson
from aiohttp import web
from mcp.server import Server
from mcp_gateway_middleware.sdk_kernel import answer_request, handshake_failure, modern_failure
from mcp_types import DEFAULT_NEGOTIATED_VERSION

from pdpp_gateway.hosted.fast_call import FastToolCall, PlainCall
from pdpp_gateway.hosted.inbound import INBOUND, VERSION_HEADER, Inbound, Request
from pdpp_gateway.hosted.ops import DRAIN
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.wire.call_result import RETRY_AFTER_META
from pdpp_gateway.wire.codes import SERVER_RESTARTING

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
            status, reply = await answer_request(
                self._server,
                self._state,
                request,
                request.headers,
                message.id,
                message.method,
                message.params,
                inbound.route,
                handshake_version=header,
            )
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
                modern_failure(request_id, error) if modern else handshake_failure(request_id, error)
            )
            return status, reply, orjson.dumps(reply)
        return 200, reply, orjson.dumps(reply) if body is None else body


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
