"""The stdio front door as a process: credentials, exit codes, stdout hygiene.

These run ``python -m pdpp_gateway stdio`` for real. A refused start never serves and
never calls the RS; a served session writes only JSON-RPC frames to stdout.
"""

from __future__ import annotations

import json
import re
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import gateway_env, run_cli, stdio_params
from tests.frames import INITIALIZED, initialize
from tests.strict_client import error_of
from tests.upstreams import Switchboard


def test_missing_provider_url_is_a_usage_error() -> None:
    done = run_cli("stdio")
    assert done.returncode == 64
    assert done.stdout == ""
    assert "--provider-url" in done.stderr


def test_empty_cache_fails_closed_with_pdpp_connect_guidance(tmp_path: Path, shared_sandbox: Any) -> None:
    shared_sandbox.calls.clear()
    done = run_cli("stdio", "--provider-url", shared_sandbox.url, "--cache-root", str(tmp_path / ".pdpp"))
    assert done.returncode == 78
    assert done.stdout == ""
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr
    assert shared_sandbox.calls == []


def test_owner_token_in_environment_is_ignored_not_used(tmp_path: Path, shared_sandbox: Any) -> None:
    owner = shared_sandbox.tokens["owner"]
    shared_sandbox.calls.clear()
    done = run_cli(
        "stdio",
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
    done = run_cli("stdio", "--provider-url", shared_sandbox.url, "--cache-root", str(cache_root))
    assert done.returncode == 77
    assert owner not in done.stderr + done.stdout


def test_expired_credential_is_refused(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    expired = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    write_credential(
        cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"], expires_at=expired
    )
    done = run_cli("stdio", "--provider-url", shared_sandbox.url, "--cache-root", str(cache_root))
    assert done.returncode == 78
    assert "expired" in done.stderr
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr


def test_stdout_carries_only_protocol_frames(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    token = shared_sandbox.tokens["client_broad"]
    write_credential(cache_root, shared_sandbox.url, token)
    frames = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "schema", "arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "query_records", "arguments": {"stream": "x", "filter": "a=1"}},
        },
    ]
    done = run_cli(
        "stdio",
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


# --- the token kind comes from the RS, not from the cache file's labels -----------------------


def _serve_args(url: str, cache_root: Path) -> tuple[str, ...]:
    return ("--provider-url", url, "--cache-root", str(cache_root))


@pytest.mark.parametrize("name", ["owner", "package"])
def test_unlabelled_owner_or_package_token_is_refused_by_what_the_rs_says(
    tmp_path: Path, shared_sandbox: Any, name: str
) -> None:
    cache_root = tmp_path / ".pdpp"
    token = shared_sandbox.tokens[name]
    write_credential(cache_root, shared_sandbox.url, token)  # no kind label at all
    shared_sandbox.calls.clear()
    done = run_cli("stdio", *_serve_args(shared_sandbox.url, cache_root))
    assert done.returncode == 77, done.stderr
    assert done.stdout == ""
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr
    assert ("owner" if name == "owner" else "mcp_package") in done.stderr
    assert token not in done.stderr + done.stdout
    assert {call.path for call in shared_sandbox.calls} == {"/v1/schema"}  # the probe only, never data


def test_cached_mcp_package_label_is_refused_without_an_rs_call(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    token = shared_sandbox.tokens["package"]
    write_credential(cache_root, shared_sandbox.url, token, extra={"token_kind": "mcp_package"})
    shared_sandbox.calls.clear()
    done = run_cli("stdio", *_serve_args(shared_sandbox.url, cache_root))
    assert done.returncode == 77
    assert "mcp_package" in done.stderr
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr
    assert token not in done.stderr
    assert shared_sandbox.calls == []


@pytest.mark.parametrize(
    ("expires_at", "reason"), [("garbage", "expires_at"), (True, "expires_at"), (1000, "expired")]
)
def test_unreadable_or_numeric_expiry_is_never_treated_as_never_expiring(
    tmp_path: Path, shared_sandbox: Any, expires_at: object, reason: str
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(
        cache_root,
        shared_sandbox.url,
        shared_sandbox.tokens["client_broad"],
        extra={"expires_at": expires_at},
    )
    shared_sandbox.calls.clear()
    done = run_cli("stdio", *_serve_args(shared_sandbox.url, cache_root))
    assert done.returncode == 78
    assert reason in done.stderr
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr
    assert shared_sandbox.calls == []


async def test_rs_down_at_start_then_an_unlabelled_owner_token_never_reads(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    board = Switchboard(shared_sandbox.url, down=True)
    owner = shared_sandbox.tokens["owner"]
    async with board.serve() as url:
        cache_root = tmp_path / ".pdpp"
        write_credential(cache_root, url, owner)
        async with Client(stdio_params(url, cache_root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            assert set(board.paths()) == {"/v1/schema"}  # the start-up probe met the outage; it serves anyway
            board.down = False
            result = await client.call_tool("query_records", {"stream": "messages", "limit": 1})
            assert result.is_error
            assert result.structured_content is None  # strict clients validate error results too
            assert error_of(result)["code"] == "owner_token_refused"
            assert f"pdpp-gateway connect {url}" in result.content[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError) as caught:
                await client.read_resource("pdpp://stream/messages")
            assert caught.value.code == -32001  # a refused credential, as on every door
            assert caught.value.error.data["code"] == "owner_token_refused"
            probes = board.paths().count("/v1/schema")
            again = await client.call_tool("search", {"query": "invoice"})
            assert again.is_error
            assert board.paths().count("/v1/schema") == probes  # the verdict is cached for the process
    assert board.data_reads() == []  # nothing but the schema probe ever saw the owner token


async def test_rs_down_at_start_then_a_client_token_is_verified_once(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    board = Switchboard(shared_sandbox.url, down=True)
    async with board.serve() as url:
        cache_root = tmp_path / ".pdpp"
        write_credential(cache_root, url, shared_sandbox.tokens["client_broad"])
        async with Client(stdio_params(url, cache_root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            down = await client.call_tool("query_records", {"stream": "messages", "limit": 1})
            assert down.is_error
            assert error_of(down)["code"] == "upstream_unavailable"
            assert board.data_reads() == []
            board.down = False
            board.seen.clear()
            for _ in range(2):
                page = await client.call_tool(
                    "query_records", {"stream": "messages", "connection_id": "cin_mail_work", "limit": 1}
                )
                assert not page.is_error, page.content
            assert board.paths() == [
                "/v1/schema",
                "/v1/streams/messages/records",
                "/v1/streams/messages/records",
            ]


# --- resources: an unreachable RS is "try again shortly", garbage internal, caller mistakes invalid params


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_resources_with_the_rs_down_fail_as_unavailable_without_a_traceback(tmp_path: Path) -> None:
    url = _dead_url()
    cache_root = tmp_path / ".pdpp"
    token = "tok_client_for_a_dead_rs"
    write_credential(cache_root, url, token)
    frames = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "pdpp://stream/messages"}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "resources/read",
            "params": {"uri": "pdpp://stream/..%2Fadmin"},
        },
    ]
    done = run_cli(
        "stdio", *_serve_args(url, cache_root), stdin="".join(json.dumps(frame) + "\n" for frame in frames)
    )
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert replies[2]["error"]["code"] == -32000  # the RS is down: not the caller's fault, try again
    assert replies[2]["error"]["data"]["code"] == "upstream_unavailable"
    assert replies[3]["error"]["code"] == -32000
    assert len(replies[3]["error"]["message"]) <= 300
    assert replies[4]["error"]["code"] == -32602  # a bad URI is the caller's to fix
    assert "Traceback" not in done.stderr
    assert done.stderr.count("resources/list failed") == 1
    assert "unreachable at start-up" in done.stderr
    assert token not in done.stderr + done.stdout


async def test_resource_reads_tell_upstream_faults_from_caller_mistakes(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    board = Switchboard(shared_sandbox.url)
    async with board.serve() as url:
        cache_root = tmp_path / ".pdpp"
        write_credential(cache_root, url, shared_sandbox.tokens["client_broad"])
        async with Client(stdio_params(url, cache_root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            board.garbage = True  # a 200 whose body is HTML
            with pytest.raises(MCPError) as garbled:
                await client.read_resource("pdpp://stream/messages")
            assert garbled.value.code == -32603
            assert garbled.value.error.data["code"] == "upstream_malformed_response"
            board.garbage, board.down = False, True
            with pytest.raises(MCPError) as outage:
                await client.read_resource("pdpp://record/cin_mail_work%2Fmessages%3Am1")
            assert outage.value.code == -32000
            assert outage.value.error.data["code"] == "upstream_unavailable"
            with pytest.raises(MCPError) as listing:
                await client.list_resources()
            assert listing.value.code == -32000
            with pytest.raises(MCPError) as mistake:
                await client.read_resource("pdpp://record/not-a-handle")
            assert mistake.value.code == -32602


# --- configuration from the environment, and the oldest handshake era -------------------------


async def test_environment_configures_provider_cache_and_server_name(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache_root = tmp_path / "elsewhere"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    env = gateway_env(
        {
            "PDPP_PROVIDER_URL": shared_sandbox.url,
            "PDPP_CACHE_ROOT": str(cache_root),
            "PDPP_MCP_SERVER_NAME": "named-by-env",
        }
    )
    bare = StdioServerParameters(command=sys.executable, args=["-m", "pdpp_gateway", "stdio"], env=env)
    async with Client(bare, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        assert client.server_info is not None
        assert client.server_info.name == "named-by-env"
        schema = await client.call_tool("schema", {})
        assert not schema.is_error
        assert "messages" in schema.content[0].text  # type: ignore[union-attr]
    flagged = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pdpp_gateway", "stdio", "--server-name", "named-by-flag"],
        env=env,
    )
    async with Client(flagged, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        assert client.server_info is not None
        assert client.server_info.name == "named-by-flag"  # the flag beats the environment


async def test_the_2024_11_05_handshake_era_over_stdio(
    tmp_path: Path, shared_sandbox: Any, stdio_connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", "2024-11-05")
    async with stdio_connect(shared_sandbox, tmp_path / ".pdpp", era="legacy") as client:
        assert client.protocol_version == "2024-11-05"
        tools = await client.list_tools()
        assert len(tools.tools) == 6
        hits = await client.call_tool("search", {"query": "invoice", "limit": 2})
        assert not hits.is_error
        text = hits.content[0].text
        assert re.search(r"cin_\w+/\w+:\S+", text), text
        listed = await client.list_resources()
        assert any(str(r.uri) == "pdpp://stream/messages" for r in listed.resources)


def test_non_finite_filter_values_are_refused_before_the_rs(tmp_path: Path, shared_sandbox: Any) -> None:
    """JSON parsers on the way in accept ``NaN`` and ``1e999``; they must never become ``filter[x]=nan``."""
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    call = (
        '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":'
        '{"stream":"messages","connection_id":"cin_mail_work",%s}}}'
    )
    lines = [
        json.dumps(initialize()),
        json.dumps(INITIALIZED),
        call % (2, "query_records", '"filter":{"size_bytes":NaN}'),
        call % (3, "query_records", '"filter":{"size_bytes":{"gte":1e999}}'),
        call % (4, "aggregate", '"metric":"count","filter":{"size_bytes":-Infinity}'),
    ]
    shared_sandbox.calls.clear()
    done = run_cli("stdio", *_serve_args(shared_sandbox.url, cache_root), stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    for request_id in (2, 3, 4):
        result = replies[request_id]["result"]
        assert result["isError"] is True
        assert "structuredContent" not in result
        assert result["content"][0]["text"].startswith("Error invalid_filter")
        assert "finite" in result["content"][0]["text"]
    assert {call.path for call in shared_sandbox.calls} == {"/v1/schema"}  # the start-up probe only
