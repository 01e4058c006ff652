"""The stdio front door as a process: credentials, exit codes, stdout hygiene.

These run ``python -m pdpp_gateway stdio`` for real. A refused start never serves and
never calls the RS; a served session writes only JSON-RPC frames to stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pdpp_gateway.credentials import write_credential

ROOT = Path(__file__).resolve().parents[1]


def _run_stdio(
    *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    full_env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "pdpp_gateway", "stdio", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )


def test_missing_provider_url_is_a_usage_error() -> None:
    done = _run_stdio()
    assert done.returncode == 64
    assert done.stdout == ""
    assert "--provider-url" in done.stderr


def test_empty_cache_fails_closed_with_pdpp_connect_guidance(tmp_path: Path, shared_sandbox: Any) -> None:
    shared_sandbox.reset_calls()
    done = _run_stdio("--provider-url", shared_sandbox.url, "--cache-root", str(tmp_path / ".pdpp"))
    assert done.returncode == 78
    assert done.stdout == ""
    assert f"pdpp connect {shared_sandbox.url}" in done.stderr
    assert shared_sandbox.calls == []


def test_owner_token_in_environment_is_ignored_not_used(tmp_path: Path, shared_sandbox: Any) -> None:
    owner = shared_sandbox.tokens["owner"]
    shared_sandbox.reset_calls()
    done = _run_stdio(
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(tmp_path / ".pdpp"),
        env={"PDPP_OWNER_TOKEN": owner},
    )
    assert done.returncode == 78  # fails closed: no scoped credential, and the owner token is not a fallback
    assert "PDPP_OWNER_TOKEN" in done.stderr
    assert owner not in done.stderr + done.stdout
    assert shared_sandbox.calls == []


def test_owner_flagged_cached_credential_is_refused(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    owner = shared_sandbox.tokens["owner"]
    write_credential(cache_root, shared_sandbox.url, owner, extra={"token_kind": "owner"})
    done = _run_stdio("--provider-url", shared_sandbox.url, "--cache-root", str(cache_root))
    assert done.returncode == 77
    assert owner not in done.stderr + done.stdout


def test_expired_credential_is_refused(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    expired = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    write_credential(
        cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"], expires_at=expired
    )
    done = _run_stdio("--provider-url", shared_sandbox.url, "--cache-root", str(cache_root))
    assert done.returncode == 78
    assert "expired" in done.stderr
    assert f"pdpp connect {shared_sandbox.url}" in done.stderr


def test_stdout_carries_only_protocol_frames(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    token = shared_sandbox.tokens["client_broad"]
    write_credential(cache_root, shared_sandbox.url, token)
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "schema", "arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "query_records", "arguments": {"stream": "x", "filter": "a=1"}},
        },
    ]
    done = _run_stdio(
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(cache_root),
        env={"PDPP_LOG_LEVEL": "DEBUG"},
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    replies = [json.loads(line) for line in lines]  # every stdout line is a JSON-RPC frame
    assert all(reply.get("jsonrpc") == "2.0" for reply in replies)
    assert sorted(reply["id"] for reply in replies) == [1, 2, 3, 4]
    assert "pdpp-gateway" in done.stderr  # diagnostics went to stderr
    assert token not in done.stdout + done.stderr


@pytest.mark.parametrize(("era", "negotiated"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_both_eras_connect_over_stdio(
    tmp_path: Path, shared_sandbox: Any, stdio_connect: Any, era: str, negotiated: str
) -> None:
    async with stdio_connect(shared_sandbox, tmp_path / ".pdpp", era=era) as client:
        assert client.protocol_version == negotiated
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == [
            "schema",
            "query_records",
            "aggregate",
            "search",
            "fetch",
            "read_record_field",
        ]
        assert client.instructions
        assert "schema" in client.instructions[:512]
