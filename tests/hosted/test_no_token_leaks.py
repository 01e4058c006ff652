"""No token reaches a log line, a response or a metric, whatever a caller sends.

One ``pdpp-gateway serve`` process (introspection on, DEBUG logging) is driven through
valid calls (the SDK's client, a client and a package token), refusals (owner, invalid,
revoked, shape refusals) and malformed requests aiohttp's parser rejects, each carrying
one of several distinct tokens. Then every stderr line, every response (status line,
headers and body, and the SDK's exception texts) and a ``/metrics`` scrape are searched
for every token used and for the introspection secret.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from mcp.shared.exceptions import MCPError

from pdpp_gateway.hosted.embedded import mcp_http
from tests.hosted.test_serve_command import SECRET, introspection_args, serve
from tests.upstreams import raw_exchange

INVALID = "sbx_never_issued_0b9d41f7"
JSON = "application/json"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


class Seen:
    """Everything the gateway sent back, as text."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, *parts: str | bytes) -> None:
        self.parts.extend(part.decode("latin-1") if isinstance(part, bytes) else part for part in parts)

    async def post(
        self, url: str, token: str | None, data: bytes = PING, method: str = "POST", **extra: str
    ) -> int:
        headers = {"Accept": JSON, "Content-Type": JSON, **extra}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, url, data=data, headers=headers) as response,
        ):
            self.add(str(response.status), repr(list(response.headers.items())), await response.read())
            return response.status

    async def raw(self, url: str, data: bytes) -> int:
        answer = await raw_exchange(url, data)
        self.add(answer.head, answer.body)
        return answer.status


def malformed(host: str, token: str) -> list[bytes]:
    start = f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n".encode()
    end = f"Accept: {JSON}\r\nContent-Type: {JSON}\r\nContent-Length: {len(PING)}\r\n\r\n".encode() + PING
    return [
        start + f"Authorization: Bearer {token}".encode() + b"\x00\r\n" + end,
        start + f"Authorization: Bearer {token}{'a' * 9000}\r\n".encode() + end,
        start + f"Authorization Bearer {token}\r\n".encode() + end,
        f"POST /mcp?access_token={token}{'b' * 9000} HTTP/1.1\r\nHost: {host}\r\n".encode() + end,
        start + f"Authorization: Bearer {token}".encode() + b"\xe9\r\n" + end,
        start + f"Authorization: Bearer {token}\r\nX-Bad\x01: 1\r\n".encode() + end,
    ]


async def test_no_token_in_any_log_line_response_or_metric(shared_sandbox: Any) -> None:
    tokens = {
        name: shared_sandbox.tokens[name] for name in ("client_broad", "owner", "package", "client_revoked")
    }
    tokens["invalid"] = INVALID
    seen = Seen()
    async with serve(
        *introspection_args(shared_sandbox),
        "--log-level",
        "DEBUG",
        "--body-timeout-seconds",
        "0.5",
        env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET},
    ) as gateway:
        url = await gateway.wait_listening()
        host = url.split("//")[1].split("/")[0]

        # valid calls, through the SDK's own client
        async with mcp_http(url, tokens["client_broad"], "auto") as client:
            found = await client.call_tool("search", {"query": "storage unit locker code", "limit": 3})
            seen.add(repr(found.model_dump()))
        async with mcp_http(url, tokens["package"], "legacy") as client:
            seen.add(repr((await client.call_tool("schema", {})).model_dump()))
        for name in ("owner", "invalid", "client_revoked"):
            try:
                async with mcp_http(url, tokens[name], "legacy") as client:
                    await client.list_tools()
            except* MCPError as refused:
                seen.add(repr(refused.exceptions), str(refused))

        # refusals over plain HTTP, each with a token
        for name, token in tokens.items():
            statuses = [
                await seen.post(url, token),
                await seen.post(f"{url}?access_token={token}", token),
                await seen.post(url, token, b'{"jsonrpc": "2.0", "id": 1, "method":'),
                await seen.post(url, token, **{"Content-Encoding": "gzip"}),
                await seen.post(url, token, **{"MCP-Protocol-Version": token[:20]}),
                await seen.post(url, token, method="GET"),
                await seen.post(url, token, Host="evil.example"),
                await seen.post(url, token, Origin="https://evil.example"),
            ]
            # the version is a header, checked before the bearer: 400 whatever the token
            assert [statuses[3], statuses[4], *statuses[5:]] == [415, 400, 405, 421, 403], (name, statuses)

        # malformed requests, absolute-form targets and a stalled body, each with a token
        for token in tokens.values():
            for data in malformed(host, token):
                assert await seen.raw(url, data) in (400, 401)
            absolute = (
                f"POST http://evil.example/mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                f"Accept: {JSON}\r\nContent-Type: {JSON}\r\nContent-Length: {len(PING)}\r\n\r\n"
            ).encode() + PING
            assert await seen.raw(url, absolute) == 421
        stalled = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {tokens['client_broad']}\r\n"
            f"Accept: {JSON}\r\nContent-Type: {JSON}\r\nContent-Length: 100\r\n\r\n"
        ).encode() + b'{"jsonrpc":'
        assert await seen.raw(url, stalled) == 408

        async with aiohttp.ClientSession() as http:
            for probe in ("/metrics", "/readyz", "/healthz"):
                async with http.get(url.replace("/mcp", probe)) as response:
                    seen.add(repr(list(response.headers.items())), await response.read())
        assert await gateway.stop() == 0
        await asyncio.sleep(0)

    logs = "".join(gateway.raw)
    answers = "\n".join(seen.parts)
    assert any(line.get("event") == "malformed_http" for line in gateway.lines), (
        "no malformed request was logged"
    )
    assert "pdpp_gateway_mcp_requests_total" in answers  # the scrape is part of what was searched
    for name, token in [*tokens.items(), ("introspection secret", SECRET)]:
        assert token not in logs, f"{name} token in the gateway's log"
        assert token not in answers, f"{name} token in an answer"
    assert not [line for line in gateway.lines if line.get("level") in ("error", "critical")], logs
