"""A client entry that works wherever it is pasted: credentials in one per-user place, and the
entry ``client-config`` prints spawned the way a desktop client spawns it (another working
directory, ``PATH=/usr/bin:/bin``, an environment of HOME alone), through the SDK's client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pdpp_gateway.local.cache_root import cache_root, user_cache_root
from pdpp_gateway.sandbox.runner import start_sandbox
from tests.conftest import as_person, run_cli
from tests.grants import approve


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_printed_desktop_entry_runs_from_anywhere(sandbox: Any, tmp_path: Path, era: str) -> None:
    home = tmp_path / "home"
    root = home / ".local" / "share" / "pdpp-gateway"  # where connect writes by default
    await approve(sandbox.url, root, "gmail")
    printed = await asyncio.to_thread(
        run_cli, "client-config", "--client", "claude-desktop", env=as_person(home), cwd=tmp_path
    )
    assert printed.returncode == 0, printed.stderr
    (entry,) = json.loads(printed.stdout.split("\n", 1)[1])["mcpServers"].values()
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-3:] == ["stdio", "--provider-url", sandbox.url]  # no --cache-root: the default
    elsewhere = tmp_path / "client-working-dir"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=elsewhere,
    )
    async with Client(params, mode=era, cache=None) as client:  # type: ignore[arg-type]
        result = await client.call_tool("schema", {})
    assert not result.is_error
    assert "messages" in result.content[0].text  # type: ignore[union-attr]


def test_the_per_user_root_and_a_local_pdpp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": ""}
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    assert user_cache_root(env) == tmp_path / ".local" / "share" / "pdpp-gateway"
    assert user_cache_root({"XDG_DATA_HOME": "/data"}) == Path("/data/pdpp-gateway")
    assert user_cache_root({"XDG_DATA_HOME": "relative"}) == tmp_path / ".local" / "share" / "pdpp-gateway"
    monkeypatch.chdir(tmp_path)
    local = tmp_path / ".pdpp" / "clients"
    local.mkdir(parents=True)
    (local / "pdpp.example.com.json").write_text("{}")
    pdpp_com, other = "https://pdpp.example.com", "https://other.example"
    assert cache_root(None, provider_url=pdpp_com, env=env) == user_cache_root(env)  # not opted in
    assert cache_root(None, provider_url=pdpp_com, trust_cwd=True, env=env) == tmp_path / ".pdpp"
    opted_by_env = {**env, "PDPP_TRUST_CWD_CACHE": "1"}
    assert cache_root(None, provider_url=pdpp_com, env=opted_by_env) == tmp_path / ".pdpp"
    assert cache_root(None, provider_url=other, trust_cwd=True, env=env) == user_cache_root(env)
    assert cache_root("elsewhere", provider_url="https://pdpp.example.com", env=env) == tmp_path / "elsewhere"


async def test_one_shot_commands_use_the_only_cached_provider(sandbox_factory: Any, tmp_path: Path) -> None:
    sandbox, other = await sandbox_factory(), await sandbox_factory()
    home = tmp_path / "home"
    await approve(sandbox.url, home / ".local" / "share" / "pdpp-gateway", "gmail")
    done = await asyncio.to_thread(run_cli, "search", "invoice", env=as_person(home), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"using the only provider with a cached grant, {sandbox.url}" in done.stderr
    await approve(other.url, home / ".local" / "share" / "pdpp-gateway", "github")
    several = await asyncio.to_thread(run_cli, "search", "invoice", env=as_person(home), cwd=tmp_path)
    assert several.returncode == 64
    assert f"pdpp-gateway search ... --provider-url {sandbox.url}" in several.stderr


def test_no_provider_and_nothing_cached_says_where_it_looked(tmp_path: Path) -> None:
    done = run_cli("call", "schema", env=as_person(tmp_path), cwd=tmp_path)
    assert done.returncode == 64
    assert "missing --provider-url" in done.stderr
    assert str(tmp_path / ".local" / "share" / "pdpp-gateway") in done.stderr  # absolute, not ".pdpp"


async def test_two_providers_on_one_host_get_an_entry_each_and_a_gone_one_is_named(tmp_path: Path) -> None:
    """The README's second sandbox (another port on 127.0.0.1): one entry each, named by host
    and port; when one stops, its entry is still printed, with a line saying it is not
    answering and what to run."""
    home = tmp_path / "home"
    root = home / ".local" / "share" / "pdpp-gateway"

    async def printed() -> tuple[dict[str, Any], str]:
        done = await asyncio.to_thread(
            run_cli, "client-config", "--client", "claude-desktop", env=as_person(home), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.split("\n", 1)[1])["mcpServers"], done.stderr

    async with start_sandbox() as first:
        async with start_sandbox() as second:
            await approve(first.url, root, "gmail")
            alone, _ = await printed()
            await approve(second.url, root, "github")
            servers, said = await printed()
            assert said == ""  # both answer
            assert alone.items() <= servers.items()  # a second provider renames no entry pasted before
        ports = [url.rsplit(":", 1)[1] for url in (first.url, second.url)]
        assert {name: entry["args"][-1] for name, entry in servers.items()} == {
            f"pdpp-127-0-0-1-{ports[0]}": first.url,
            f"pdpp-127-0-0-1-{ports[1]}": second.url,
        }
        after, said = await printed()
    assert after == servers  # the gone one is still printed (it may come back) ...
    assert said.count("\n") == 1  # ... with one line, about it alone
    assert f"{second.url} is not answering (connection refused)" in said
    assert f"pdpp-127-0-0-1-{ports[1]} entry" in said
    assert f"pdpp-gateway connect {second.url} --forget" in said
