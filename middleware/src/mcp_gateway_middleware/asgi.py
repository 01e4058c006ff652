"""The HTTP door for ASGI (the MCP SDK's Streamable HTTP app among them): ``doors``' decisions.

Contract (plain ASGI: this module imports no framework and needs no extra):

- ``McpDoor(app, max_body_bytes=..., authenticate=..., limiter=..., caller_key=..., methods=...)`` wraps an
  ASGI app. On each HTTP request, in this order: ``doors.shape_refusal`` (method and headers per
  the transport spec); when ``authenticate`` is given, ``doors.admit_bearer`` (``authenticate``
  answers the accepted caller or a ``doors.Refusal``; two ``Authorization`` headers are refused
  with ``duplicate``); when ``limiter`` is given too, one token of ``caller_key(caller)``'s
  bucket per HTTP message (``None``: not limited) (a refused ``Decision`` is a 429 with ``Retry-After``). The first refusal is
  answered as a JSON-RPC error body (``Refusal.rpc_body``) with its status and headers, and the
  app never sees the request. Other scopes (``lifespan``, ``websocket``) pass through.
- The accepted caller reaches the tool handler in the ASGI scope's ``state`` under ``ACCEPTED``:
  an MCP handler reads it with ``accepted(ctx.request)`` (the SDK hands its Starlette request
  through as the request context; ``None`` over stdio or without a door).
- ``AsgiHeaders(scope)`` is ``doors.Headers`` over an ASGI scope's raw headers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from mcp_gateway_middleware.doors import (
    MAX_BODY_BYTES,
    SPEC_METHODS,
    TWO_CREDENTIALS,
    Refusal,
    admit_bearer,
    rate_refusal,
    shape_refusal,
)
from mcp_gateway_middleware.ratelimit import Limiter

__all__ = ["ACCEPTED", "AsgiApp", "AsgiHeaders", "Authenticate", "McpDoor", "accepted", "send_refusal"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Authenticate = Callable[[str | None], Awaitable[object]]  # the accepted caller, or a Refusal

ACCEPTED: Final = "mcp_gateway_middleware.accepted"


class AsgiHeaders:
    """``doors.Headers`` over an ASGI scope's headers (names compared case-insensitively)."""

    def __init__(self, scope: Scope) -> None:
        self._pairs = [
            (name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in scope["headers"]
        ]

    def get(self, name: str, /) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self._pairs if key == wanted), None)

    def getall(self, name: str, default: list[str], /) -> list[str]:
        wanted = name.lower()
        return [value for key, value in self._pairs if key == wanted] or default


def accepted(request: object) -> Any:
    """The caller ``McpDoor`` accepted for this request (``ctx.request`` of an MCP handler), or ``None``."""
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    return state.get(ACCEPTED) if isinstance(state, dict) else None


class McpDoor:
    """ASGI middleware: the shape check, the bearer check and the HTTP rate limit (module contract)."""

    def __init__(
        self,
        app: AsgiApp,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        authenticate: Authenticate | None = None,
        duplicate: Refusal = TWO_CREDENTIALS,
        limiter: Limiter | None = None,
        caller_key: Callable[[Any], str | None] = str,
        methods: frozenset[str] = SPEC_METHODS,
    ) -> None:
        self._app = app
        self._methods = methods
        self._max_body_bytes = max_body_bytes
        self._authenticate = authenticate
        self._duplicate = duplicate
        self._limiter = limiter
        self._caller_key = caller_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._refusal(scope)
            if refusal is not None:
                await send_refusal(send, refusal)
                return
        await self._app(scope, receive, send)

    async def _refusal(self, scope: Scope) -> Refusal | None:
        headers = AsgiHeaders(scope)
        refusal = shape_refusal(
            scope["method"], headers, max_body_bytes=self._max_body_bytes, methods=self._methods
        )
        if refusal is not None or self._authenticate is None:
            return refusal
        caller = await admit_bearer(headers, self._authenticate, duplicate=self._duplicate)
        if isinstance(caller, Refusal):
            return caller
        scope.setdefault("state", {})[ACCEPTED] = caller
        key = self._caller_key(caller)
        if self._limiter is None or key is None:
            return None
        decision = await self._limiter.take(key)
        return None if decision.allowed else rate_refusal(decision.retry_after_seconds)


async def send_refusal(send: Send, refusal: Refusal) -> None:
    """Answer with ``refusal``: its status, its headers, its JSON-RPC error body."""
    body = refusal.rpc_body()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in refusal.headers().items()
    ]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
