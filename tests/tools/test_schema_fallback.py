"""An RS that does not know ``view=compact``: schema falls back to a local projection of the
full body, and a model sees the same index and stream views either way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pdpp_gateway.hosted.testing import mcp_http, sandbox_settings, start_gateway


@asynccontextmanager
async def without_compact_view(upstream: str) -> AsyncIterator[tuple[str, list[str]]]:
    """A pass-through proxy to ``upstream`` that refuses ``view=compact`` as an unknown query key."""
    seen: list[str] = []

    async def forward(request: web.Request) -> web.Response:
        seen.append(request.path_qs)
        if request.path == "/v1/schema" and "view" in request.query:
            return web.json_response(
                {
                    "error": {
                        "type": "invalid_request_error",
                        "code": "invalid_request",
                        "message": "Unknown query parameter: view",
                    }
                },
                status=400,
            )
        headers = {k: v for k, v in request.headers.items() if k in {"Authorization", "Accept"}}
        async with (
            aiohttp.ClientSession() as http,
            http.get(upstream + request.path, params=request.query, headers=headers) as answer,
        ):
            return web.Response(
                body=await answer.read(), status=answer.status, content_type=answer.content_type
            )

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


async def schema_views(url: str, token: str) -> list[Any]:
    views = []
    async with mcp_http(url, token) as client:
        for arguments in ({}, {"stream": "messages", "connection_id": "cin_mail_work"}, {"stream": "issues"}):
            result = await client.call_tool("schema", arguments)
            assert not result.is_error, result.content
            views.append((result.structured_content["data"], result.content[0].text))  # type: ignore[union-attr]
    return views


@pytest.mark.parametrize("token", ["client_broad", "client_narrow"])
async def test_fallback_projection_matches_the_rest_compact_view(shared_sandbox: Any, token: str) -> None:
    bearer = shared_sandbox.tokens[token]
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as direct_url:
        direct = await schema_views(direct_url, bearer)
    async with (
        without_compact_view(shared_sandbox.url) as (proxy, seen),
        start_gateway(sandbox_settings(shared_sandbox.url, rs_internal_url=proxy)) as fallback_url,
    ):
        fallback = await schema_views(fallback_url, bearer)
    assert any("view=compact" in path for path in seen)
    assert any(path.startswith("/v1/schema") and "view" not in path for path in seen)
    assert fallback == direct
