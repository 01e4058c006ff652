"""Shape refusals and the upstream, in both bearer modes.

The gateway's RS reads and its introspection calls all go through a counting proxy, and
each request below carries a VALID client bearer.

- A defect visible in the headers (``MCP-Protocol-Version``, ``Accept``, ``Content-Type``,
  ``Content-Encoding``, declared size) is refused before the bearer check: the proxy
  sees nothing (no ``/v1/schema`` probe, no ``POST /introspect``).
- A defect only visible in the body is refused after the bearer check (the body of an
  unauthenticated request is never read): the proxy sees that one bearer check and no
  data read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from multidict import CIMultiDict

from pdpp_gateway.hosted.embedded import start_gateway
from tests.upstreams import Switchboard, proxied_settings, upstream_proxy

V2026 = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V2026, "io.modelcontextprotocol/clientCapabilities": {}}
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
MODERN_CALL = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "schema", "arguments": {}, "_meta": META},
    }
)
MODES = pytest.mark.parametrize("introspection", [True, False], ids=["introspection", "schema-probe"])


@pytest.fixture
async def proxy(shared_sandbox: Any) -> AsyncIterator[Switchboard]:
    async with upstream_proxy(shared_sandbox.url) as counting:
        yield counting


def headers(shared_sandbox: Any, **extra: str) -> CIMultiDict[str]:
    return CIMultiDict(
        {
            "Authorization": f"Bearer {shared_sandbox.tokens['client_broad']}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **extra,
        }
    )


async def post(url: str, sent: CIMultiDict[str], data: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.post(url, headers=sent, data=data) as response:
        raw = await response.read()
        return response.status, orjson.loads(raw) if raw else None


BEARER_CHECK = {"GET /v1/schema", "POST /introspect"}
HEADER_REFUSALS = [
    # the version is a header: refused before the bearer check, so before any introspection,
    # naming the request's id all the same (its small body came with the headers)
    ({"MCP-Protocol-Version": "1999-01-01"}, b'{"jsonrpc":"2.0","id":4,"method":"ping"}', 400, -32022, 4),
    (
        {"MCP-Protocol-Version": "1999-01-01"},
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        400,
        -32022,
        None,
    ),
    ({"Accept": "text/html"}, PING, 406, -32600, None),
    ({"Accept": "application/json;q=0"}, PING, 406, -32600, None),
    ({"Accept": "application/json;q=0, */*"}, PING, 406, -32600, None),
    ({"Content-Type": "text/plain"}, PING, 415, -32600, None),
    ({"Content-Encoding": "gzip"}, PING, 415, -32600, None),
]
HEADER_REFUSAL_IDS = [
    "request-unsupported-version",
    "notification-unsupported-version",
    "accept-html",
    "accept-json-q0",
    "accept-json-q0-wildcard",
    "content-type",
    "content-encoding",
]
BODY_REFUSALS = [
    # checked with the body, so the refusal carries the request's id when it is valid
    ({}, b'{"jsonrpc": "2.0", "id": 1, "method":', 400, -32700, None),
    ({}, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600, None),
    ({}, b'"just a string"', 400, -32600, None),
    ({}, b'{"jsonrpc":"2.0","id":1,"result":{}}', 400, -32600, None),
    ({}, b'{"method":"notifications/initialized"}', 400, -32600, None),
    ({}, b'{"id":3,"method":"ping"}', 400, -32600, 3),
    ({}, b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 400, -32600, None),
    ({}, b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}', 400, -32602, 1),
    (
        {"MCP-Protocol-Version": V2026},
        b'{"jsonrpc":"2.0","id":"a","method":"tools/list","params":[1]}',
        400,
        -32602,
        "a",
    ),
    (
        {"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call", "Mcp-Name": "search"},
        MODERN_CALL,
        400,
        -32020,
        5,
    ),
    ({"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/list"}, MODERN_CALL, 400, -32020, 5),
    (
        {"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/list"},
        b'{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}',
        400,
        -32602,
        6,
    ),
]
BODY_REFUSAL_IDS = [
    "malformed-json",
    "batch",
    "not-an-object",
    "posted-response",
    "notification-without-jsonrpc",
    "request-without-jsonrpc",
    "float-id",
    "params-array",
    "params-array-2026",
    "2026-name-mismatch",
    "2026-method-mismatch",
    "2026-missing-meta",
]


@MODES
@pytest.mark.parametrize(("extra", "data", "status", "code", "echo"), HEADER_REFUSALS, ids=HEADER_REFUSAL_IDS)
async def test_header_refusals_make_no_upstream_call(
    shared_sandbox: Any,
    proxy: Switchboard,
    introspection: bool,
    extra: dict[str, str],
    data: bytes,
    status: int,
    code: int,
    echo: Any,
) -> None:
    async with start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=introspection)) as url:
        got, body = await post(url, headers(shared_sandbox, **extra), data)
        assert got == status, body
        assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", echo, code)
        assert proxy.seen == []
        # the same gateway, the same bearer, a well-formed request: the upstream is on the path
        got, _ = await post(url, headers(shared_sandbox), PING)
        assert got == 200
        assert proxy.seen, "the proxy is not between the gateway and the sandbox"


@MODES
@pytest.mark.parametrize(("extra", "data", "status", "code", "echo"), BODY_REFUSALS, ids=BODY_REFUSAL_IDS)
async def test_body_refusals_cost_only_the_bearer_check(
    shared_sandbox: Any,
    proxy: Switchboard,
    introspection: bool,
    extra: dict[str, str],
    data: bytes,
    status: int,
    code: int,
    echo: Any,
) -> None:
    async with start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=introspection)) as url:
        got, body = await post(url, headers(shared_sandbox, **extra), data)
        assert got == status, body
        assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", echo, code)
        assert body["error"]["data"]["type"] == "invalid_request_error"
        assert body["error"]["data"]["request_id"].startswith("req_")
        assert len(proxy.seen) == 1
        assert {f"{seen.method} {seen.path}" for seen in proxy.seen} <= BEARER_CHECK


@MODES
async def test_duplicated_routing_header_costs_only_the_bearer_check(
    shared_sandbox: Any, proxy: Switchboard, introspection: bool
) -> None:
    sent = headers(shared_sandbox, **{"MCP-Protocol-Version": V2026, "Mcp-Name": "schema"})
    sent.add("Mcp-Method", "tools/call")
    sent.add("Mcp-Method", "tools/call")
    async with start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=introspection)) as url:
        status, body = await post(url, sent, MODERN_CALL)
        assert status == 400
        assert body["id"] == 5
        assert {f"{seen.method} {seen.path}" for seen in proxy.seen} <= BEARER_CHECK


@MODES
async def test_oversize_chunked_body_is_413_without_upstream_calls(
    shared_sandbox: Any, proxy: Switchboard, introspection: bool
) -> None:
    settings = proxied_settings(shared_sandbox.url, proxy, introspection=introspection, max_body_bytes=2048)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
        for _ in range(8):
            yield b"x" * 1024
        yield b'"}}'

    async with start_gateway(settings) as url:
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, headers=headers(shared_sandbox), data=chunks()) as response,
        ):
            assert response.request_info.headers.get("Transfer-Encoding") == "chunked"
            assert response.status == 413
            assert (await response.json())["error"]["code"] == -32600
        assert {f"{seen.method} {seen.path}" for seen in proxy.seen} <= BEARER_CHECK


@MODES
async def test_stalled_body_gets_408_and_the_connection_closes_at_once(
    shared_sandbox: Any, proxy: Switchboard, introspection: bool
) -> None:
    settings = proxied_settings(
        shared_sandbox.url, proxy, introspection=introspection, body_timeout_seconds=0.3
    )
    async with start_gateway(settings) as url:
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        token = shared_sandbox.tokens["client_broad"]
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(head + b'{"jsonrpc":"2.0",')
            await writer.drain()
            # everything up to end of file: the server must close right after its 408,
            # not linger reading the rest of the body (aiohttp's default: 10 s more)
            answer = await asyncio.wait_for(reader.read(), timeout=3)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"connection: close" in answer.lower()
        body = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert (body["id"], body["error"]["code"], body["error"]["data"]["code"]) == (
            None,
            -32600,
            "request_timeout",
        )
        assert {f"{seen.method} {seen.path}" for seen in proxy.seen} <= BEARER_CHECK
