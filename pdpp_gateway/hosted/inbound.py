"""Reading one ``POST /mcp``: its headers, then its body, each refused in the door's words.

Contract:

- ``header_checks`` runs BEFORE the bearer check and decides everything visible in the
  headers, so such a malformed request never costs an upstream call (no RS probe, no
  token introspection), in this order (the generic ``mcp_gateway_middleware.http.shape_checks`` in
  this door's words, after the protocol version):

  1. an ``MCP-Protocol-Version`` this server does not speak → 400 ``-32022`` with
     ``data.supported`` (what ``server/discover`` lists) and ``data.requested``; its id
     is the request's when the body arrived whole with the headers and is small
     (``ID_PEEK_BYTES``), else ``null``: no body is waited for, nor a large one read,
     before the bearer is accepted;
  2. ``Accept`` must admit ``application/json`` with a non-zero quality (the most
     specific matching range decides: ``application/json;q=0, */*`` refuses) → 406;
  3. ``Content-Type`` must be ``application/json`` → 415;
  4. ``Content-Encoding``, when present, must be ``identity`` → 415 (the gateway never
     decompresses a request: no decompression bomb, no buffer it did not size);
  5. a declared body over the cap → 413.

- ``body_checks`` runs AFTER the bearer check (an unauthenticated caller never makes
  the gateway read, buffer or parse a body):

  1. the body is read within ``body_timeout`` seconds (a client that stalls mid-body
     gets 408 and the connection is closed) and over the cap while reading (chunked)
     → 413;
  2. one JSON object: unparsable → 400 ``-32700``; then the library's envelope check
     (``mcp_gateway_middleware.envelope.envelope_fault``) in this door's words: a batch, a
     posted response, or an envelope without ``"jsonrpc": "2.0"``, a string ``method`` or a
     valid ``id`` → 400 ``-32600``; ``params`` that is not an object → 400 ``-32602``; then params of a shape the SDK
     would refuse (``wire.params.params_problem``: ``tools/call`` without a string
     ``name`` or with ``arguments`` that is not an object, ``resources/read`` without a
     string ``uri``) → 400 ``-32602`` (the id echoed when it is a valid one: JSON-RPC
     2.0 §5 keeps ``null`` for requests whose id could not be read);
  3. era by ``MCP-Protocol-Version``: absent or a handshake version (2024-11-05 …
     2025-11-25) → the handshake era. 2026-07-28 → the 2026 rules: routing headers
     must not repeat and must match the body (``Mcp-Method``, ``Mcp-Name``), the
     ``_meta`` envelope must be complete (the library's ``sdk_kernel.modern_route``: the
     SDK's ``classify_inbound_request`` ladder and status table), in this door's words.

  Every refusal is a JSON-RPC error object (``refusals``).
  The parsed message rides on the request (``INBOUND``) to the endpoint
  (``transport.McpEndpoint``), with its metric labels (``MCP_LABELS``: method, tool).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    InboundModernRoute,
)
from mcp_gateway_middleware.doors import Refusal
from mcp_gateway_middleware.envelope import envelope_fault, valid_id
from mcp_gateway_middleware.http import shape_checks
from mcp_gateway_middleware.sdk_kernel import modern_route
from mcp_types import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCNotification,
)
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from pdpp_gateway.hosted.http_server import END_CONNECTION
from pdpp_gateway.hosted.metrics import tool_label
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.wire.params import params_problem

_ECHOABLE: Final = re.compile(r"[A-Za-z0-9.-]{1,16}")
NOT_ECHOED: Final = "(not shown: not a version string)"
VERSION_HEADER: Final = "MCP-Protocol-Version"
_HANDSHAKE: Final = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
_SUPPORTED: Final = frozenset(SUPPORTED_PROTOCOL_VERSIONS)
_VERSION_SHAPE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")


_NOT_A_REQUEST: Final = (
    "Invalid request: the body must be one JSON-RPC 2.0 request or notification object "
    '(with "jsonrpc": "2.0", a string method and a string or integer id)'
)


_FAULT_WORDS: Final = {  # the library's envelope faults in this door's words (else _NOT_A_REQUEST)
    "batch": f"{_NOT_A_REQUEST} (no batches).",
    "params": "Invalid params: params must be a JSON object (or left out).",
}


@dataclass(frozen=True, slots=True)
class Request:
    """A JSON-RPC request that passed the shape checks, which are exactly what the SDK's
    ``JSONRPCRequest`` model checks (so building that model here would only cost time)."""

    id: str | int
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Inbound:
    """A POST body that passed every shape check."""

    decoded: dict[str, Any]
    message: Request | None  # None: a notification
    modern_version: str | None  # the 2026-era MCP-Protocol-Version, else None
    route: InboundModernRoute | None  # the 2026-era envelope, for requests


INBOUND: Final = web.RequestKey("mcp_inbound", Inbound)

# a body this small that arrived with its headers is read for its id by a refusal made from the headers
ID_PEEK_BYTES: Final = 8_192
MCP_LABELS: Final = web.RequestKey("mcp_labels", tuple[str, str])  # (method, tool) metric labels


def header_checks(max_body_bytes: int) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """The checks that need only the headers (run before the bearer check): the protocol
    version, then the generic shape stage in this door's words."""
    texts = {
        "not_acceptable": "Not acceptable: this endpoint answers application/json only. Send "
        "Accept: application/json, text/event-stream.",
        "unsupported_media_type": "Unsupported media type: send one JSON-RPC message with "
        "Content-Type: application/json.",
        "unsupported_content_encoding": "Unsupported Content-Encoding: send the JSON body identity-encoded "
        "(no Content-Encoding header); compressed request bodies are not accepted.",
    }

    def refuse(request: web.Request, refused: Refusal) -> web.Response:
        if refused.status == 413:
            return _too_large(max_body_bytes)
        return refusal(refused.status, refused.code, texts.get(refused.code, refused.message))

    shape = shape_checks(max_body_bytes=max_body_bytes, refuse=refuse)

    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        requested = request.headers.get(VERSION_HEADER)
        if requested is not None and requested not in _SUPPORTED:
            return _unsupported_version(requested, await _arrived_id(request))
        return await shape(request, handler)

    return check


def body_checks(
    max_body_bytes: int, body_timeout: float
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """Read and check the body (run after the bearer check)."""

    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.content.is_eof():  # the whole body has arrived: reading it cannot stall
                body = await request.read()
            else:
                async with asyncio.timeout(body_timeout):
                    body = await request.read()
        except TimeoutError:
            response = refusal(
                408,
                "request_timeout",
                f"The request body did not arrive within {body_timeout:g} s; the connection is closed. "
                "Send the whole body promptly on a new connection.",
                headers={"Connection": "close"},
            )
            response.force_close()
            response[END_CONNECTION] = True
            return response
        except web.HTTPRequestEntityTooLarge:
            return _too_large(max_body_bytes)
        inbound = parse_inbound(body, request)
        if isinstance(inbound, web.Response):
            return inbound
        request[INBOUND] = inbound
        request[MCP_LABELS] = _labels(inbound)
        return await handler(request)

    return check


def parse_inbound(body: bytes, request: web.Request) -> Inbound | web.Response:
    """The shape ladder over one POST body (body steps 2 and 3 of the module contract)."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return refusal(
            400,
            "parse_error",
            "Parse error: the body is not valid JSON. Send one JSON-RPC 2.0 object.",
            rpc_code=PARSE_ERROR,
        )
    fault = envelope_fault(decoded)
    if fault is not None:
        words = _FAULT_WORDS.get(fault.reason, _NOT_A_REQUEST)
        return refusal(400, fault.code, words, rpc_code=fault.rpc_code, request_id=fault.request_id)
    notification = "id" not in decoded
    version = request.headers.get(VERSION_HEADER)
    modern = version if version is not None and version not in _HANDSHAKE else None
    if notification:
        try:
            JSONRPCNotification.model_validate(decoded)
        except ValidationError:
            return _invalid(None, _NOT_A_REQUEST)
        return Inbound(decoded, None, modern, None)
    message = Request(decoded["id"], decoded["method"], decoded.get("params"))
    problem = params_problem(message.method, message.params)
    if problem is not None:
        return refusal(400, "invalid_params", problem, rpc_code=INVALID_PARAMS, request_id=message.id)
    if modern is None:
        return Inbound(decoded, message, None, None)
    verdict = modern_route(decoded, request.headers.items())
    if isinstance(verdict, InboundLadderRejection):
        return _rejection(message.id, verdict)
    return Inbound(decoded, message, modern, verdict)


def request_id_of(request: web.Request) -> str | int | None:
    """The id of the JSON-RPC request ``body_checks`` read (``None``: a notification, or a
    refusal before the body was read), for a later stage's refusal to answer with."""
    inbound = request.get(INBOUND)
    return inbound.message.id if inbound is not None and inbound.message is not None else None


def _labels(inbound: Inbound) -> tuple[str, str]:
    if inbound.message is None:
        return "notification", ""
    method = inbound.message.method
    tool = tool_label((inbound.message.params or {}).get("name")) if method == "tools/call" else ""
    return (method if method in _KNOWN_METHODS else "other"), tool


def _too_large(max_body_bytes: int) -> web.Response:
    return refusal(
        413,
        "request_too_large",
        f"The body is larger than {max_body_bytes} bytes. Send a smaller request (one message, no padding).",
    )


def _invalid(request_id: Any, message: str) -> web.Response:
    return refusal(400, "invalid_request", message, rpc_code=INVALID_REQUEST, request_id=request_id)


async def _arrived_id(request: web.Request) -> Any:
    """The JSON-RPC id of a body that has already arrived whole and is at most
    ``ID_PEEK_BYTES`` long, so a refusal made from the headers still names the request it
    answers; ``None`` otherwise (this never waits for a body, nor reads a large one, before
    the bearer check)."""
    length = request.content_length
    if length is None or length > ID_PEEK_BYTES or not request.content.is_eof():
        return None
    try:
        message = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if valid_id(found) else None


def _unsupported_version(version: str, request_id: Any) -> web.Response:
    """400, as the SDK words it at the stdio door: ``data.supported``
    lists what ``server/discover`` lists (the 2026-era versions) and ``data.requested``
    echoes the value as sent when it could be a version of any shape (at most 16 letters,
    digits, dots and hyphens: ``v999.0.0``, ``latest``); anything else, which could be a
    credential put in the wrong header, is never reflected: ``NOT_ECHOED``, still a string
    as the schema wants. The message quotes it only when it is shaped like a version (a
    date) and names the handshake era's versions."""
    supported = list(MODERN_PROTOCOL_VERSIONS)
    shaped = _VERSION_SHAPE.fullmatch(version) is not None
    shown = f" {version!r}" if shaped else " (not a YYYY-MM-DD version)"
    return refusal(
        400,
        "unsupported_protocol_version",
        f"Unsupported MCP-Protocol-Version{shown}. Send {', '.join(supported)} with every request, or "
        f"use the initialize handshake ({', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}) and leave the header "
        "out before it.",
        rpc_code=UNSUPPORTED_PROTOCOL_VERSION,
        request_id=request_id,
        supported=supported,
        requested=version if _ECHOABLE.fullmatch(version) else NOT_ECHOED,
    )


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


_LADDER_CODES: Final = {HEADER_MISMATCH: "header_mismatch", INVALID_PARAMS: "invalid_params"}


def _rejection(request_id: Any, rejection: InboundLadderRejection) -> web.Response:
    """A 2026-era ladder rejection: the SDK's code, status and message, our typed data."""
    extra = rejection.data if isinstance(rejection.data, dict) else {}
    return refusal(
        ERROR_CODE_HTTP_STATUS.get(rejection.code, 400),
        _LADDER_CODES.get(rejection.code, "invalid_request"),
        f"{rejection.message[:1].upper()}{rejection.message[1:]}. Send routing headers that match the body "
        "(Mcp-Method, Mcp-Name, once each) and the complete _meta envelope.",
        rpc_code=rejection.code,
        request_id=request_id,
        **extra,
    )
