"""The HTTP door for aiohttp: ``doors``' decisions as aiohttp middlewares.

Each stage is an aiohttp middleware ``(request, handler) -> response``: mount it on an app or
chain it with ``compose``. The decisions are ``doors``' (the same on ASGI: ``asgi``); these
adapters only read the request and write the answer. Import this module explicitly (``import
mcp_gateway_middleware`` does not load aiohttp; the extra ``http`` installs it).

Contract:

- ``bearer_check(authenticate, refuse, key, rejection=R, duplicate=r)``: ``doors.admit_bearer``
  over the request's headers; the accepted caller is stored under ``key`` for the stages and
  the handler below (an MCP tool handler reads it as ``ctx.request[key]``: the SDK hands the
  aiohttp request through as the request context; ``accepted(ctx.request)`` reads the one
  keyed ``ACCEPTED``), a rejection is answered with
  ``refuse(request, rejection)`` and the handler never runs.
- ``refuse_token_kinds(kind_of, refused, refuse, key)``: the HTTP twin of ``RefuseTokenKinds``.
  ``kind_of(accepted)`` names the kind of the caller under ``key``; a refused kind, or an
  unknown one (``None``, or no caller under ``key``) while ``refuse_unknown`` holds, is
  answered with ``refuse(request, kind)``.
- ``host_check(policy, refuse=refusal_response, exempt=())``: ``hosts.HostPolicy.refusal`` of
  the request (its headers, scheme, TCP peer and raw target), answered with
  ``refuse(request, refusal)``; a path in ``exempt`` (health probes a platform calls on an
  internal host name) is not checked.
- ``shape_checks(max_body_bytes=..., refuse=..., methods=...)``: ``doors.shape_refusal`` of the
  request's method and headers, answered with ``refuse(request, refusal)``.
- ``rate_limit(limiter, caller_of, refuse)``: one token per HTTP request that reaches it,
  so it counts messages (a POST, a GET stream, a DELETE), not tool calls: limit tool calls
  with the ``LimitCalls`` tool stage. ``caller_of`` returns the caller key of a request
  (``None``: not limited here); a refused ``Decision`` is answered with
  ``refuse(request, decision)``.
- ``refusal_response(request, refusal)``, the default ``refuse``: the ``doors.Refusal`` as a
  JSON-RPC error body with its status and headers (what an MCP client surfaces).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, TypeVar, cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from mcp_gateway_middleware.doors import SPEC_METHODS, Refusal, accepts, admit_bearer, shape_refusal
from mcp_gateway_middleware.hosts import HostPolicy
from mcp_gateway_middleware.ratelimit import Decision, Limiter

__all__ = [
    "ACCEPTED",
    "Handler",
    "Stage",
    "accepted",
    "accepts",
    "bearer_check",
    "host_check",
    "rate_limit",
    "refusal_response",
    "refuse_token_kinds",
    "shape_checks",
]

A = TypeVar("A")
R = TypeVar("R")
Stage = Middleware  # what web.Application(middlewares=...) takes; compose chains it too
ACCEPTED: Final[web.RequestKey[Any]] = web.RequestKey("mcp_gateway_middleware.accepted", object)


def accepted(request: object) -> Any:
    """The caller a ``bearer_check`` keyed ``ACCEPTED`` accepted (``ctx.request`` of an MCP
    handler served from aiohttp), or ``None``."""
    return request.get(ACCEPTED) if isinstance(request, web.Request) else None


def refusal_response(request: web.Request, refusal: Refusal) -> web.Response:
    """A door's refusal as a JSON-RPC error body (``Refusal.rpc_body``) with its status and headers."""
    return web.Response(
        status=refusal.status,
        body=refusal.rpc_body(),
        content_type="application/json",
        headers=refusal.headers(),
    )


def bearer_check(
    authenticate: Callable[[str | None], Awaitable[A | R]],
    refuse: Callable[[web.Request, R], web.StreamResponse],
    key: web.RequestKey[A],
    *,
    rejection: type[R],
    duplicate: R,
) -> Stage:
    """A stage admitting only callers ``authenticate`` accepts (see the module contract)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        verdict = await admit_bearer(request.headers, authenticate, duplicate=duplicate)
        if isinstance(verdict, rejection):
            return refuse(request, verdict)
        request[key] = cast(A, verdict)  # not a rejection, so the accepted caller
        return await handler(request)

    return check


def refuse_token_kinds(
    kind_of: Callable[[A], str | None],
    refused: Iterable[str],
    refuse: Callable[[web.Request, str | None], web.StreamResponse],
    key: web.RequestKey[A],
    *,
    refuse_unknown: bool = True,
) -> Stage:
    """A stage stopping callers of a refused kind before the handler runs."""
    refused_kinds = frozenset(refused)

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        caller = request.get(key)
        kind = None if caller is None else kind_of(caller)
        if kind in refused_kinds or (kind is None and refuse_unknown):
            return refuse(request, kind)
        return await handler(request)

    return check


def host_check(
    policy: HostPolicy,
    refuse: Callable[[web.Request, Refusal], web.StreamResponse] = refusal_response,
    *,
    exempt: Iterable[str] = (),
) -> Stage:
    """A stage refusing a host or origin ``policy`` does not serve (``hosts.HostPolicy.refusal``)."""
    unchecked = frozenset(exempt)

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in unchecked:
            return await handler(request)
        refusal = policy.refusal(
            request.headers, scheme=request.scheme, peer=request.remote, target=request.raw_path
        )
        return await handler(request) if refusal is None else refuse(request, refusal)

    return check


def shape_checks(
    *,
    max_body_bytes: int,
    refuse: Callable[[web.Request, Refusal], web.StreamResponse] = refusal_response,
    media_type: str = "application/json",
    content_type: str = "application/json",
    methods: frozenset[str] = SPEC_METHODS,
) -> Stage:
    """A stage refusing what the transport spec refuses from the headers (``doors.shape_refusal``)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = shape_refusal(
            request.method,
            request.headers,
            max_body_bytes=max_body_bytes,
            media_type=media_type,
            content_type=content_type,
            methods=methods,
        )
        return await handler(request) if refusal is None else refuse(request, refusal)

    return check


Refuse = Callable[[web.Request, Decision], Awaitable[web.StreamResponse] | web.StreamResponse]


def rate_limit(
    limiter: Limiter,
    caller_of: Callable[[web.Request], str | None],
    refuse: Refuse,
    *,
    on_decision: Callable[[Decision], None] | None = None,
) -> Stage:
    """An aiohttp middleware applying ``limiter`` to each request's caller (one token per message)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        caller = caller_of(request)
        if caller is None:
            return await handler(request)
        decision = await limiter.take(caller)
        if on_decision is not None:
            on_decision(decision)
        if decision.allowed:
            return await handler(request)
        answer = refuse(request, decision)
        return answer if isinstance(answer, web.StreamResponse) else await answer

    return middleware
