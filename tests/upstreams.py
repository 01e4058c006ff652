"""Test doubles for the upstream RS, served over real HTTP on loopback.

- ``serve_app``: run an aiohttp app on an ephemeral loopback port (every test server here
  and in the tests goes through it).
- ``Switchboard``: the one recording pass-through proxy to a real RS and its
  authorization server (the sandbox). It records every request it received (method,
  path, query), so a test can prove which routes a gateway called, and a test can take
  it down (every request answers 503), make it answer garbage (a 200 that is not JSON,
  on every route but ``/v1/schema``), rewrite its ``/v1/schema`` bodies, refuse the
  compact schema view (400 ``invalid_request``, as an RS that does not know
  ``view=compact``) or rewrite the ``aud`` of every active introspection answer. It keeps
  each request's W3C ``traceparent`` header too (``traceparents``).
  ``upstream_proxy(upstream, **options)`` serves one for the block.
  A ``Fault`` set on it is injected into every ``/v1`` read but the schema probe: a delay
  before answering, a status, every access token refused (401 ``context.active_false``), a
  connection reset, malformed JSON, an HTML page, an
  oversized body, or a body cut short of its declared length.
- ``proxied_settings``: a hosted gateway whose every upstream call goes through a proxy.
- ``raw_http``: send raw bytes on one TCP connection and read the answer;
  ``raw_exchange``: send bytes and read one answer (its head, then ``Content-Length`` bytes).
- ``broad_schema``: a synthetic compact schema body for a very broad grant
  (``connectors`` × ``streams``), served by ``schema_only_rs``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

import aiohttp
import orjson
from aiohttp import web

from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.settings import HostedSettings

Rewrite = Callable[[dict[str, Any]], dict[str, Any]]
FORWARDED = frozenset({"Authorization", "Accept", "Content-Type"})


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


class Seen(NamedTuple):
    method: str
    path: str
    query: list[tuple[str, str]]
    path_qs: str

    def line(self) -> str:
        return f"{self.method} {self.path_qs}"


@dataclass(frozen=True)
class Fault:
    """One way an upstream can fail, injected by ``Switchboard`` into ``/v1`` reads but the schema probe."""

    kind: str  # delay | status | token_refused | reset | malformed | html | oversized | truncated
    value: float = 0  # seconds for delay, status code for status, bytes for oversized

    async def answer(self, request: web.Request) -> web.StreamResponse | None:
        """The faulty answer, or ``None`` to pass the request on (after a delay)."""
        if self.kind == "delay":
            await asyncio.sleep(self.value)
            return None
        if self.kind == "status":
            envelope = {"type": "api_error", "code": "injected", "message": "injected fault"}
            return web.json_response({"error": envelope}, status=int(self.value))
        if self.kind == "token_refused":  # the RS refusing every access token as inactive
            envelope = {"type": "authentication_error", "code": "context.active_false", "message": "inactive"}
            return web.json_response({"error": envelope}, status=401)
        if self.kind == "reset":
            assert request.transport is not None
            request.transport.abort()
            return web.Response()  # never sent: the connection is gone
        if self.kind == "malformed":
            return web.Response(body=b'{"data": [', content_type="application/json")
        if self.kind == "html":
            return web.Response(text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if self.kind == "oversized":
            return web.Response(
                body=b'{"data": "' + b"x" * int(self.value) + b'"}', content_type="application/json"
            )
        if self.kind == "truncated":
            response = web.StreamResponse(
                headers={"Content-Type": "application/json", "Content-Length": "5000"}
            )
            await response.prepare(request)
            await response.write(b'{"data": [')
            assert request.transport is not None
            request.transport.abort()
            return response
        raise ValueError(f"unknown fault {self.kind}")


@dataclass
class Switchboard:
    upstream: str
    down: bool = False
    garbage: bool = False
    schema_rewrite: Rewrite | None = None
    refuse_compact: bool = False
    audience: Any = None  # when set: the ``aud`` every active introspection answer carries
    fault: Fault | None = None  # injected into every ``/v1`` read but ``/v1/schema``
    url: str = ""  # set while ``serve`` runs
    seen: list[Seen] = field(default_factory=list)
    traceparents: list[str | None] = field(default_factory=list)  # of each request, in order

    def paths(self) -> list[str]:
        return [entry.path for entry in self.seen]

    def lines(self) -> list[str]:
        """Every request as ``"GET /v1/schema?view=compact"``, ``"POST /introspect"``."""
        return [entry.line() for entry in self.seen]

    def data_reads(self) -> list[str]:
        """Every route called other than the schema probe."""
        return [path for path in self.paths() if path != "/v1/schema"]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = parse_qsl(request.query_string, keep_blank_values=True)
        self.seen.append(Seen(request.method, request.path, query, request.path_qs))
        self.traceparents.append(request.headers.get("traceparent"))
        if self.down:
            return web.json_response(
                {"error": {"type": "api_error", "code": "unavailable", "message": "down for the test"}},
                status=503,
            )
        if self.fault is not None and request.path.startswith("/v1/") and request.path != "/v1/schema":
            faulty = await self.fault.answer(request)
            if faulty is not None:
                return faulty
        if self.garbage and request.path != "/v1/schema":
            return web.Response(text="<html>not json</html>", content_type="text/html")
        if self.refuse_compact and request.path == "/v1/schema" and "view" in request.query:
            error = {
                "type": "invalid_request_error",
                "code": "invalid_request",
                "message": "Unknown query parameter: view",
            }
            return web.json_response({"error": error}, status=400)
        headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
        sent = await request.read()
        async with (
            aiohttp.ClientSession() as http,
            http.request(
                request.method,
                self.upstream + request.path,
                params=request.query,
                headers=headers,
                data=sent or None,
            ) as answer,
        ):
            body = await answer.read()
            status, content_type = answer.status, answer.content_type
            kept = {"Request-Id": answer.headers["Request-Id"]} if "Request-Id" in answer.headers else None
        if request.path == "/v1/schema" and self.schema_rewrite is not None and status == 200:
            return web.json_response(self.schema_rewrite(orjson.loads(body)))
        if request.path == "/introspect" and self.audience is not None and status == 200:
            document = orjson.loads(body)
            if document.get("active"):
                document["aud"] = self.audience
            body = orjson.dumps(document)
        return web.Response(body=body, status=status, content_type=content_type, headers=kept)

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        async with serve_app(app) as url:
            self.url = url
            yield url


@asynccontextmanager
async def upstream_proxy(upstream: str, **options: Any) -> AsyncIterator[Switchboard]:
    """A recording ``Switchboard`` in front of ``upstream``, served for the block."""
    board = Switchboard(upstream, **options)
    async with board.serve():
        yield board


def proxied_settings(
    sandbox_url: str, proxy: Switchboard, *, introspection: bool, **overrides: Any
) -> HostedSettings:
    """A gateway for ``sandbox_url`` whose every upstream call (RS reads, introspection)
    goes through ``proxy``."""
    values: dict[str, Any] = {"rs_internal_url": proxy.url}
    if introspection:
        values |= {"introspection_url": f"{proxy.url}/introspect", "issuer": sandbox_url}
    values.update(overrides)
    return sandbox_settings(sandbox_url, introspection=introspection, **values)


async def raw_http(url: str, head: bytes, body_parts: list[bytes]) -> bytes:
    """Send ``head`` then each of ``body_parts`` on one TCP connection and return what the
    server answered before closing (or within 10 s)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    try:
        writer.write(head)
        for part in body_parts:
            await writer.drain()
            writer.write(part)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), timeout=10)
    finally:
        writer.close()


class RawAnswer(NamedTuple):
    status: int
    head: bytes  # status line and headers, as sent
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


async def raw_exchange(url: str, data: bytes, *, seconds: float = 10) -> RawAnswer:
    """Send ``data`` on one TCP connection to ``url``'s host and port and read one answer
    (within ``seconds``), without waiting for the connection to end."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(seconds):
            head = (await reader.readuntil(b"\r\n\r\n"))[:-4]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length)
    finally:
        writer.close()
    return RawAnswer(int(head.split(b" ", 2)[1]), head, body)


_SHARED = ("messages", "contacts", "calendar_events", "documents", "payments")
_OWN = (
    "listening_history",
    "purchase_orders",
    "saved_items",
    "search_queries",
    "watch_history",
    "location_visits",
    "workout_sessions",
    "support_tickets",
    "subscriptions",
    "device_events",
)


def broad_stream_names(connector: int, streams: int) -> list[str]:
    names = [*_SHARED, *(f"{name}_{connector:02d}" for name in _OWN)]
    return names[:streams] + [f"extra_stream_{connector:02d}_{i}" for i in range(streams - len(names))]


def broad_schema(connectors: int = 40, streams: int = 15) -> dict[str, Any]:
    """A compact ``/v1/schema`` body for a client grant over ``connectors`` × ``streams``."""
    entries = []
    for c in range(connectors):
        key = f"provider_{c:02d}"
        entries.append(
            {
                "object": "connector",
                "source": {"kind": "connector", "id": f"https://registry.example/connectors/{key}"},
                "connector_key": key,
                "connector_id": key,
                "stream_count": streams,
                "granted_connections": [{"connection_id": f"cin_{key}_main", "display_name": f"Account {c}"}],
                "streams": [
                    {
                        "name": name,
                        "primary_key": ["id"],
                        "cursor_field": "updated_at",
                        "record_count": 100 + c,
                        "field_capabilities": {
                            "id": "t=string",
                            "title": "t=string,lex,sem",
                            "updated_at": "t=string,r=gte|gt|lte|lt,a=group_by_time",
                        },
                        "expand_capabilities": [],
                    }
                    for name in broad_stream_names(c, streams)
                ],
            }
        )
    return {
        "object": "schema",
        "bearer": {"token_kind": "client", "scope": "grant", "grant_id": "grt_broad", "client_id": "cli_x"},
        "detail": "compact",
        "connector_count": connectors,
        "stream_count": connectors * streams,
        "connectors": entries,
    }


@asynccontextmanager
async def schema_only_rs(body: dict[str, Any]) -> AsyncIterator[str]:
    """An RS whose ``/v1/schema`` answers ``body`` (any other route: 404)."""

    async def schema(request: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/v1/schema", schema)
    async with serve_app(app) as url:
        yield url
