"""``pdpp-gateway serve`` as a real process: JSON logs, graceful drain on SIGTERM, workers."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pdpp_gateway.hosted.testing import mcp_http
from tests.conftest import gateway_env

SECRET = "sandbox-introspection-secret"


class GatewayProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []

    async def wait_listening(self, count: int = 1) -> str:
        urls: list[str] = []
        assert self.process.stderr is not None
        while len(urls) < count:
            line = await asyncio.wait_for(self.process.stderr.readline(), timeout=60)
            assert line, f"the gateway exited early: {''.join(self.raw)}"
            self._keep(line)
            if self.lines and self.lines[-1].get("event") == "listening":
                urls.append(self.lines[-1]["url"])
        return urls[0]

    def _keep(self, line: bytes) -> None:
        text = line.decode()
        self.raw.append(text)
        try:
            self.lines.append(json.loads(text))
        except json.JSONDecodeError:
            self.lines.append({"unparsed": text})

    async def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.stderr is not None
        rest = await asyncio.wait_for(self.process.stderr.read(), timeout=60)
        for line in rest.splitlines(keepends=True):
            self._keep(line)
        return await asyncio.wait_for(self.process.wait(), timeout=60)


@asynccontextmanager
async def serve(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[GatewayProcess]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "serve",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(env),
    )
    gateway = GatewayProcess(process)
    try:
        yield gateway
    finally:
        if process.returncode is None:
            process.kill()
        assert process.stderr is not None
        await process.stderr.read()  # to end of file, so the pipe transport closes
        await process.wait()


def introspection_args(sandbox: Any) -> list[str]:
    return [
        "--provider-url",
        sandbox.url,
        "--introspection-url",
        f"{sandbox.url}/introspect",
        "--introspection-client-id",
        "pdpp-gateway",
    ]


async def test_serve_answers_mcp_and_logs_json_without_secrets(sandbox: Any) -> None:
    token = sandbox.tokens["client_broad"]
    async with serve(
        *introspection_args(sandbox), env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    ) as gateway:
        url = await gateway.wait_listening()
        async with mcp_http(url, token, "auto") as client:
            result = await client.call_tool("search", {"query": "storage unit locker code", "limit": 3})
            assert "4417-B" in result.content[0].text  # type: ignore[union-attr]
        assert await gateway.stop() == 0
    access = [line for line in gateway.lines if line.get("logger") == "pdpp_gateway.access"]
    assert access, gateway.raw
    assert all(line["request_id"].startswith("req_") for line in access)
    assert {line["path"] for line in access} == {"/mcp"}
    everything = "".join(gateway.raw)
    assert token not in everything
    assert SECRET not in everything
    assert any(line.get("event") == "stopped" for line in gateway.lines)


async def test_invalid_settings_exit_64_with_one_line() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "serve",
        "--provider-url",
        "https://a.example",
        "--trusted-proxy",
        "not-an-ip",
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(),
    )
    _, err = await process.communicate()
    assert process.returncode == 64
    assert (
        err.decode().strip()
        == "pdpp-gateway serve: trusted proxy 'not-an-ip' is not an IP address or CIDR network"
    )


@asynccontextmanager
async def slow_rs(delay: float) -> AsyncIterator[str]:
    """A minimal RS whose record list takes ``delay`` seconds: enough to catch a call in flight."""

    async def schema(request: web.Request) -> web.Response:
        return web.json_response({"object": "schema", "bearer": {"token_kind": "client"}, "connectors": []})

    async def records(request: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": "r1", "data": {"title": "finished after the signal"}}],
                "has_more": False,
            }
        )

    app = web.Application()
    app.router.add_get("/v1/schema", schema)
    app.router.add_get("/v1/streams/{stream}/records", records)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_sigterm_drains_the_call_in_flight() -> None:
    async with slow_rs(1.5) as rs_url, serve("--provider-url", rs_url) as gateway:
        url = await gateway.wait_listening()
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "query_records", "arguments": {"stream": "notes"}},
        }
        headers = {"Authorization": "Bearer any-client-token", "Accept": "application/json"}
        async with aiohttp.ClientSession() as http:
            in_flight = asyncio.create_task(http.post(url, json=call, headers=headers))
            await asyncio.sleep(0.5)
            stopping = asyncio.create_task(gateway.stop())
            response = await in_flight
            body = await response.json()
            assert response.status == 200
            assert "finished after the signal" in json.dumps(body)
            assert await stopping == 0


@pytest.mark.skipif(sys.platform != "linux", reason="SO_REUSEPORT load spreading is a Linux feature")
async def test_workers_share_one_port_and_one_metrics_view(sandbox: Any) -> None:
    args = [*introspection_args(sandbox), "--workers", "2"]
    async with serve(*args, env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}) as gateway:
        url = await gateway.wait_listening(count=2)
        pids = {line["pid"] for line in gateway.lines if line.get("event") == "listening"}
        assert len(pids) == 2
        headers = {"Authorization": f"Bearer {sandbox.tokens['client_narrow']}", "Accept": "application/json"}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for _ in range(20):
            async with (
                aiohttp.ClientSession() as http,
                http.post(url, json=ping, headers=headers) as response,
            ):
                assert response.status == 200
        async with aiohttp.ClientSession() as http, http.get(url.replace("/mcp", "/metrics")) as response:
            metrics = await response.text()
        assert 'pdpp_gateway_mcp_requests_total{method="tools/list",outcome="ok",tool=""} 20.0' in metrics
        assert await gateway.stop() == 0
