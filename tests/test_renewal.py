"""Sessions outlive their access tokens, as on the PDPP reference: 403 ``grant_expired`` for a
lapsed token, rotating refresh tokens whose reuse revokes the grant, one renewal per expiry.

Every grant here comes from the sandbox's real authorization server (``tests.grants``).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pdpp_gateway.local.credentials import load_credential, load_credentials
from pdpp_gateway.local.renewal import RenewalError, renew
from pdpp_gateway.local.renewing_rs import RenewingRs
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsStatusError
from pdpp_gateway.sandbox.oauth_store import OAUTH, token_key
from tests.conftest import run_cli, run_cli_async, stdio_params
from tests.grants import approve, lapse_now, refreshes
from tests.upstreams import Fault, upstream_proxy

ERAS = ["legacy", "2026-07-28"]


async def test_the_sandbox_answers_a_lapsed_token_as_the_reference_does(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sandbox = await sandbox_factory(access_token_ttl=1)
    await approve(sandbox.url, tmp_path, "gmail")
    credential = load_credential(sandbox.url, tmp_path, connector="gmail")
    assert credential.refreshable
    lapse_now(sandbox)
    async with RsClient(sandbox.url) as rs:
        with pytest.raises(RsStatusError) as lapsed:
            await rs.bind(credential.access_token).get_json("/v1/schema")
    assert (lapsed.value.status, lapsed.value.code) == (403, "grant_expired")
    assert lapsed.value.envelope["message"] == "Grant has expired"


async def test_concurrent_reads_at_the_expiry_share_one_renewal(sandbox_factory: Any, tmp_path: Path) -> None:
    sandbox = await sandbox_factory()
    await approve(sandbox.url, tmp_path, "gmail")
    credential = load_credential(sandbox.url, tmp_path, connector="gmail")
    async with RsClient(sandbox.url) as rs:
        reader = RenewingRs(rs, credential, tmp_path)
        await reader.get_json("/v1/schema")
        lapse_now(sandbox)
        answers = await asyncio.gather(*(reader.get_json("/v1/streams/messages/records") for _ in range(25)))
    assert all(answer.body.get("data") is not None for answer in answers)
    assert refreshes(sandbox) == 1
    cached = load_credential(sandbox.url, tmp_path, connector="gmail")
    assert cached.access_token == reader.credential.access_token != credential.access_token


async def test_a_read_renews_ahead_of_the_expiry(sandbox_factory: Any, tmp_path: Path) -> None:
    """With less than a tenth of its lifetime left the token is renewed before the read,
    so the RS never sees a lapsed token."""
    sandbox = await sandbox_factory(access_token_ttl=2)
    await approve(sandbox.url, tmp_path, "gmail")
    credential = load_credential(sandbox.url, tmp_path, connector="gmail")
    assert credential.renew_margin() == pytest.approx(0.2)
    async with RsClient(sandbox.url) as rs:
        reader = RenewingRs(rs, credential, tmp_path)
        await asyncio.sleep(1.85)
        sandbox.calls.clear()
        await reader.get_json("/v1/schema")
    assert refreshes(sandbox) == 1
    assert [call.path for call in sandbox.calls] == ["/v1/schema"]  # one read, never refused and repeated


async def test_a_refused_renewal_names_the_command_that_approves_the_grant_again(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sandbox = await sandbox_factory()
    await approve(sandbox.url, tmp_path, "gmail")
    spent = json.loads(next((tmp_path / "clients").glob("*.json")).read_text())["credential"]["refresh_token"]
    credential = await renew(sandbox.url, tmp_path, "gmail", stale=None)
    store = sandbox.app[OAUTH]
    assert store.take_refresh(spent) is None  # reuse of a spent refresh token: the family is revoked
    async with RsClient(sandbox.url) as rs:
        reader = RenewingRs(rs, credential, tmp_path)
        with pytest.raises(RsStatusError) as failed:
            await reader.get_json("/v1/schema")
        asked = refreshes(sandbox)
        with pytest.raises(RsStatusError):
            await reader.get_json("/v1/schema")
        assert refreshes(sandbox) == asked  # the AS is not asked again until the cache changes
    reconnect = failed.value.envelope["reconnect"]
    assert reconnect == f"pdpp-gateway connect {sandbox.url} --connector gmail --cache-root {tmp_path}"
    assert failed.value.envelope["code"] in {"grant_expired", "context.active_false"}


async def test_an_rs_that_refuses_even_a_renewed_token_is_not_renewed_for_on_every_call(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """The authorization server still renews the grant, the RS refuses every token: the first
    refusal renews once, the calls after it are answered at once without asking the AS."""
    sandbox = await sandbox_factory()
    await approve(sandbox.url, tmp_path, "gmail")
    credential = load_credential(sandbox.url, tmp_path, connector="gmail")
    async with (
        upstream_proxy(sandbox.url, fault=Fault("token_refused")) as refusing,
        RsClient(refusing.url) as rs,
    ):
        reader = RenewingRs(rs, credential, tmp_path)
        for _ in range(5):
            with pytest.raises(RsStatusError) as refused:
                await reader.get_json("/v1/streams/messages/records")
            assert refused.value.code == "context.active_false"
            # the command that approves this very grant again, never a <provider-url> placeholder
            assert refused.value.envelope["reconnect"] == (
                f"pdpp-gateway connect {credential.provider_url} --connector gmail --cache-root {tmp_path}"
            )
        assert refreshes(sandbox) == 1  # one renewal, then none while the RS keeps refusing
        assert len(refusing.data_reads()) == 6  # the first read, its repeat with the new token, four more


async def test_a_renewal_saves_what_the_authorization_server_issued_before_the_rs_is_asked(
    sandbox: Any, tmp_path: Path
) -> None:
    """The RS is unreachable but the AS is not: the renewal is saved (the rotated refresh
    token is not lost), the person is told, and a later renewal succeeds."""
    await approve(sandbox.url, tmp_path, "gmail")
    source = next((tmp_path / "clients").glob("*.json"))
    gone = "http://127.0.0.1:9"  # nothing listens there
    payload = json.loads(source.read_text()) | {"provider_url": gone}
    cache = tmp_path / "other"
    (cache / "clients").mkdir(parents=True)
    (cache / "clients" / "127.0.0.1_9.json").write_text(json.dumps(payload))
    (cache / "clients" / "127.0.0.1_9.json").chmod(0o600)  # as connect writes it
    before = payload["credential"]["refresh_token"]
    first = await asyncio.to_thread(run_cli, "connect", gone, "--refresh", "--cache-root", str(cache))
    assert first.returncode == 0, first.stderr
    assert "could not be checked" in first.stderr
    saved = json.loads((cache / "clients" / "127.0.0.1_9.json").read_text())["credential"]
    assert saved["refresh_token"] != before
    second = await asyncio.to_thread(run_cli, "connect", gone, "--refresh", "--cache-root", str(cache))
    assert second.returncode == 0, second.stderr
    assert refreshes(sandbox) == 2


async def test_two_processes_renewing_at_once_refresh_once(sandbox_factory: Any, tmp_path: Path) -> None:
    sandbox = await sandbox_factory()
    await approve(sandbox.url, tmp_path, "gmail")
    path = next((tmp_path / "clients").glob("*.json"))
    payload = json.loads(path.read_text())
    payload["credential"]["expires_at"] = "2000-01-01T00:00:00+00:00"  # both find it lapsed at start
    path.write_text(json.dumps(payload))
    args = ("call", "schema", "--provider-url", sandbox.url, "--cache-root", str(tmp_path))
    outcomes = await asyncio.gather(*(run_cli_async(*args) for _ in range(3)))
    assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
    assert refreshes(sandbox) == 1  # one renewed, the others found its token in the cache
    assert token_key(load_credential(sandbox.url, tmp_path).access_token) in sandbox.app[OAUTH].access


@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_session_answers_every_call_across_expiries(
    sandbox_factory: Any, tmp_path: Path, era: str
) -> None:
    """Two desktop chats on one cache, 2-second tokens, calls before, at and after each
    expiry: every call answers, one refresh per expiry, the rotated token on disk."""
    ttl, seconds = 2, 7.0
    sandbox = await sandbox_factory(access_token_ttl=ttl)
    await approve(sandbox.url, tmp_path, "gmail")
    params = stdio_params(sandbox.url, tmp_path)
    failures: list[str] = []
    calls = 0

    async def chat() -> None:
        nonlocal calls
        async with Client(params, mode=era, cache=None) as client:  # type: ignore[arg-type]
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                batch = await asyncio.gather(
                    client.call_tool("schema", {}),
                    client.call_tool("query_records", {"stream": "messages", "limit": 2}),
                )
                calls += len(batch)
                failures.extend(
                    r.content[0].text for r in batch if r.is_error and r.content[0].type == "text"
                )
                await asyncio.sleep(0.15)

    await asyncio.gather(chat(), chat())
    assert failures == []
    assert calls > 40
    expiries = seconds / ttl
    assert expiries - 1 <= refreshes(sandbox) <= expiries + 2  # once per expiry, not per call or per chat
    (on_disk,) = load_credentials(sandbox.url, tmp_path)  # the rotated token (it may have lapsed since)
    assert (
        token_key(on_disk.access_token) == list(sandbox.app[OAUTH].access)[-1]
    )  # the last one the AS issued


async def test_without_a_refresh_token_the_error_says_what_to_run(sandbox: Any, tmp_path: Path) -> None:
    await approve(sandbox.url, tmp_path, "github")
    path = next((tmp_path / "clients").glob("*.json"))
    payload = json.loads(path.read_text())
    del payload["credential"]["refresh_token"]
    path.write_text(json.dumps(payload))
    with pytest.raises(RenewalError) as failed:
        await renew(sandbox.url, tmp_path, "github", stale=None)
    assert failed.value.refused
    assert f"pdpp-gateway connect {sandbox.url} --connector github" in failed.value.message


async def test_an_unreachable_authorization_server_leaves_the_grant_intact(
    sandbox: Any, tmp_path: Path
) -> None:
    """Each failure point before the AS answers keeps the cached refresh token as it was,
    so a later renewal succeeds."""
    await approve(sandbox.url, tmp_path, "gmail")
    path = next((tmp_path / "clients").glob("*.json"))
    payload = json.loads(path.read_text())
    endpoint, before = payload["credential"]["token_endpoint"], payload["credential"]["refresh_token"]
    for broken in ("http://127.0.0.1:9/oauth/token", f"{sandbox.url}/not-the-token-endpoint"):
        payload["credential"]["token_endpoint"] = broken
        path.write_text(json.dumps(payload))
        with pytest.raises(RenewalError) as failed:
            await renew(sandbox.url, tmp_path, "gmail", stale=None)
        saved = json.loads(path.read_text())["credential"]
        assert saved["refresh_token"] == before
        assert not failed.value.refused  # the AS never said no: nothing to approve again
    payload["credential"]["token_endpoint"] = endpoint
    path.write_text(json.dumps(payload))
    renewed = await renew(sandbox.url, tmp_path, "gmail", stale=None)
    assert token_key(renewed.access_token) in sandbox.app[OAUTH].access
    assert refreshes(sandbox) == 1


async def test_a_renewed_token_the_rs_names_an_owner_token_leaves_the_cache(
    sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pdpp_gateway.commands import connect
    from pdpp_gateway.local.credentials import load_credentials
    from pdpp_gateway.local_verdict import CredentialError

    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")

    async def owner(provider_url: str, answer: dict[str, Any]) -> None:
        raise CredentialError("owner_token_refused", "an owner token")

    monkeypatch.setattr(connect, "_refuse_owner", owner)
    with pytest.raises(CredentialError):
        await connect._refresh(sandbox.url, tmp_path, ["github"])
    assert [c.connector for c in load_credentials(sandbox.url, tmp_path)] == ["gmail"]


async def test_an_early_call_waits_for_the_renewal_of_a_grant_lapsed_at_start(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    """A script writes the opening and a call at once to a stdio server whose cached access token
    has already lapsed: the call is answered early (before the SDK loads), with data, after the
    session renewed the grant; nothing is written before the renewal passed."""
    sandbox = await sandbox_factory(access_token_ttl=3600)
    await approve(sandbox.url, tmp_path, "gmail")
    lapse_now(sandbox)
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "query_records", "arguments": {"stream": "messages", "limit": 1}},
        },
    ]
    done = await asyncio.to_thread(
        run_cli,
        "stdio",
        "--provider-url",
        sandbox.url,
        "--cache-root",
        str(tmp_path),
        "--log-level",
        "DEBUG",
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
    )
    assert done.returncode == 0, done.stderr
    answers = {json.loads(line)["id"]: json.loads(line) for line in done.stdout.splitlines()}
    assert sorted(answers) == [1, 2]
    assert answers[2]["result"]["isError"] is False, answers[2]
    assert "answered tools/call 2 (query_records) before the SDK loaded" in done.stderr
    assert refreshes(sandbox) == 1
