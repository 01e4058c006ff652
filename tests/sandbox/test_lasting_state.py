"""A first contact that lasts: the ``sandbox`` and ``demo`` commands, run as a person runs them
(subprocesses with a fresh HOME), keep their clients, grants and ports across restarts.

Each test gives the commands a HOME of its own with no ``XDG_DATA_HOME``, so the state lands
where it would for a person (``~/.local/share/pdpp-gateway/...``) and never in the real HOME.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.oauth_store import OAUTH
from pdpp_gateway.sandbox.runner import start_sandbox
from tests.conftest import gateway_env, run_cli
from tests.oauth_browser import ConsentBrowser


def _person(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "XDG_DATA_HOME": ""}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _held(*ports: int) -> Iterator[None]:
    """Hold ``ports`` (those another program does not hold already) for the block."""
    with contextlib.ExitStack() as stack:
        for port in ports:
            holder = stack.enter_context(socket.socket())
            with contextlib.suppress(OSError):
                holder.bind(("127.0.0.1", port))
                holder.listen()
        yield


@asynccontextmanager
async def _sandbox(home: Path, *args: str) -> AsyncIterator[tuple[str, str]]:
    """``pdpp-gateway sandbox ARGS`` until the block ends (Ctrl-C): its URL and what it printed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "sandbox",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(_person(home)),
    )
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        lines: list[str] = []
        while not any("Ctrl-C" in line for line in lines):
            line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            assert line, f"the sandbox exited early: {(await process.stderr.read()).decode()}"
            lines.append(line)
        text = "".join(lines)
        url = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
        assert url, text
        yield url.group(1), text
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _connect(home: Path, provider: str) -> None:
    """``pdpp-gateway connect PROVIDER --no-browser``, approved at the consent page it prints."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "connect",
        provider,
        "--no-browser",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(_person(home)),
    )
    assert process.stderr is not None
    try:
        consent = ""
        while not consent:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "connect exited before printing a consent URL"
            consent = line.strip() if line.startswith("  http") else ""
        async with ConsentBrowser() as browser:
            location = await browser.approve(consent)
            async with browser.session.get(location) as response:  # back to connect's listener
                assert response.status == 200
        _, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _status(url: str, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/v1/streams", headers=headers) as answer,
    ):
        return answer.status


async def test_a_connected_grant_outlives_a_sandbox_restart_and_a_second_sandbox_keeps_its_own(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    port, other_port = _free_port(), _free_port()
    data = home / ".local" / "share" / "pdpp-gateway"
    state_dir = data / "sandbox" / f"127.0.0.1_{port}"
    async with _sandbox(home, "--port", str(port)) as (url, printed):
        assert f"clients and grants: kept in {state_dir} (delete it to start afresh)" in printed
        await _connect(home, url)
    state = state_dir / "state.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    cache = next((data / "clients").glob("*.json"))
    cached = json.loads(cache.read_text())
    credential = cached["credential"]
    saved = state.read_text()
    assert credential["access_token"] not in saved  # tokens are kept as hashes only
    assert credential["refresh_token"] not in saved
    suffix = json.loads(saved)["connection_suffix"]
    assert suffix

    async with _sandbox(home, "--port", str(port)) as (url, _):
        assert await _status(url, credential["access_token"]) == 200  # the access token it issued
        credential["expires_at"] = "2000-01-01T00:00:00+00:00"  # lapsed: the next read renews it
        cache.write_text(json.dumps(cached))
        read = await asyncio.to_thread(
            run_cli,
            "call",
            "query_records",
            '{"stream":"messages","limit":2}',
            "--provider-url",
            url,
            env=_person(home),
            cwd=tmp_path,
        )
        assert read.returncode == 0, read.stderr
        assert f"cin_mail_work{suffix}" in read.stdout  # the same connection ids as before the restart
        renewed = json.loads(cache.read_text())["credential"]
        assert renewed["refresh_token"] != credential["refresh_token"]  # the saved refresh token was honoured

        async with _sandbox(home, "--port", str(other_port)) as (other, printed):
            assert f"kept in {data / 'sandbox' / f'127.0.0.1_{other_port}'}" in printed
            assert await _status(other, renewed["access_token"]) == 401  # another sandbox, another AS
        assert await _status(url, renewed["access_token"]) == 200
    assert json.loads(state.read_text())["connection_suffix"] == suffix


def _ports(printed: str) -> tuple[int, int]:
    rs = re.search(r"Sandbox RS:\s+http://127\.0\.0\.1:(\d+)", printed)
    gateway = re.search(r"MCP server URL:\s+http://127\.0\.0\.1:(\d+)/mcp", printed)
    assert rs, printed
    assert gateway, printed
    return int(rs.group(1)), int(gateway.group(1))


def test_the_demo_takes_the_ports_it_had_last_time_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"

    def demo() -> tuple[tuple[int, int], str]:
        done = run_cli("demo", "--once", "--cache-root", str(tmp_path / "cache"), env=_person(home))
        assert done.returncode == 0, done.stderr
        return _ports(done.stdout), done.stderr

    with _held(7663, 7664):  # the usual ports taken: the demo chooses others
        (rs, gateway), _ = demo()
    assert 7663 not in {rs, gateway}
    assert 7664 not in {rs, gateway}
    again, said = demo()
    assert again == (rs, gateway)  # a client entry pasted last time still names them
    assert f"the sandbox RS takes port {rs} again, as last time (--port chooses another)" in said
    assert (
        f"the hosted gateway takes port {gateway} again, as last time (--gateway-port chooses another)"
        in said
    )
    with _held(rs):
        (moved, _), said = demo()
    assert moved != rs
    assert f"port {rs}, which the sandbox RS took last time, is in use by another program" in said


def test_a_saved_state_it_cannot_read_is_one_line_and_exit_64(tmp_path: Path) -> None:
    home, port = tmp_path / "home", _free_port()
    state = home / ".local" / "share" / "pdpp-gateway" / "sandbox" / f"127.0.0.1_{port}" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"version": 0}')
    state.chmod(0o600)  # as the sandbox writes it: it holds refresh tokens
    done = run_cli("sandbox", "--port", str(port), env=_person(home))
    assert done.returncode == 64
    assert done.stderr.strip().splitlines() == [
        f"pdpp-gateway sandbox: the sandbox's saved state {state} is not in this version's format; "
        f"remove {state.parent} to start afresh (its clients and grants are then forgotten)"
    ]


@pytest.mark.parametrize(
    "kind", ["link to /dev/zero", "fifo", "dangling link", "linked folder", "readable by all"]
)
def test_a_saved_state_that_is_not_a_private_file_is_refused_with_its_fix(tmp_path: Path, kind: str) -> None:
    """The credential cache's checks: never followed, never waited on, never silently reset."""
    home, port = tmp_path / "home", _free_port()
    state = home / ".local" / "share" / "pdpp-gateway" / "sandbox" / f"127.0.0.1_{port}" / "state.json"
    state.parent.mkdir(parents=True)
    if kind == "link to /dev/zero":
        state.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(state)
    elif kind == "dangling link":
        state.symlink_to(tmp_path / "nowhere.json")
    elif kind == "linked folder":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        state.parent.rmdir()
        state.parent.symlink_to(elsewhere, target_is_directory=True)
    else:
        state.write_text("{}")
        state.chmod(0o644)
    done = run_cli("sandbox", "--port", str(port), env=_person(home), timeout=30)
    assert done.returncode == 64
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("pdpp-gateway sandbox: refused the sandbox's saved state ")
    assert "Fix: " in line


async def test_the_sandbox_takes_the_port_it_chose_last_time_and_keeps_its_state_there(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with _held(7663):  # its usual port taken: it chooses another and remembers it
        async with _sandbox(home) as (first, _):
            pass
    async with _sandbox(home) as (again, printed):
        assert again == first
        port = first.rsplit(":", 1)[1]
        assert f"sandbox{os.sep}127.0.0.1_{port} (delete it to start afresh)" in printed
    async with _sandbox(home, "--no-state", "--port", "0") as (_, printed):
        assert "clients and grants: in memory, forgotten at stop" in printed


async def test_a_state_it_cannot_save_is_one_warning_and_the_sandbox_answers_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "state"
    config = SandboxConfig(state_file=str(blocker / "state.json"))
    registration = {"client_name": "App", "redirect_uris": ["http://127.0.0.1:9/cb"]}
    async with start_sandbox(config) as sandbox, aiohttp.ClientSession() as session:
        blocker.write_text("")  # its directory's place taken by a file while it runs: no save can land
        for _ in range(2):
            async with session.post(f"{sandbox.url}/oauth/register", json=registration) as answer:
                assert answer.status == 201
        assert len(sandbox.app[OAUTH].clients) == 2  # kept in memory until it stops
    warnings = [r.getMessage() for r in caplog.records if r.name == "pdpp_gateway.sandbox.oauth_state"]
    assert len(warnings) == 1
    assert f"cannot save the sandbox's clients and grants to {blocker / 'state.json'}" in warnings[0]
