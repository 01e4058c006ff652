"""Every refusal for the request's shape happens before any upstream call, in both bearer modes.

The gateway's RS reads and its introspection calls all go through a counting proxy, and
each request below carries a VALID client bearer: had the bearer check run first, the
proxy would have seen a ``/v1/schema`` probe (schema-probe mode) or a ``POST /introspect``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from multidict import CIMultiDict

from pdpp_gateway.hosted.testing import start_gateway
from tests.upstreams import Switchboard, proxied_settings, raw_http, upstream_proxy

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


REFUSALS = [
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
        {"MCP-Protocol-Version": "1999-01-01"},
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        400,
        None,
        None,
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
    ({"Accept": "text/html"}, PING, 406, -32600, None),
    ({"Accept": "application/json;q=0"}, PING, 406, -32600, None),
    ({"Accept": "application/json;q=0, */*"}, PING, 406, -32600, None),
    ({"Content-Type": "text/plain"}, PING, 415, -32600, None),
]
REFUSAL_IDS = [
    "malformed-json",
    "batch",
    "not-an-object",
    "posted-response",
    "notification-without-jsonrpc",
    "request-without-jsonrpc",
    "float-id",
    "params-array",
    "params-array-2026",
    "notification-unsupported-version",
    "2026-name-mismatch",
    "2026-method-mismatch",
    "2026-missing-meta",
    "accept-html",
    "accept-json-q0",
    "accept-json-q0-wildcard",
    "content-type",
]


@MODES
@pytest.mark.parametrize(("extra", "data", "status", "code", "echo"), REFUSALS, ids=REFUSAL_IDS)
async def test_shape_refusals_make_no_upstream_call(
    shared_sandbox: Any,
    proxy: Switchboard,
    introspection: bool,
    extra: dict[str, str],
    data: bytes,
    status: int,
    code: int | None,
    echo: Any,
) -> None:
    async with start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=introspection)) as url:
        got, body = await post(url, headers(shared_sandbox, **extra), data)
        assert got == status, body
        if code is not None:
            assert body["error"]["code"] == code
            assert body["id"] == echo
        assert proxy.seen == []
        # the same gateway, the same bearer, a well-formed request: the upstream is on the path
        got, _ = await post(url, headers(shared_sandbox), PING)
        assert got == 200
        assert proxy.seen, "the proxy is not between the gateway and the sandbox"


@MODES
async def test_duplicated_routing_header_makes_no_upstream_call(
    shared_sandbox: Any, proxy: Switchboard, introspection: bool
) -> None:
    sent = headers(shared_sandbox, **{"MCP-Protocol-Version": V2026, "Mcp-Name": "schema"})
    sent.add("Mcp-Method", "tools/call")
    sent.add("Mcp-Method", "tools/call")
    async with start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=introspection)) as url:
        status, body = await post(url, sent, MODERN_CALL)
        assert status == 400
        assert body["id"] == 5
        assert proxy.seen == []


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
        assert proxy.seen == []


@MODES
async def test_stalled_body_gets_408_and_the_connection_closes(
    shared_sandbox: Any, proxy: Switchboard, introspection: bool
) -> None:
    settings = proxied_settings(
        shared_sandbox.url, proxy, introspection=introspection, body_timeout_seconds=0.3
    )
    async with start_gateway(settings) as url:
        host = url.split("//", 1)[1].split("/", 1)[0]
        token = shared_sandbox.tokens["client_broad"]
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        ).encode()
        answer = await raw_http(url, head, [b'{"jsonrpc":"2.0",'])
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"connection: close" in answer.lower()
        assert proxy.seen == []
