"""Run the hosted gateway in-process on a real socket (tests, the demo, benchmarks).

Contract:

- ``async with start_gateway(settings) as url:`` serves the app on a socket bound before
  the app is built (so ``port=0`` still yields a Host allow-list with the real port) and
  yields the ``/mcp`` URL; the block's end shuts it down gracefully. ``public_self=True``
  makes that loopback origin the public one (the demo: gateway and RS on two ports);
  ``demo`` is what the connect page and llms.txt say about the demo (its token, cache root);
  ``registry`` the tools it serves.
- ``mcp_http(url, token, era)``: the SDK's own Streamable HTTP client, with a bearer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

import httpx2
from aiohttp import web
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pdpp_gateway.hosted.app import create_app
from pdpp_gateway.hosted.connections import ConnectionLimits
from pdpp_gateway.hosted.http_server import GatewayRunner
from pdpp_gateway.hosted.packages import PackageResolver
from pdpp_gateway.hosted.pages import PageFacts
from pdpp_gateway.hosted.serve import bind_socket
from pdpp_gateway.settings import HostedSettings
from pdpp_gateway.tools.registry import REGISTRY, Registry


@asynccontextmanager
async def start_gateway(
    settings: HostedSettings,
    *,
    packages: PackageResolver | None = None,
    public_self: bool = False,
    demo: PageFacts | None = None,
    registry: Registry = REGISTRY,
) -> AsyncIterator[str]:
    sock = bind_socket(settings.host, settings.port)
    port = sock.getsockname()[1]
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    bound = replace(settings, port=port)
    if public_self:
        bound = replace(bound, public_url=f"http://{host}:{port}")
    runner = GatewayRunner(
        create_app(bound, packages=packages, demo=demo, registry=registry),
        limits=ConnectionLimits.from_settings(bound),
        shutdown_timeout=5,
    )
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://{host}:{port}/mcp"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def mcp_http(url: str, token: str | None, era: str = "legacy") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era, cache=None) as client,
    ):
        yield client
