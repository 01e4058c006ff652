"""The hosted door builds its tool pipeline once per process, whatever the origins."""

from __future__ import annotations

from typing import Any
from unittest import mock

import aiohttp

from pdpp_gateway.hosted import app
from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.tools import pipeline

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}


async def test_servers_for_several_origins_share_one_pipeline(sandbox: Any) -> None:
    settings = sandbox_settings(
        sandbox.url, allowed_hosts=("a.example", "b.example"), trusted_proxies=("127.0.0.1",)
    )
    per_server = mock.Mock(wraps=pipeline.build_pipeline)
    servers = mock.Mock(wraps=app.build_server)
    with (
        mock.patch("pdpp_gateway.server.build_pipeline", per_server),
        mock.patch("pdpp_gateway.hosted.app.build_server", servers),
    ):
        async with start_gateway(settings) as url, aiohttp.ClientSession() as http:
            headers = {
                "Authorization": f"Bearer {sandbox.tokens['client_broad']}",
                "Accept": "application/json, text/event-stream",
                "X-Forwarded-Proto": "https",
            }
            for host in ("a.example", "b.example"):
                async with http.post(
                    url, json=CALL, headers={**headers, "X-Forwarded-Host": host}
                ) as response:
                    assert response.status == 200, await response.text()
                    assert not (await response.json())["result"]["isError"]
    assert servers.call_count == 2  # one MCP server per public origin
    assert per_server.call_count == 0  # neither built a pipeline: both run the process's one
