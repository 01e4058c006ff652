"""The terminal commands a person runs: demo, and the search → read-field evidence ladder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from pdpp_gateway.credentials import write_credential

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "pdpp_gateway", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def test_demo_runs_the_hosted_gateway_on_the_sandbox_and_prints_client_setup(tmp_path: Path) -> None:
    done = _cli(
        "demo", "--port", "0", "--gateway-port", "0", "--cache-root", str(tmp_path / "cache"), "--once"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    url = re.search(r"MCP server URL:\s+(http://127\.0\.0\.1:\d+/mcp)", out)
    token = re.search(r"Demo token:\s+(\S+)", out)
    assert url, out
    assert token, out
    assert "tools: schema, query_records, aggregate, search, fetch, read_record_field" in out
    for stream in ("messages", "message_bodies", "issues", "recently_played", "pay_statements"):
        assert stream in out  # the schema index, as a model reads it
    assert "read_record_field {" in out  # the search evidence ladder
    header = f"Authorization: Bearer {token.group(1)}"
    assert f'claude mcp add --transport http pdpp-sandbox {url.group(1)} --header "{header}"' in out
    assert f"codex mcp add pdpp-sandbox --url {url.group(1)} --bearer-token-env-var PDPP_SANDBOX_TOKEN" in out
    config = json.loads(out[out.index('{\n  "mcpServers"') : out.index("\n}\n") + 2])
    assert config["mcpServers"]["pdpp-sandbox"] == {
        "type": "http",
        "url": url.group(1),
        "headers": {"Authorization": f"Bearer {token.group(1)}"},
    }
    assert "stdio --provider-url" in out


def test_cli_search_then_read_field_walks_the_evidence_ladder(tmp_path: Path, shared_sandbox: Any) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    common = ["--provider-url", shared_sandbox.url, "--cache-root", str(cache)]
    found = _cli("search", "storage unit locker", *common)
    assert found.returncode == 0, found.stderr
    match = re.search(r"read_record_field (\{.*?\})", found.stdout)
    assert match, found.stdout
    arguments = json.loads(match.group(1))
    read = _cli(
        "read-field",
        arguments["id"],
        arguments["field"],
        "--q",
        arguments["q"],
        "--before",
        str(arguments["before_chars"]),
        "--after",
        str(arguments["after_chars"]),
        *common,
    )
    assert read.returncode == 0, read.stderr
    assert "locker code is 4417-B" in read.stdout  # the fact, read from a bounded window, no export
    header = read.stdout.splitlines()[0]
    assert "complete=false" in header  # a window of a long body, not the whole record


def test_cli_errors_are_typed_and_go_to_stderr(tmp_path: Path, shared_sandbox: Any) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    done = _cli(
        "read-field",
        "messages:../../etc/passwd",
        "body",
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(cache),
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error invalid_id" in done.stderr
    no_cache = _cli(
        "search", "x", "--provider-url", shared_sandbox.url, "--cache-root", str(tmp_path / "none")
    )
    assert no_cache.returncode == 78
    assert f"pdpp connect {shared_sandbox.url}" in no_cache.stderr
