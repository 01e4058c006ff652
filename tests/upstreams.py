"""Test doubles for the upstream RS, served over real HTTP on loopback.

- ``Switchboard``: a pass-through proxy to a real RS (the sandbox) that a test can take
  down (every request answers 503), make answer garbage (a 200 that is not JSON, on
  every route but ``/v1/schema``), or whose ``/v1/schema`` bodies it can rewrite. It
  records every request (path and query) it received, so a test can prove which routes
  a gateway called.
- ``broad_schema``: a synthetic compact schema body for a very broad grant
  (``connectors`` × ``streams``), served by ``schema_only_rs``.
- ``serve_app``: run an aiohttp app on an ephemeral loopback port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
from aiohttp import web

Rewrite = Callable[[dict[str, Any]], dict[str, Any]]


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


@dataclass
class Switchboard:
    upstream: str
    down: bool = False
    garbage: bool = False
    schema_rewrite: Rewrite | None = None
    seen: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [path for path, _ in self.seen]

    def data_reads(self) -> list[str]:
        """Every route called other than the schema probe."""
        return [path for path in self.paths() if path != "/v1/schema"]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.path, parse_qsl(request.query_string, keep_blank_values=True)))
        if self.down:
            return web.json_response(
                {"error": {"type": "api_error", "code": "unavailable", "message": "down for the test"}},
                status=503,
            )
        if self.garbage and request.path != "/v1/schema":
            return web.Response(text="<html>not json</html>", content_type="text/html")
        headers = {k: v for k, v in request.headers.items() if k in {"Authorization", "Accept"}}
        async with (
            aiohttp.ClientSession() as http,
            http.get(self.upstream + request.path, params=request.query, headers=headers) as answer,
        ):
            if request.path == "/v1/schema" and self.schema_rewrite is not None and answer.status == 200:
                return web.json_response(self.schema_rewrite(await answer.json()))
            return web.Response(
                body=await answer.read(), status=answer.status, content_type=answer.content_type
            )

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self.handle)
        async with serve_app(app) as url:
            yield url


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
