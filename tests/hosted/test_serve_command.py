"""``pdpp-gateway serve`` as a real process: JSON logs, graceful drain on SIGTERM, workers."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pdpp_gateway.hosted.embedded import mcp_http
from tests.conftest import gateway_env, run_cli_async
from tests.gateway_process import serve
from tests.upstreams import serve_app

SECRET = "sandbox-introspection-secret"
REPOSITORY = Path(__file__).resolve().parents[2]


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


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop is not built for Windows")
async def test_serve_runs_on_uvloop_and_says_so(sandbox: Any) -> None:
    async with serve(
        *introspection_args(sandbox), env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    ) as gateway:
        url = await gateway.wait_listening()
        async with mcp_http(url, sandbox.tokens["client_broad"], "auto") as client:
            result = await client.call_tool("schema", {})
            assert not result.is_error
        assert await gateway.stop() == 0
    listening = [line for line in gateway.lines if line.get("event") == "listening"]
    assert [line["loop"] for line in listening] == ["uvloop"], gateway.raw
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


async def test_the_same_settings_file_is_read_from_any_working_directory(
    shared_sandbox: Any, tmp_path: Path
) -> None:
    """The user's settings file is found wherever ``serve`` starts, and the start-up
    line names it; the directory the process starts in plays no part."""
    user_file = tmp_path / "xdg" / "pdpp-gateway" / "gateway.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(
        f'[gateway]\nprovider_url = "{shared_sandbox.url}"\nserver_name = "from-user-file"\n',
        encoding="utf-8",
    )
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    for cwd in (elsewhere, REPOSITORY):
        async with serve(env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, cwd=cwd) as gateway:
            url = await gateway.wait_listening()
            listening = gateway.lines[-1]
            assert listening["config_file"] == str(user_file), gateway.raw
            assert f"settings file {user_file}" in listening["msg"]
            async with mcp_http(url, shared_sandbox.tokens["client_broad"], "auto") as client:
                assert client.server_info.name == "from-user-file"
            assert await gateway.stop() == 0


async def test_a_settings_file_in_the_working_directory_is_read_only_when_named(
    shared_sandbox: Any, tmp_path: Path
) -> None:
    local = tmp_path / "config" / "gateway.toml"
    local.parent.mkdir()
    local.write_text('[gateway]\nserver_name = "from-local-file"\n', encoding="utf-8")
    provider = ("--provider-url", shared_sandbox.url)
    async with serve(*provider, cwd=tmp_path) as gateway:
        url = await gateway.wait_listening()
        assert gateway.lines[-1]["config_file"] is None
        warning = next(line for line in gateway.lines if line.get("event") == "config_not_read")
        assert "pass --config config/gateway.toml" in warning["msg"]
        async with mcp_http(url, shared_sandbox.tokens["client_broad"], "auto") as client:
            assert client.server_info.name == "pdpp-gateway"
        assert await gateway.stop() == 0
    for named, env in (
        (("--config", "config/gateway.toml"), None),
        ((), {"PDPP_GATEWAY_CONFIG": "config/gateway.toml"}),
    ):
        async with serve(*provider, *named, env=env, cwd=tmp_path) as gateway:
            url = await gateway.wait_listening()
            assert gateway.lines[-1]["config_file"] == str(local), gateway.raw
            assert not any(line.get("event") == "config_not_read" for line in gateway.lines)
            async with mcp_http(url, shared_sandbox.tokens["client_broad"], "auto") as client:
                assert client.server_info.name == "from-local-file"
            assert await gateway.stop() == 0


@dataclass
class SlowRs:
    """A minimal RS whose record list is held until the test releases it: ``started`` is
    set once a record read reached it, so the test knows a call is in flight."""

    url: str = ""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def slow_rs() -> AsyncIterator[SlowRs]:
    rs = SlowRs()

    async def schema(request: web.Request) -> web.Response:
        return web.json_response({"object": "schema", "bearer": {"token_kind": "client"}, "connectors": []})

    async def records(request: web.Request) -> web.Response:
        rs.started.set()
        await rs.release.wait()
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
    async with serve_app(app) as url:
        rs.url = url
        try:
            yield rs
        finally:
            rs.release.set()  # never leave a handler waiting past the test


async def wait_draining(readyz: str) -> None:
    """Poll ``/readyz`` (each time on a fresh connection) until it says ``draining``."""
    async with asyncio.timeout(30):
        while True:
            async with aiohttp.ClientSession() as fresh, fresh.get(readyz) as response:
                if response.status == 503 and (await response.json())["status"] == "draining":
                    return
            await asyncio.sleep(0.02)


QUERY_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "query_records", "arguments": {"stream": "notes"}},
}
ANY_CLIENT = {"Authorization": "Bearer any-client-token", "Accept": "application/json"}


async def test_sigterm_drains_the_call_in_flight() -> None:
    async with slow_rs() as rs, serve("--provider-url", rs.url) as gateway:
        url = await gateway.wait_listening()
        async with aiohttp.ClientSession() as http:
            in_flight = asyncio.create_task(http.post(url, json=QUERY_CALL, headers=ANY_CLIENT))
            await asyncio.wait_for(rs.started.wait(), timeout=30)  # the call reached the RS
            stopping = asyncio.create_task(gateway.stop())
            await wait_draining(url.replace("/mcp", "/readyz"))  # the signal arrived mid-call
            rs.release.set()
            response = await in_flight
            body = await response.json()
            assert response.status == 200
            assert "finished after the signal" in json.dumps(body)
            assert await stopping == 0


@pytest.mark.skipif(sys.platform != "linux", reason="SO_REUSEPORT load spreading is a Linux feature")
async def test_workers_share_one_port_and_one_metrics_view(sandbox: Any) -> None:
    """With ``--port 0`` the parent picks the port: one URL, served by more than one process."""
    args = [*introspection_args(sandbox), "--workers", "2"]
    async with serve(*args, env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}) as gateway:
        url = await gateway.wait_listening(count=2)
        listening = [line for line in gateway.lines if line.get("event") == "listening"]
        assert {line["url"] for line in listening} == {url}
        assert len({line["pid"] for line in listening}) == 2
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
    served_by = {line["pid"] for line in gateway.lines if line.get("path") == "/mcp"}
    assert len(served_by) > 1, gateway.raw


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port some other process is listening on (no SO_REUSEPORT)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_busy_port_is_one_line_and_exit_64(busy_port: int, workers: str) -> None:
    code, err = await run_cli_async(
        "serve", "--provider-url", "https://a.example", "--port", str(busy_port), "--workers", workers
    )
    assert code == 64
    assert (
        err.strip() == f"pdpp-gateway serve: cannot listen on 127.0.0.1:{busy_port}: address already in use"
    )


@pytest.mark.parametrize("which", ["--port", "--gateway-port"])
async def test_demo_on_a_busy_port_is_one_line_and_exit_64(
    busy_port: int, which: str, tmp_path: Path
) -> None:
    ports = {"--port": "0", "--gateway-port": "0", which: str(busy_port)}
    code, err = await run_cli_async(
        "demo", "--once", "--cache-root", str(tmp_path / "cache"), *(x for kv in ports.items() for x in kv)
    )
    assert code == 64
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"cannot listen on 127.0.0.1:{busy_port}: address already in use" in lines[0]
    assert which in lines[0]


async def test_package_file_flag(sandbox: Any, tmp_path: Path) -> None:
    """``--package-file`` resolves packages from the operator's file, not the introspection answer
    (which would name two children)."""
    packages = tmp_path / "packages.json"
    member = {
        "token_env": "CHILD_WORK_MAIL",
        "grant_id": "grt_work_mail",
        "connection_ids": ["cin_mail_work"],
        "streams": ["messages", "threads", "message_bodies", "attachments"],
        "source": {"connector_key": "gmail", "display_name": "Work"},
    }
    packages.write_text(json.dumps({"gpk_demo": [member]}), encoding="utf-8")
    env = {"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET, "CHILD_WORK_MAIL": sandbox.tokens["client_work_mail"]}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}
    headers = {"Authorization": f"Bearer {sandbox.tokens['package']}", "Accept": "application/json"}
    async with serve(*introspection_args(sandbox), "--package-file", str(packages), env=env) as gateway:
        url = await gateway.wait_listening()
        async with aiohttp.ClientSession() as http, http.post(url, json=call, headers=headers) as response:
            assert response.status == 200
            assert response.headers["X-Pdpp-Grant-Package-Member-Count"] == "1"
            text = (await response.json())["result"]["content"][0]["text"]
        assert "cin_mail_work" in text
        assert "cin_slack_acme" not in text
        assert await gateway.stop() == 0


async def test_public_url_flag_sets_every_advertised_url(sandbox: Any) -> None:
    public = "https://mcp.example.org"
    async with serve("--provider-url", sandbox.url, "--public-url", public) as gateway:
        url = await gateway.wait_listening()
        base = url.removesuffix("/mcp")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/.well-known/oauth-protected-resource/mcp") as response:
                document = await response.json()
            async with http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}) as response:
                assert response.status == 401
                challenge = response.headers["WWW-Authenticate"]
            async with http.get(f"{base}/connect", headers={"Host": "mcp.example.org"}) as response:
                assert response.status == 200
                page = await response.text()
        assert document["resource"] == f"{public}/mcp"
        assert document["pdpp_agent_discovery"]["mcp"]["endpoint"] == f"{public}/mcp"
        assert challenge == f'Bearer resource_metadata="{public}/.well-known/oauth-protected-resource/mcp"'
        assert f"{public}/mcp" in page
        assert await gateway.stop() == 0


async def test_readyz_turns_503_while_draining() -> None:
    """On SIGTERM readiness fails at once, while the in-flight call still finishes."""
    async with slow_rs() as rs, serve("--provider-url", rs.url) as gateway:
        url = await gateway.wait_listening()
        readyz = url.replace("/mcp", "/readyz")
        async with aiohttp.ClientSession() as http:
            async with http.get(readyz) as response:
                assert response.status == 200  # the stub's /v1 API answers
                assert (await response.json())["status"] == "ready"
            in_flight = asyncio.create_task(http.post(url, json=QUERY_CALL, headers=ANY_CLIENT))
            await asyncio.wait_for(rs.started.wait(), timeout=30)
            gateway.process.send_signal(signal.SIGTERM)
            await wait_draining(readyz)
            assert not in_flight.done()  # draining while the call is still held by the RS
            rs.release.set()
            response = await in_flight
            assert response.status == 200
            assert "finished after the signal" in json.dumps(await response.json())
        assert await gateway.stop(already_signalled=True) == 0


async def test_a_call_still_running_at_the_end_of_the_grace_gets_an_answer() -> None:
    """The RS never answers: within the 2 s grace the call gets a JSON-RPC error saying the
    server is restarting (with Retry-After), not a closed connection, and the process exits
    within the grace."""
    async with slow_rs() as rs, serve("--provider-url", rs.url, "--shutdown-grace-seconds", "2") as gateway:
        url = await gateway.wait_listening()
        async with aiohttp.ClientSession() as http:
            in_flight = asyncio.create_task(http.post(url, json=QUERY_CALL, headers=ANY_CLIENT))
            await asyncio.wait_for(rs.started.wait(), timeout=30)
            started = asyncio.get_running_loop().time()
            stopping = asyncio.create_task(gateway.stop())
            response = await in_flight
            body = await response.json()
            code = await stopping
            took = asyncio.get_running_loop().time() - started
    assert response.status == 503
    assert response.headers["Retry-After"] == "2"
    assert body["id"] == QUERY_CALL["id"]
    assert body["error"]["data"]["code"] == "server_restarting"
    assert "restarting" in body["error"]["message"]
    assert code == 0
    assert took < 2.0, took
