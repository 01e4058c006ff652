"""Every HTTP refusal of /mcp is a JSON-RPC error object an MCP client can show.

Status and headers stay (``WWW-Authenticate`` on a 401, ``Allow`` on a 405,
``Retry-After`` on a 503); the body is ``{"jsonrpc", "id", "error": {code, message,
data}}`` whose message alone says what happened and what to do.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import aiohttp
import orjson
import pytest
from mcp.shared.exceptions import MCPError

from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.upstreams import raw_exchange

JSON = "application/json"
PING = b'{"jsonrpc":"2.0","id":9,"method":"ping"}'
SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


@pytest.fixture
async def gateway(shared_sandbox: Any) -> Any:
    async with start_gateway(sandbox_settings(shared_sandbox.url), public_self=True) as url:
        yield url


def sent_headers(token: str | None, **extra: str) -> dict[str, str]:
    headers = {"Accept": f"{JSON}, text/event-stream", "Content-Type": JSON, **extra}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


async def exchange(
    method: str, url: str, headers: dict[str, str], data: bytes | None = PING
) -> tuple[int, Any, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, headers=headers, data=data) as response,
    ):
        return response.status, response.headers, orjson.loads(await response.read())


def assert_rpc_error(headers: Any, body: Any, rpc_code: int, code: str) -> None:
    assert headers["Content-Type"].startswith(JSON)
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None  # refused on its headers: the body was never read
    assert body["error"]["code"] == rpc_code
    assert body["error"]["data"]["code"] == code
    assert body["error"]["data"]["type"]
    assert body["error"]["data"]["request_id"] == headers["Request-Id"]
    assert len(body["error"]["message"]) > 30


CASES = [
    ("POST", {}, None, 401, -32001, "missing_token"),
    ("POST", {}, "owner", 403, -32001, "owner_token_refused"),
    ("POST", {}, "not-a-real-token", 401, -32001, "context.active_false"),
    ("GET", {}, "client_narrow", 405, -32600, "method_not_allowed"),
    ("PUT", {}, "client_narrow", 405, -32600, "method_not_allowed"),
    ("OPTIONS", {}, "client_narrow", 405, -32600, "method_not_allowed"),
    ("POST", {"Accept": "text/html"}, "client_narrow", 406, -32600, "not_acceptable"),
    ("POST", {"Content-Type": "text/plain"}, "client_narrow", 415, -32600, "unsupported_media_type"),
    ("POST", {"Content-Encoding": "gzip"}, "client_narrow", 415, -32600, "unsupported_content_encoding"),
    ("POST", {"Content-Length": "99999999"}, "client_narrow", 413, -32600, "request_too_large"),
    ("POST", {"Host": "evil.example"}, "client_narrow", 421, -32600, "misdirected_request"),
    ("POST", {"Origin": "https://evil.example"}, "client_narrow", 403, -32001, "origin_not_allowed"),
]


@pytest.mark.parametrize(
    ("method", "extra", "token", "status", "rpc_code", "code"),
    CASES,
    ids=[
        "401",
        "403-owner",
        "401-inactive",
        "405",
        "405-put",
        "405-options",
        "406",
        "415",
        "415-encoding",
        "413",
        "421",
        "403-origin",
    ],
)
async def test_http_refusals_are_json_rpc_errors(
    gateway: str,
    shared_sandbox: Any,
    method: str,
    extra: dict[str, str],
    token: str | None,
    status: int,
    rpc_code: int,
    code: str,
) -> None:
    bearer = shared_sandbox.tokens.get(token, token) if token else None
    data = None if "Content-Length" in extra else PING
    if "Content-Length" in extra:  # a declared size: aiohttp would send its own length
        answer = await raw_exchange(
            gateway,
            (
                f"POST /mcp HTTP/1.1\r\nHost: {gateway.split('//')[1].split('/')[0]}\r\n"
                f"Authorization: Bearer {bearer}\r\nAccept: {JSON}\r\nContent-Type: {JSON}\r\n"
                "Content-Length: 99999999\r\nConnection: close\r\n\r\n"
            ).encode(),
        )
        got, body = answer.status, answer.json()
        headers = {
            name.decode().title(): value.decode()
            for line in answer.head.split(b"\r\n")[1:]
            for name, _, value in [line.partition(b": ")]
        }
    else:
        got, headers, body = await exchange(method, gateway, sent_headers(bearer, **extra), data)
    assert got == status, body
    assert_rpc_error(headers, body, rpc_code, code)
    # typed as the RS types a status, but for the Host check's 421 (the request is at fault)
    expected_type = "invalid_request_error" if status == 421 else error_type_for(status)
    assert body["error"]["data"]["type"] == expected_type
    if status == 401:
        metadata = gateway.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
        assert headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata}"'
        assert metadata in body["error"]["message"]
    if status == 405:
        assert headers["Allow"] == "POST"
    assert bearer is None or bearer not in orjson.dumps(body).decode()


async def test_unreachable_authorization_server_is_a_json_rpc_503(shared_sandbox: Any) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/introspect"
    settings = sandbox_settings(shared_sandbox.url, introspection_url=dead)
    async with start_gateway(settings) as url:
        status, headers, body = await exchange(
            "POST", url, sent_headers(shared_sandbox.tokens["client_narrow"])
        )
    assert status == 503
    assert headers["Retry-After"] == "5"
    assert_rpc_error(headers, body, -32000, "authorization_unavailable")
    assert body["error"]["data"]["type"] == "api_error"


async def test_owner_refusal_reaches_the_sdk_client_with_its_reason(
    gateway: str, shared_sandbox: Any
) -> None:
    """The SDK's Streamable HTTP client surfaces the JSON-RPC error of a 403, so the person
    sees why and what to do (a plain JSON body became "Server returned an error response")."""
    raised: list[MCPError] = []
    try:
        async with mcp_http(gateway, shared_sandbox.tokens["owner"], "legacy") as client:
            await client.list_tools()
    except* MCPError as group:
        raised.extend(leaves(group))
    [refused] = raised
    text = str(refused)
    assert "Owner tokens are never accepted" in text
    assert "/.well-known/oauth-protected-resource/mcp" in text  # where to get a scoped grant
    assert refused.code == -32001
    assert shared_sandbox.tokens["owner"] not in text


def leaves(group: BaseExceptionGroup[MCPError]) -> list[MCPError]:
    found: list[MCPError] = []
    for error in group.exceptions:
        found.extend(leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


async def test_unknown_protocol_version_names_the_supported_ones(gateway: str, shared_sandbox: Any) -> None:
    headers = sent_headers(shared_sandbox.tokens["client_narrow"], **{"MCP-Protocol-Version": "2030-01-01"})
    status, _, body = await exchange("POST", gateway, headers)
    assert status == 400
    message = body["error"]["message"]
    assert "_meta" not in message
    assert all(version in message for version in SUPPORTED)  # both eras named in words
    assert body["error"]["data"]["supported"] == ["2026-07-28"]  # what server/discover lists
    assert body["id"] == 9  # refused from the headers, yet naming the request (its body came with them)


async def test_non_ascii_bearer_is_a_401_without_a_traceback(
    gateway: str, shared_sandbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    host = gateway.split("//")[1].split("/")[0]
    shared_sandbox.calls.clear()
    with caplog.at_level(logging.DEBUG):
        answer = await raw_exchange(
            gateway,
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: {JSON}\r\nContent-Type: {JSON}\r\n".encode()
            + b"Authorization: Bearer caf\xe9\r\n"
            + f"Content-Length: {len(PING)}\r\nConnection: close\r\n\r\n".encode()
            + PING,
        )
    assert answer.status == 401
    assert b"WWW-Authenticate: Bearer resource_metadata=" in answer.head
    assert answer.json()["error"]["data"]["code"] == "invalid_token"
    # the way to a grant names this gateway's own MCP URL, which `connect` takes as it is
    mcp_url = gateway.removesuffix("/mcp") + "/mcp"
    assert f"`pdpp-gateway connect {mcp_url}`" in answer.json()["error"]["data"]["next_step"]
    assert "<provider-url>" not in answer.body.decode()
    assert not [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    assert shared_sandbox.calls == []


@pytest.mark.parametrize("target", ["http://evil.example/mcp", "https://evil.example:8443/mcp"])
async def test_absolute_form_target_host_is_checked_like_host(
    gateway: str, shared_sandbox: Any, target: str
) -> None:
    host = gateway.split("//")[1].split("/")[0]
    token = shared_sandbox.tokens["client_narrow"]
    shared_sandbox.calls.clear()
    answer = await raw_exchange(
        gateway,
        (
            f"POST {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Accept: {JSON}\r\nContent-Type: {JSON}\r\nContent-Length: {len(PING)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        + PING,
    )
    assert answer.status == 421
    assert answer.json()["error"]["data"]["code"] == "misdirected_request"
    assert shared_sandbox.calls == []


async def test_absolute_form_target_naming_a_served_host_is_served(gateway: str, shared_sandbox: Any) -> None:
    host = gateway.split("//")[1].split("/")[0]
    token = shared_sandbox.tokens["client_narrow"]
    answer = await raw_exchange(
        gateway,
        (
            f"POST {gateway} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Accept: {JSON}\r\nContent-Type: {JSON}\r\nContent-Length: {len(PING)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        + PING,
    )
    assert answer.status == 200
    assert answer.json() == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_an_unsupported_version_never_waits_for_a_body_to_name_its_id(gateway: str) -> None:
    """A body that has not arrived (or a large one) is not read before the bearer check: the
    version refusal comes on the headers alone, its id null."""
    host = gateway.split("//")[1].split("/")[0]
    answer = await raw_exchange(
        gateway,
        (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: {JSON}\r\nContent-Type: {JSON}\r\n"
            "MCP-Protocol-Version: 1999-01-01\r\nContent-Length: 2000000\r\n\r\n"
        ).encode()
        + b'{"jsonrpc":"2.0","id":5,',
        seconds=30,
    )
    assert answer.status == 400
    assert answer.json()["id"] is None
    assert answer.json()["error"]["code"] == -32022


async def test_unauthenticated_body_is_never_awaited(gateway: str, shared_sandbox: Any) -> None:
    """No bearer: the 401 comes on the headers alone, while the announced body never arrives
    (a gateway that read bodies first would wait for it, then answer 408)."""
    host = gateway.split("//")[1].split("/")[0]
    answer = await raw_exchange(
        gateway,
        (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: {JSON}\r\nContent-Type: {JSON}\r\n"
            "Content-Length: 2000000\r\n\r\n"
        ).encode()
        + b'{"jsonrpc":"2.0",',
        seconds=30,
    )
    assert answer.status == 401
    assert answer.json()["id"] is None


async def test_an_unsupported_protocol_version_says_what_discover_lists(
    gateway: str, shared_sandbox: Any
) -> None:
    bearer = shared_sandbox.tokens["client_narrow"]
    message = {"jsonrpc": "2.0", "id": 31, "method": "tools/list"}
    headers = sent_headers(bearer, **{"MCP-Protocol-Version": "1999-01-01"})
    got, _, body = await exchange("POST", gateway, headers, orjson.dumps(message))
    assert got == 400
    assert body["id"] == 31  # refused from the headers, before the bearer check, yet naming the request
    assert body["error"]["code"] == -32022
    assert body["error"]["data"]["supported"] == ["2026-07-28"]  # as server/discover lists them
    assert body["error"]["data"]["requested"] == "1999-01-01"


@pytest.mark.parametrize("version", ["v999.0.0", "latest", "2026-7-28"])
async def test_an_unsupported_version_of_any_shape_is_echoed_as_sent(
    gateway: str, shared_sandbox: Any, version: str
) -> None:
    """``data.requested`` is the header as sent, a string (the schema's type; the stdio door
    echoes it too), whether or not it looks like a date."""
    bearer = shared_sandbox.tokens["client_narrow"]
    message = {"jsonrpc": "2.0", "id": "v", "method": "tools/list"}
    headers = sent_headers(bearer, **{"MCP-Protocol-Version": version})
    got, _, body = await exchange("POST", gateway, headers, orjson.dumps(message))
    assert got == 400
    assert body["id"] == "v"  # a small body that arrived with the headers is read for its id
    assert body["error"]["code"] == -32022
    assert body["error"]["data"]["requested"] == version


async def test_a_header_that_could_be_a_credential_is_never_reflected(
    gateway: str, shared_sandbox: Any
) -> None:
    bearer = shared_sandbox.tokens["client_narrow"]
    headers = sent_headers(bearer, **{"MCP-Protocol-Version": bearer})  # a token in the wrong header
    got, _, body = await exchange("POST", gateway, headers, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert got == 400
    assert body["error"]["data"]["requested"] == "(not shown: not a version string)"
    assert bearer not in orjson.dumps(body).decode()
