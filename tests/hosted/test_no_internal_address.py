"""A hosted gateway's public callers never see the RS's internal address.

The gateway reads the RS at ``--rs-internal-url`` (here one where nothing listens, so the
RS is down) while the provider's public URL is the sandbox's. Every answer a caller can
get about that outage (a tool result, a resource read, ``/readyz``) says "the resource
server" and names neither the internal host nor its port.
"""

from __future__ import annotations

import socket
from typing import Any

import aiohttp
import orjson

from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings

INTERNAL_HOST = "127.0.0.2"  # loopback, and nobody listens on it: connections are refused


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind((INTERNAL_HOST, 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_rs_is_named_the_resource_server_never_by_its_internal_address(
    sandbox: Any,
) -> None:
    port = unused_port()
    internal = f"http://{INTERNAL_HOST}:{port}"
    settings = sandbox_settings(sandbox.url, rs_internal_url=internal)
    seen: list[str] = []
    async with start_gateway(settings, public_self=True) as url:
        async with mcp_http(url, sandbox.tokens["client_broad"]) as client:
            result = await client.call_tool("schema", {})
            assert result.is_error
            seen.append(orjson.dumps(result.model_dump(mode="json")).decode())
            read = await client.call_tool(
                "query_records", {"stream": "messages", "limit": 1}
            )  # a second route class: its own breaker, the same words
            seen.append(orjson.dumps(read.model_dump(mode="json")).decode())
        async with aiohttp.ClientSession() as http, http.get(url.replace("/mcp", "/readyz")) as response:
            assert response.status == 503
            seen.append(await response.text())
    text = "\n".join(seen)
    assert "upstream_unavailable" in text
    assert "The resource server is unavailable: cannot connect to it (connection refused)" in text
    assert "resource server's /v1 API is not usable" in text  # /readyz says why, too
    assert INTERNAL_HOST not in text
    assert str(port) not in text
