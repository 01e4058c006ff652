"""Test upstreams for the hosted gateway: a counting pass-through proxy in front of the
sandbox (its RS reads and its introspection endpoint), which can also refuse the compact
schema view or rewrite the introspection ``aud``; and raw HTTP helpers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from pdpp_gateway.hosted.testing import sandbox_settings
from pdpp_gateway.settings import HostedSettings

FORWARDED = frozenset({"Authorization", "Accept", "Content-Type"})


@dataclass
class Proxy:
    url: str
    seen: list[str] = field(default_factory=list)  # "GET /v1/schema?view=compact", "POST /introspect"
    audience: Any = None  # when set: the ``aud`` every active introspection answer carries
    refuse_compact: bool = False


@asynccontextmanager
async def upstream_proxy(upstream: str, **options: Any) -> AsyncIterator[Proxy]:
    """A pass-through proxy to ``upstream`` that records every request it forwards."""
    proxy = Proxy(url="", **options)

    async def forward(request: web.Request) -> web.Response:
        proxy.seen.append(f"{request.method} {request.path_qs}")
        if proxy.refuse_compact and request.path == "/v1/schema" and "view" in request.query:
            error = {
                "type": "invalid_request_error",
                "code": "invalid_request",
                "message": "Unknown query parameter: view",
            }
            return web.json_response({"error": error}, status=400)
        headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
        async with (
            aiohttp.ClientSession() as http,
            http.request(
                request.method,
                upstream + request.path,
                params=request.query,
                headers=headers,
                data=await request.read(),
            ) as answer,
        ):
            body = await answer.read()
            status, content_type = answer.status, answer.content_type
        if request.path == "/introspect" and proxy.audience is not None and status == 200:
            document = orjson.loads(body)
            if document.get("active"):
                document["aud"] = proxy.audience
            body = orjson.dumps(document)
        return web.Response(body=body, status=status, content_type=content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    proxy.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield proxy
    finally:
        await runner.cleanup()


def proxied_settings(
    sandbox_url: str, proxy: Proxy, *, introspection: bool, **overrides: Any
) -> HostedSettings:
    """A gateway for ``sandbox_url`` whose every upstream call (RS reads, introspection)
    goes through ``proxy``."""
    values: dict[str, Any] = {"rs_internal_url": proxy.url}
    if introspection:
        values |= {"introspection_url": f"{proxy.url}/introspect", "issuer": sandbox_url}
    values.update(overrides)
    return sandbox_settings(sandbox_url, introspection=introspection, **values)


async def raw_http(url: str, head: bytes, body_parts: list[bytes], *, pause: float = 0.0) -> bytes:
    """Send ``head`` then each of ``body_parts`` (``pause`` seconds apart) on one TCP
    connection and return what the server answered before closing (or within 10 s)."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    try:
        writer.write(head)
        for part in body_parts:
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
            writer.write(part)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), timeout=10)
    finally:
        writer.close()
