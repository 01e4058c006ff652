"""The hosted door's connections are bounded: silent and slow sockets never lock a caller out.

A real gateway (in-process, on a real socket) with a small connection ceiling: one
client opens three times as many silent and slow-header sockets as the ceiling allows,
and a real MCP client (the SDK's Streamable HTTP client) is still answered, as is
``/healthz``; the sockets closed to make room are counted and logged. With every
connection busy on a request, a newcomer is answered 503 ``server_busy``, never left
hanging. A silent connection, a slow request head and an idle kept-alive connection
are each closed by their own timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings

CEILING = 8
CLOSED_WITHIN = 30.0  # generous: what is asserted is that the server closes, not how fast
Sockets = list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]


@asynccontextmanager
async def gateway(sandbox: Any, **limits: Any) -> AsyncIterator[tuple[str, int]]:
    async with start_gateway(sandbox_settings(sandbox.url, rate_limit=0.0, **limits)) as url:
        yield url, int(url.rsplit(":", 1)[1].split("/")[0])


async def open_sockets(port: int, count: int, first_bytes: bytes = b"") -> Sockets:
    sockets = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if first_bytes:
            writer.write(first_bytes)
            await writer.drain()
        sockets.append((reader, writer))
    return sockets


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server wrote before closing the connection."""
    return await asyncio.wait_for(reader.read(), CLOSED_WITHIN)


def close_all(sockets: Sockets) -> None:
    for _, writer in sockets:
        writer.close()


async def metric_lines(url: str) -> list[str]:
    """The connection counters, once ``/metrics`` is answered (a 503 while the server still
    holds connections the client has just closed)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(100):
            async with http.get(url.replace("/mcp", "/metrics")) as response:
                if response.status == 200:
                    text = await response.text()
                    return [line for line in text.splitlines() if "connections_closed_total" in line]
            await asyncio.sleep(0.1)
    raise AssertionError("/metrics was never answered")


def closed(lines: list[str], reason: str) -> float:
    return sum(float(line.split()[-1]) for line in lines if f'reason="{reason}"' in line)


SLOW_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"


async def test_24_silent_and_slow_sockets_over_a_ceiling_of_8_leave_a_real_caller_answered(
    shared_sandbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pdpp_gateway.connections")
    async with gateway(
        shared_sandbox, max_connections=CEILING, idle_timeout_seconds=60.0, header_timeout_seconds=60.0
    ) as (url, port):
        silent = await open_sockets(port, 12)
        slow = await open_sockets(port, 12, SLOW_HEAD)
        try:
            async with mcp_http(url, shared_sandbox.tokens["client_broad"]) as client:
                tools = await client.list_tools()
                assert len(tools.tools) == 6
                schema = await client.call_tool("schema", {})
                assert not schema.is_error
            async with aiohttp.ClientSession() as http, http.get(url.replace("/mcp", "/healthz")) as health:
                assert health.status == 200
            for reader, _ in silent[:8]:  # the longest-waiting made room, closed without a word
                assert await closed_by_server(reader) == b""
            lines = await metric_lines(url)
        finally:
            close_all(silent + slow)
    assert closed(lines, "evicted") >= 24 - CEILING
    assert closed(lines, "refused") == 0
    logged = [record for record in caplog.records if record.name == "pdpp_gateway.connections"]
    assert logged
    assert "connection ceiling (8) reached" in logged[0].getMessage()


async def test_with_every_connection_busy_a_newcomer_gets_503_server_busy(
    shared_sandbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pdpp_gateway.connections")
    async with gateway(shared_sandbox, max_connections=4, body_timeout_seconds=60.0) as (url, port):
        token = shared_sandbox.tokens["client_broad"]
        stalled_body = (  # a whole head a real call would send, then a body that stops
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n{"
        )
        busy = await open_sockets(port, 4, stalled_body.encode())
        await asyncio.sleep(0)
        newcomer, writer = (await open_sockets(port, 1))[0]
        answer = await closed_by_server(newcomer)
        writer.close()
        close_all(busy)  # the busy connections end: room again
        lines = await metric_lines(url)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503")
    assert b"Retry-After: 1" in head
    assert b'"code":"server_busy"' in body
    assert closed(lines, "refused") >= 1
    assert any("1 newcomer(s) refused" in record.getMessage() for record in caplog.records)


async def test_silent_slow_and_idle_kept_alive_connections_are_each_closed_by_their_timeout(
    shared_sandbox: Any,
) -> None:
    async with gateway(
        shared_sandbox,
        idle_timeout_seconds=0.2,
        header_timeout_seconds=0.2,
        keepalive_timeout_seconds=0.2,
    ) as (url, port):
        silent = await open_sockets(port, 1)
        slow = await open_sockets(port, 1, SLOW_HEAD)
        kept = await open_sockets(
            port, 1, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        )
        for sockets in (silent, slow):
            assert await closed_by_server(sockets[0][0]) == b""
        answered = await closed_by_server(kept[0][0])  # answered, then closed once idle
        assert answered.startswith(b"HTTP/1.1 200")
        close_all(silent + slow + kept)
        lines = await metric_lines(url)
    for reason in ("idle_timeout", "header_timeout", "keepalive_timeout"):
        assert closed(lines, reason) >= 1, reason
