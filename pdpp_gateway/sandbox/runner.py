"""Run the sandbox RS in-process on a real socket (tests, the demo, benchmarks).

Contract: ``async with start_sandbox(config) as server:`` serves the sandbox on
``host:port`` (ephemeral by default) until the block ends. ``server.url`` is its
origin (``server.port`` its port), ``server.tokens`` the fixture tokens by name, ``server.calls`` the
live list of recorded ``/v1`` requests (clear it to count from now); ``allow_resource(url)``
lets its AS issue tokens for another resource (a gateway's ``/mcp``).

Its authorization server keeps clients and grants in memory unless ``config.state_file``
names a file (``oauth_state``): the tests' sandboxes are isolated by default, and only the
``sandbox`` and ``demo`` commands keep state in the person's data directory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from aiohttp import web

from pdpp_gateway.sandbox.app import create_app
from pdpp_gateway.sandbox.config import TOKENS, SandboxConfig
from pdpp_gateway.sandbox.envelope import CALLS, Call
from pdpp_gateway.sandbox.oauth import OAUTH_RESOURCES


@dataclass(slots=True)
class SandboxServer:
    url: str
    config: SandboxConfig
    app: web.Application
    tokens: dict[str, str] = field(default_factory=lambda: dict(TOKENS))

    @property
    def calls(self) -> list[Call]:
        return self.app[CALLS]

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 0

    def allow_resource(self, url: str) -> None:
        """Let the AS issue tokens for ``url`` (RFC 8707), e.g. a gateway's ``/mcp`` in front of it."""
        self.app[OAUTH_RESOURCES].add(url.rstrip("/"))


@asynccontextmanager
async def start_sandbox(
    config: SandboxConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[SandboxServer]:
    settings = config or SandboxConfig()
    app = create_app(settings)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    shown = f"[{host}]" if ":" in host else host
    try:
        yield SandboxServer(url=f"http://{shown}:{bound}", config=settings, app=app)
    finally:
        await runner.cleanup()
