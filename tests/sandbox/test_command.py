"""``pdpp-gateway sandbox`` as a person runs it: it serves, prints its URL and tokens, and stops."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from tests.conftest import run_cli_async

ROOT = Path(__file__).resolve().parents[2]


async def test_sandbox_command_serves_prints_tokens_and_stops(tmp_path: Path) -> None:
    database = tmp_path / "sandbox.sqlite"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "sandbox",
        "--port",
        "0",
        "--db",
        str(database),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not any("Ctrl-C" in line for line in lines):
            line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
            assert line, "the sandbox command exited early"
            lines.append(line.decode())
        text = "".join(lines)
        url = re.search(r"listening on (http://127\.0\.0\.1:\d+)", text)
        assert url, text
        for name in ("client_narrow", "client_broad", "owner", "package", "client_expired", "client_revoked"):
            assert re.search(rf"^\s+{name}\s+sbx_", text, re.M), name
        token = re.search(r"client_broad\s+(\S+)", text).group(1)  # type: ignore[union-attr]
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            aiohttp.ClientSession() as session,
            session.get(url.group(1) + "/v1/streams", headers=headers) as response,
        ):
            assert response.status == 200
        assert database.stat().st_size > 100_000  # --db keeps the data in that file
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), timeout=30) == 0


async def test_sandbox_on_a_busy_port_is_one_line_and_exit_64() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, err = await run_cli_async("sandbox", "--port", str(port))
    assert code == 64
    assert err.strip() == (
        f"pdpp-gateway sandbox: cannot listen on 127.0.0.1:{port}: address already in use (choose another with --port)"
    )


async def test_a_public_url_that_is_not_an_origin_is_one_line_and_exit_64() -> None:
    code, err = await run_cli_async("sandbox", "--port", "0", "--public-url", "https://data.example.com/pdpp")
    assert code == 64
    assert err.strip() == (
        "pdpp-gateway sandbox: --public-url must be an origin such as https://data.example.com, "
        "not 'https://data.example.com/pdpp'"
    )
