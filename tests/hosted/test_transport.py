"""The Streamable HTTP rules of /mcp: methods, headers, bodies, eras, Host and Origin."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest
from multidict import CIMultiDict

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings

JSON = "application/json"
V2026 = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V2026,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
async def gateway(shared_sandbox: Any) -> Any:
    async with start_gateway(sandbox_settings(shared_sandbox.url), public_self=True) as url:
        yield url


def auth(shared_sandbox: Any, **extra: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {shared_sandbox.tokens['client_narrow']}",
        "Accept": f"{JSON}, text/event-stream",
        "Content-Type": JSON,
        **extra,
    }


async def send(
    method: str, url: str, headers: dict[str, str], data: bytes | str | None = None
) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, headers=headers, data=data) as response,
    ):
        return response.status, dict(response.headers), await response.read()


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_answer_405(gateway: str, shared_sandbox: Any, method: str) -> None:
    shared_sandbox.calls.clear()
    status, headers, _ = await send(method, gateway, auth(shared_sandbox))
    assert status == 405
    assert headers["Allow"] == "POST"
    assert shared_sandbox.calls == []


@pytest.mark.parametrize(
    ("headers", "data", "status", "code"),
    [
        ({"Accept": "text/html"}, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 406, -32600),
        ({"Content-Type": "text/plain"}, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 415, -32600),
        ({}, b'{"jsonrpc": "2.0", "id": 1, "method":', 400, -32700),
        ({}, b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600),
        ({}, b'{"jsonrpc":"2.0","id":1,"result":{}}', 400, -32600),
        ({}, b'"just a string"', 400, -32600),
    ],
    ids=["accept", "content-type", "malformed", "batch", "posted-response", "not-an-object"],
)
async def test_bad_requests_get_json_rpc_errors(
    gateway: str, shared_sandbox: Any, headers: dict[str, str], data: bytes, status: int, code: int
) -> None:
    shared_sandbox.calls.clear()
    got, _, body = await send("POST", gateway, auth(shared_sandbox, **headers), data)
    assert got == status
    assert orjson.loads(body)["error"]["code"] == code
    assert shared_sandbox.calls == []


async def test_oversize_body_is_413_without_introspection(shared_sandbox: Any) -> None:
    settings = sandbox_settings(shared_sandbox.url, max_body_bytes=2048)
    async with start_gateway(settings) as url:
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 4096 + b'"}}'
        status, _, _ = await send("POST", url, auth(shared_sandbox), big)
        assert status == 413


async def test_notification_is_accepted_with_202(gateway: str, shared_sandbox: Any) -> None:
    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    status, _, body = await send("POST", gateway, auth(shared_sandbox), note)
    assert (status, body) == (202, b"")


async def test_handshake_era_works_without_initialize(gateway: str, shared_sandbox: Any) -> None:
    call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"schema","arguments":{}}}'
    status, headers, body = await send("POST", gateway, auth(shared_sandbox), call)
    assert status == 200
    assert "Mcp-Session-Id" not in headers
    assert b'"id":7' in body
    assert b"messages" in body


def modern(method: str, params: dict[str, Any] | None = None, id_: int = 1) -> bytes:
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**(params or {}), "_meta": META}}
    )


async def test_modern_era_call_with_matching_headers(gateway: str, shared_sandbox: Any) -> None:
    headers = auth(
        shared_sandbox, **{"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call", "Mcp-Name": "schema"}
    )
    status, _, body = await send(
        "POST", gateway, headers, modern("tools/call", {"name": "schema", "arguments": {}})
    )
    assert status == 200
    assert b'"result"' in body


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/list", "Mcp-Name": "schema"}, 400),
        ({"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call", "Mcp-Name": "search"}, 400),
        ({"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call"}, 400),
        ({"MCP-Protocol-Version": "1999-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "schema"}, 400),
    ],
    ids=["method-mismatch", "name-mismatch", "name-missing", "unsupported-version"],
)
async def test_modern_era_header_body_mismatches_are_400(
    gateway: str, shared_sandbox: Any, headers: dict[str, str], status: int
) -> None:
    shared_sandbox.calls.clear()
    got, _, body = await send(
        "POST",
        gateway,
        auth(shared_sandbox, **headers),
        modern("tools/call", {"name": "schema", "arguments": {}}),
    )
    assert got == status
    assert b'"error"' in body
    assert shared_sandbox.calls == []


async def test_modern_era_duplicated_routing_header_is_400(gateway: str, shared_sandbox: Any) -> None:
    async with aiohttp.ClientSession() as http:
        headers = CIMultiDict(auth(shared_sandbox))
        headers.add("MCP-Protocol-Version", V2026)
        headers.add("Mcp-Method", "tools/list")
        headers.add("Mcp-Method", "tools/list")
        async with http.post(gateway, headers=headers, data=modern("tools/list")) as response:
            assert response.status == 400


async def test_modern_era_unknown_method_is_404(gateway: str, shared_sandbox: Any) -> None:
    headers = auth(shared_sandbox, **{"MCP-Protocol-Version": V2026, "Mcp-Method": "prompts/list"})
    status, _, _ = await send("POST", gateway, headers, modern("prompts/list"))
    assert status == 404


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        (None, None, 200),
        ("evil.example", None, 421),
        ("evil.example:80", None, 421),
        (None, "https://evil.example", 403),
        (None, "SELF", 200),
    ],
    ids=["own-host", "foreign-host", "foreign-host-port", "foreign-origin", "own-origin"],
)
async def test_host_and_origin_matrix(
    gateway: str, shared_sandbox: Any, host: str | None, origin: str | None, status: int
) -> None:
    extra: dict[str, str] = {}
    if host:
        extra["Host"] = host
    if origin:
        extra["Origin"] = gateway.removesuffix("/mcp") if origin == "SELF" else origin
    shared_sandbox.calls.clear()
    got, _, _ = await send(
        "POST", gateway, auth(shared_sandbox, **extra), b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    )
    assert got == status
    if status != 200:
        assert shared_sandbox.calls == []


async def test_allowed_host_setting_admits_a_proxy_name(shared_sandbox: Any) -> None:
    settings = sandbox_settings(shared_sandbox.url, allowed_hosts=("mcp.example.org",))
    async with start_gateway(settings) as url:
        headers = auth(shared_sandbox, Host="mcp.example.org")
        status, _, _ = await send("POST", url, headers, b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        assert status == 200


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"name": "schema", "arguments": [1]}, '"arguments" must be a JSON object'),
        ({"name": "schema", "arguments": "stream=messages"}, "(got string)"),
        ({"arguments": {}}, 'needs "name"'),
    ],
)
async def test_tool_call_params_the_sdk_would_refuse_say_what_is_wrong(
    gateway: str, shared_sandbox: Any, params: dict[str, Any], says: str
) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params})
    got, _, answer = await send("POST", gateway, auth(shared_sandbox), body)
    error = orjson.loads(answer)
    assert got == 400
    assert error["id"] == 41
    assert error["error"]["code"] == -32602
    assert says in error["error"]["message"]
