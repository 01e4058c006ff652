"""``pdpp-gateway connect`` as a person runs it: a real subprocess, the sandbox's real AS, a browser.

The browser is ``ConsentBrowser``: it opens the URL the command prints, reads the consent
page, submits it, and follows the redirect to the command's loopback listener. Then
``stdio`` serves with what was cached, through the SDK's own stdio client.
"""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import Client

from pdpp_gateway.commands.connect import _refuse_owner
from pdpp_gateway.local.credentials import load_credential
from pdpp_gateway.local.oauth_flow import ConnectError
from pdpp_gateway.local_verdict import CredentialError
from pdpp_gateway.sandbox.oauth_store import OAUTH, token_key
from tests.conftest import gateway_env, run_cli, stdio_params
from tests.oauth_browser import ConsentBrowser


@asynccontextmanager
async def _connect(
    *args: str, said: list[str] | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """Start ``connect ARGS --no-browser``; yield the process and the consent URL it printed
    (the stderr lines before it go to ``said``)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "connect",
        *args,
        "--no-browser",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(),
    )
    assert process.stderr is not None
    try:
        url = ""
        while not url:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "connect exited before printing a consent URL"
            if said is not None:
                said.append(line)
            url = line.strip() if line.startswith("  http") else ""
        yield process, url
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _finish(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _follow(browser: ConsentBrowser, location: str) -> int:
    async with browser.session.get(location) as response:  # the redirect to the loopback listener
        await response.read()
        return response.status


async def test_connect_caches_a_scoped_grant_that_stdio_then_serves(sandbox: Any, tmp_path: Path) -> None:
    cache = tmp_path / ".pdpp"
    async with (
        _connect(sandbox.url, "--cache-root", str(cache)) as (process, url),
        ConsentBrowser() as browser,
    ):
        status, form, _ = await browser.open(url)
        assert status == 200
        assert "pdpp-gateway" in form.text  # the registered app's name on the consent page
        mail = [v for v in form.streams if v.startswith("https://registry.pdpp.dev/connectors/gmail#")]
        status, location = await browser.submit(form, "approve", mail)
        assert location
        assert await _follow(browser, location) == 200
        code, out, err = await _finish(process)
    assert code == 0, err
    assert "Connected to" in out
    assert f"Next: pdpp-gateway stdio --provider-url {sandbox.url} --cache-root {cache.absolute()}" in out
    path = cache / "clients" / (sandbox.url.split("//")[1].replace(":", "_") + ".json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cached = json.loads(path.read_text())
    token = cached["credential"]["access_token"]
    assert token not in out + err
    assert cached["credential"]["refresh_token"]
    assert load_credential(sandbox.url, cache).grant_id == cached["credential"]["grant_id"]

    params = stdio_params(sandbox.url, cache)
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        tools = await client.list_tools()
        assert "schema" in {t.name for t in tools.tools}
        result = await client.call_tool("schema", {})
    text = result.content[0].text if result.content[0].type == "text" else ""
    assert "message_bodies" in text
    assert "repositories" not in text  # only what was approved

    cached["credential"]["expires_at"] = "2000-01-01T00:00:00+00:00"  # stdio renews with the refresh token
    path.write_text(json.dumps(cached))
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("schema", {})).is_error is False
        token = json.loads(path.read_text())["credential"]["access_token"]
        assert token != cached["credential"]["access_token"]
        del sandbox.app[OAUTH].access[
            token_key(token)
        ]  # the access token dies mid-session (expiry, revocation)
        renewed_mid_session = await client.call_tool("schema", {})
    assert renewed_mid_session.is_error is False
    token = json.loads(path.read_text())["credential"]["access_token"]
    del sandbox.app[OAUTH].access[
        token_key(token)
    ]  # dead before the next start: the start-up check renews it
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        assert len((await client.list_tools()).tools) == 6  # early answers, held until the renewal passed
        assert (await client.call_tool("schema", {})).is_error is False
    token = json.loads(path.read_text())["credential"]["access_token"]

    listed = run_cli("connect", "--list", "--cache-root", str(cache))
    assert listed.returncode == 0
    assert "streams=messages,threads,message_bodies,attachments" in listed.stdout
    assert token not in listed.stdout
    renewed = await asyncio.to_thread(
        run_cli, "connect", sandbox.url, "--refresh", "--cache-root", str(cache)
    )
    assert renewed.returncode == 0, renewed.stderr
    assert json.loads(path.read_text())["credential"]["access_token"] != token
    forgot = run_cli("connect", sandbox.url, "--forget", "--cache-root", str(cache))
    assert forgot.returncode == 0
    assert not path.exists()
    again = run_cli("connect", sandbox.url, "--forget", "--cache-root", str(cache))
    assert again.returncode == 78


async def test_denied_consent_exits_66_and_caches_nothing(sandbox: Any, tmp_path: Path) -> None:
    cache = tmp_path / ".pdpp"
    async with (
        _connect(sandbox.url, "--cache-root", str(cache)) as (process, url),
        ConsentBrowser() as browser,
    ):
        _, form, _ = await browser.open(url)
        _, location = await browser.submit(form, "deny")
        assert location
        await _follow(browser, location)
        code, _, err = await _finish(process)
    assert code == 66
    assert "denied" in err
    assert not (cache / "clients").exists()


async def test_a_redirect_with_another_state_exits_68(sandbox: Any, tmp_path: Path) -> None:
    async with _connect(sandbox.url, "--cache-root", str(tmp_path)) as (process, url):
        redirect = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))["redirect_uri"]
        callback = redirect.replace("%3A", ":").replace("%2F", "/")
        async with aiohttp.ClientSession() as session, session.get(f"{callback}?code=x&state=forged") as r:
            assert r.status == 400
        code, _, err = await _finish(process)
    assert code == 68
    assert "state" in err


@pytest.mark.parametrize("iss", ["", "&iss=https%3A%2F%2Fevil.example"])
async def test_a_redirect_from_another_or_an_unnamed_server_exits_68(
    sandbox: Any, tmp_path: Path, iss: str
) -> None:
    """RFC 9207: the sandbox names itself in every redirect back, so the right state with
    no ``iss``, or another server's, is a mix-up and nothing is exchanged or cached."""
    async with _connect(sandbox.url, "--cache-root", str(tmp_path)) as (process, url):
        query = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))
        callback = query["redirect_uri"].replace("%3A", ":").replace("%2F", "/")
        forged = f"{callback}?code=x&state={query['state']}{iss}"
        async with aiohttp.ClientSession() as session, session.get(forged) as r:
            assert r.status == 400
        code, _, err = await _finish(process)
    assert code == 68
    assert "RFC 9207" in err
    assert not (tmp_path / "clients").exists()


async def test_no_approval_within_the_timeout_exits_67(sandbox: Any, tmp_path: Path) -> None:
    async with _connect(sandbox.url, "--cache-root", str(tmp_path), "--timeout", "2") as (process, _):
        code, _, err = await _finish(process)
    assert code == 67
    assert "--timeout" in err
    assert "within 2 s" in err  # the timeout asked for, not the countdown's last value
    assert "0:02 left" in err  # the countdown (off a terminal: a line now, then every 30 s)


def test_unreachable_provider_and_bad_usage_are_one_line_with_their_codes(tmp_path: Path) -> None:
    done = run_cli("connect", "http://127.0.0.1:9", "--no-browser", "--cache-root", str(tmp_path))
    assert done.returncode == 69
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    usage = run_cli("connect", "http://127.0.0.1:9", "--stream", "messages")
    assert usage.returncode == 64


async def test_an_owner_token_is_never_cached(sandbox: Any) -> None:
    with pytest.raises(CredentialError) as labelled:
        await _refuse_owner(sandbox.url, {"access_token": "x", "pdpp_token_kind": "owner"})
    assert labelled.value.exit_code == 77
    with pytest.raises(CredentialError) as by_rs:  # unlabelled, but the RS says it is the owner's
        await _refuse_owner(sandbox.url, {"access_token": sandbox.tokens["owner"]})
    assert by_rs.value.exit_code == 77
    with pytest.raises(CredentialError) as package:  # the reference's answer for its multi-source picker
        await _refuse_owner(
            sandbox.url, {"access_token": sandbox.tokens["package"], "grant_package_id": "gpk_1"}
        )
    assert package.value.exit_code == 77
    assert "--connector" in package.value.message
    with pytest.raises(ConnectError) as rejected:
        await _refuse_owner(sandbox.url, {"access_token": "sbx_at_not_issued"})
    assert rejected.value.exit_code == 70


async def test_connect_asks_for_each_connector_in_turn_and_keeps_both(sandbox: Any, tmp_path: Path) -> None:
    cache = tmp_path / ".pdpp"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "pdpp_gateway", "connect", sandbox.url, "--connector", "gmail", "--connector", "github"),
        *("--cache-root", str(cache), "--no-browser"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(),
    )
    assert process.stderr is not None
    asked, approved = [], 0
    try:
        async with ConsentBrowser() as browser:
            while approved < 2:
                line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
                assert line, "connect exited before asking for both connectors"
                if line.startswith("Open this URL"):
                    asked.append(line)
                if line.startswith("  http"):
                    _, form, _ = await browser.open(line.strip())
                    offered = {value.split("#")[0].rsplit("/", 1)[-1] for value in form.streams}
                    assert len(offered) == 1  # connector_id narrowed the page to one connector
                    _, location = await browser.submit(form, "approve")
                    assert location
                    await _follow(browser, location)
                    approved += 1
        code, out, err = await _finish(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, err
    assert "gmail at" in asked[0]
    assert "github at" in asked[1]
    assert out.count("Connected to") == 2
    listed = await asyncio.to_thread(run_cli, "connect", "--list", "--cache-root", str(cache))
    assert [line.split()[1] for line in listed.stdout.splitlines()] == ["connector=gmail", "connector=github"]


async def test_connect_takes_the_mcp_url_a_client_shows(sandbox: Any, tmp_path: Path) -> None:
    cache = tmp_path / ".pdpp"
    async with (
        _connect(f"{sandbox.url}/mcp", "--connector", "gmail", "--cache-root", str(cache)) as (process, url),
        ConsentBrowser() as browser,
    ):
        _, form, _ = await browser.open(url)
        _, location = await browser.submit(form, "approve")
        assert location
        await _follow(browser, location)
        code, out, err = await _finish(process)
    assert code == 0, err
    assert f"Connected to {sandbox.url} (gmail)" in out
    assert load_credential(sandbox.url, cache).connector == "gmail"
