"""Every source at one provider: one grant per connector in one cache file, served as one MCP server.

The reference AS issues one client grant per source, so a person who lets an agent read their
mail and their code at one provider holds two grants. Both are kept, both are served by one
``stdio --provider-url`` (routed and merged as a package), ``--connector`` narrows, and the
file stays the one the reference adapter reads (its first grant at the top level).
"""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pdpp_gateway.local.credentials import load_credential, load_credentials
from tests.conftest import run_cli, stdio_params
from tests.grants import approve

ERAS = ["legacy", "2026-07-28"]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def test_connecting_a_second_connector_keeps_the_first(sandbox: Any, tmp_path: Path) -> None:
    path = await approve(sandbox.url, tmp_path, "gmail")
    first = json.loads(path.read_text())
    await approve(sandbox.url, tmp_path, "github")
    payload = json.loads(path.read_text())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # the reference adapter reads the top level: still the first grant, whole
    assert payload["credential"]["access_token"] == first["credential"]["access_token"]
    assert payload["connector"] == "gmail"
    assert [g["connector"] for g in payload["more_grants"]] == ["github"]
    assert [c.connector for c in load_credentials(sandbox.url, tmp_path)] == ["gmail", "github"]

    await approve(sandbox.url, tmp_path, "gmail")  # the same connector again replaces only that one
    again = json.loads(path.read_text())
    assert again["credential"]["access_token"] != first["credential"]["access_token"]
    assert [g["connector"] for g in again["more_grants"]] == ["github"]
    assert again["more_grants"][0]["credential"] == payload["more_grants"][0]["credential"]

    listed = run_cli("connect", "--list", "--cache-root", str(tmp_path))
    lines = listed.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "connector=gmail" in lines[0]
    assert "streams=messages" in lines[0]
    assert "connector=github" in lines[1]
    assert "repositories" in lines[1]
    for grant in load_credentials(sandbox.url, tmp_path):
        assert grant.access_token not in listed.stdout


@pytest.mark.parametrize("era", ERAS)
async def test_one_stdio_server_serves_every_grant_of_the_provider(
    sandbox: Any, tmp_path: Path, era: str
) -> None:
    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")
    async with Client(stdio_params(sandbox.url, tmp_path), mode=era, cache=None) as client:  # type: ignore[arg-type]
        schema = _text(await client.call_tool("schema", {}))
        mail = await client.call_tool("query_records", {"stream": "messages", "limit": 2})
        code = await client.call_tool("query_records", {"stream": "repositories", "limit": 2})
        found = await client.call_tool("search", {"query": "invoice"})
    assert "messages" in schema
    assert "repositories" in schema
    assert not mail.is_error, _text(mail)
    assert not code.is_error, _text(code)
    assert not found.is_error
    tokens = {c.connector: c.access_token for c in load_credentials(sandbox.url, tmp_path)}
    used = {call.path.split("/")[3] for call in sandbox.calls if call.path.startswith("/v1/streams/")}
    assert {"messages", "repositories"} <= used
    assert all(token not in schema for token in tokens.values())

    narrowed = stdio_params(sandbox.url, tmp_path, "--connector", "github")
    async with Client(narrowed, mode=era, cache=None) as client:  # type: ignore[arg-type]
        only_code = _text(await client.call_tool("schema", {}))
        no_mail = await client.call_tool("query_records", {"stream": "messages", "limit": 2})
    assert "repositories" in only_code
    assert "messages" not in only_code
    assert no_mail.is_error


async def test_terminal_commands_use_every_grant_and_forget_takes_a_connector(
    sandbox: Any, tmp_path: Path
) -> None:
    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")
    common = ("--provider-url", sandbox.url, "--cache-root", str(tmp_path))
    both = await asyncio.to_thread(run_cli, "call", "schema", "{}", *common)
    assert both.returncode == 0, both.stderr
    assert "messages" in both.stdout
    assert "repositories" in both.stdout
    one = await asyncio.to_thread(run_cli, "call", "schema", "{}", *common, "--connector", "gmail")
    assert one.returncode == 0, one.stderr
    assert "repositories" not in one.stdout
    unknown = await asyncio.to_thread(run_cli, "call", "schema", "{}", *common, "--connector", "slack")
    assert unknown.returncode == 78
    assert "cached: gmail, github" in unknown.stderr

    refreshed = await asyncio.to_thread(
        run_cli, "connect", sandbox.url, "--refresh", "--cache-root", str(tmp_path)
    )
    assert refreshed.returncode == 0, refreshed.stderr
    assert "Renewed 2 of 2 grants" in refreshed.stdout
    forgot = await asyncio.to_thread(
        run_cli, "connect", sandbox.url, "--forget", "--connector", "github", "--cache-root", str(tmp_path)
    )
    assert forgot.returncode == 0, forgot.stderr
    assert "Forgot 1 grant (github)" in forgot.stdout
    assert "1 left" in forgot.stdout
    assert load_credential(sandbox.url, tmp_path).connector == "gmail"
    assert [c.connector for c in load_credentials(sandbox.url, tmp_path)] == ["gmail"]
    everything = await asyncio.to_thread(
        run_cli, "connect", sandbox.url, "--forget", "--cache-root", str(tmp_path)
    )
    assert everything.returncode == 0
    assert not any((tmp_path / "clients").glob("*.json"))


async def test_two_sandboxes_are_two_providers_with_their_own_sources(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """Each sandbox can carry its own connection ids (the CLI's default), so a package of both
    lists each source once and a connection_id routes to the one provider that has it."""
    first = await sandbox_factory(connection_suffix="_a")
    second = await sandbox_factory(connection_suffix="_b")
    await approve(first.url, tmp_path, "gmail")
    await approve(second.url, tmp_path, "gmail")
    args = ("--provider-url", first.url, "--provider-url", second.url, "--cache-root", str(tmp_path))
    listed = await asyncio.to_thread(run_cli, "call", "schema", '{"stream": "messages"}', *args, "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [
        entry["connection_id"]
        for connector in json.loads(listed.stdout)["data"]["connectors"]
        for entry in connector.get("granted_connections") or ()
    ]
    assert sorted(ids) == [
        f"cin_mail_{name}_{provider}" for name in ("home", "personal", "work") for provider in ("a", "b")
    ]
    routed = await asyncio.to_thread(
        run_cli,
        "call",
        "query_records",
        '{"stream": "messages", "connection_id": "cin_mail_work_b", "limit": 1}',
        *args,
        "--json",
    )
    assert routed.returncode == 0, routed.stderr
    assert json.loads(routed.stdout)["provider_url"] == second.url
