"""Operations: request ids, the JSON access log, health and readiness, metrics.

Contract:

- ``observe`` (outermost aiohttp middleware): gives every request an id (a sane inbound
  ``Request-Id``/``X-Request-Id`` is kept, else ``req_`` and 16 hex digits: the serving
  process's random prefix and its request count, unique without a system call), echoes it as
  ``Request-Id``, binds it to ``request_id.REQUEST_ID`` for every log line of the request,
  counts the response by route and status, and writes one JSON access line (method,
  path without query, status, milliseconds, the serving process's pid, and whatever a stage
  put under ``ACCESS_FIELDS`` on the request: the Host check, the host it refused). A path is named
  only when it is one of the gateway's routes (the metadata under a proxy's prefix by its
  pattern), else ``other``. It never logs headers or bodies.
- ``/healthz``: 200 while the process serves. ``/readyz``: 200 when the RS's ``/v1`` API
  answers (``readiness.ReadinessProbe``, cached for a few seconds), else 503 with the
  reason in ``reason``; 503 too from the moment shutdown begins (``DRAIN``; the serve
  loop keeps the listener open while requests are in flight, so a load balancer sees
  the 503 and stops routing before the port closes).
- ``observe`` also counts the requests in flight (``Drain.in_flight``; probes excluded),
  which the serve loop waits on.
- ``/metrics``: the Prometheus text exposition.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pdpp_gateway.hosted.metrics import CONTENT_TYPE, Metrics
from pdpp_gateway.hosted.readiness import ReadinessProbe
from pdpp_gateway.observe.request_id import REQUEST_ID

_access = logging.getLogger("pdpp_gateway.access")
# a request's own fields for its access line, set by a stage that has something to say of it
ACCESS_FIELDS: Final = web.RequestKey("access_fields", dict[str, str])
_SANE_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
PREFIXED_METADATA_ROUTE: Final = "/.well-known/oauth-protected-resource/{prefix}/mcp"
_ROUTES: Final = frozenset(
    {
        "/mcp",
        "/.well-known/oauth-protected-resource/mcp",
        PREFIXED_METADATA_ROUTE,
        "/connect",
        "/llms.txt",
        "/icon.svg",
        "/healthz",
        "/readyz",
        "/metrics",
    }
)
PROBES: Final = frozenset({"/healthz", "/readyz", "/metrics"})


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass
class Drain:
    """Shutdown state shared by the app and its serve loop.

    ``answer_by`` (loop time) is set when the serve loop starts draining: every call in
    flight then, and every call that arrives after, must be answered by it (``bounded``):
    ``McpEndpoint`` answers one that is still running with a JSON-RPC error saying the
    server is restarting, so no connection is closed on a call without an answer."""

    draining: bool = False
    in_flight: int = 0
    idle: asyncio.Event = field(default_factory=_set_event)  # set while nothing is in flight
    answer_by: float | None = None
    _bounds: set[asyncio.Timeout] = field(default_factory=set)

    def enter(self) -> None:
        self.in_flight += 1
        self.idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight <= 0:
            self.idle.set()

    def bound(self) -> asyncio.Timeout:
        """A deadline for one call: none while serving, ``answer_by`` once draining."""
        timeout = asyncio.timeout_at(self.answer_by)
        self._bounds.add(timeout)
        return timeout

    def unbound(self, timeout: asyncio.Timeout) -> None:
        self._bounds.discard(timeout)

    def answer_everything_by(self, when: float) -> None:
        """Start draining: every call in flight must be answered by ``when`` (loop time)."""
        self.draining = True
        self.answer_by = when
        for timeout in self._bounds:
            timeout.reschedule(when)


DRAIN: Final = web.AppKey("drain", Drain)
METRICS: Final = web.AppKey("metrics", Metrics)  # the app's metrics, for the connection guard


def observe(metrics: Metrics) -> Middleware:
    pid = os.getpid()  # once: the app is built in the worker process that serves it
    prefix = f"req_{secrets.token_hex(4)}"  # this process's; the count below tells its requests apart
    count = itertools.count(1)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        inbound = request.headers.get("Request-Id") or request.headers.get("X-Request-Id") or ""
        request_id = inbound if _SANE_ID.match(inbound) else f"{prefix}{next(count) & 0xFFFFFFFF:08x}"
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500
        drain = request.app.get(DRAIN) if request.path not in PROBES else None
        if drain is not None:
            drain.enter()
        try:
            try:
                response = await handler(request)
            except web.HTTPException as error:
                status = error.status
                error.headers["Request-Id"] = request_id
                raise
            status = response.status
            response.headers["Request-Id"] = request_id
            return response
        finally:
            if drain is not None:
                drain.leave()
            route = request.path if request.path in _ROUTES else _pattern(request)
            metrics.count_response(route, status)
            if _access.isEnabledFor(logging.INFO):  # the line's fields are built only when written
                _access.info(
                    "%s %s %s",
                    request.method,
                    route,
                    status,
                    extra={
                        "fields": {
                            "method": request.method,
                            "path": route,
                            "status": status,
                            "ms": round((time.perf_counter() - started) * 1000, 2),
                            "pid": pid,
                            **request.get(ACCESS_FIELDS, {}),
                        }
                    },
                )
            REQUEST_ID.reset(token)

    return middleware


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def readyz(probe: Callable[[], ReadinessProbe], degraded: Callable[[], dict[str, str]] = dict) -> Handler:
    """Ready when the RS's /v1 answers and the gateway is not draining. ``degraded`` names
    parts running in a fallback mode (still serving, so still ready), as ``detail``."""

    async def handler(request: web.Request) -> web.Response:
        if request.app[DRAIN].draining:
            return web.json_response(
                {"status": "draining", "reason": "the gateway is shutting down"}, status=503
            )
        reason = await probe().check()
        if reason is not None:
            return web.json_response({"status": "unready", "reason": reason}, status=503)
        detail = degraded()
        return web.json_response({"status": "ready", **({"detail": detail} if detail else {})})

    return handler


def _pattern(request: web.Request) -> str:
    """The matched route's pattern when it is one of ours (never the raw path), else ``other``."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None and resource.canonical in _ROUTES else "other"


def metrics_route(metrics: Metrics) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        response = web.Response(body=metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    return handler
