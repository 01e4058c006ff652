"""Bearer validation without introspection: the ``GET /v1/schema`` probe and what it can know."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.upstreams import proxied_settings, upstream_proxy

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def post(url: str, token: str) -> tuple[int, dict[str, str], Any]:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    async with aiohttp.ClientSession() as http, http.post(url, json=LIST_TOOLS, headers=headers) as response:
        return response.status, dict(response.headers), await response.json()


async def test_rs_refusing_the_compact_view_falls_back_to_the_plain_probe(shared_sandbox: Any) -> None:
    """An RS that answers 400 to ``view=compact`` is not an unreachable authorization server."""
    async with (
        upstream_proxy(shared_sandbox.url, refuse_compact=True) as proxy,
        start_gateway(proxied_settings(shared_sandbox.url, proxy, introspection=False)) as url,
    ):
        status, _, body = await post(url, shared_sandbox.tokens["client_broad"])
        assert status == 200, body
        assert proxy.lines() == ["GET /v1/schema?view=compact", "GET /v1/schema"]
        proxy.seen.clear()
        status, _, _ = await post(url, shared_sandbox.tokens["client_narrow"])
        assert status == 200
        assert proxy.lines() == ["GET /v1/schema"]  # the refused form is remembered
        status, _, body = await post(url, shared_sandbox.tokens["owner"])
        assert status == 403
        assert body["error"]["data"]["code"] == "owner_token_refused"
        status, _, body = await post(url, "not-a-real-token")
        assert status == 401
        assert body["error"]["data"]["code"] == "context.active_false"


async def test_foreign_audience_token_is_challenged_in_probe_mode(shared_sandbox: Any) -> None:
    """The RS judges the audience (401 ``context.audience_mismatch``); the gateway relays it
    as its own challenge and reads nothing."""
    async with start_gateway(
        sandbox_settings(shared_sandbox.url, introspection=False), public_self=True
    ) as url:
        shared_sandbox.calls.clear()
        status, headers, body = await post(url, shared_sandbox.tokens["client_foreign"])
        assert status == 401
        assert body["error"]["data"]["code"] == "context.audience_mismatch"
        assert headers["WWW-Authenticate"].startswith('Bearer resource_metadata="')
        assert [c.path for c in shared_sandbox.calls] == ["/v1/schema"]


async def test_package_token_in_probe_mode_gets_a_typed_403(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url, introspection=False)) as url:
        shared_sandbox.calls.clear()
        status, headers, body = await post(url, shared_sandbox.tokens["package"])
        assert status == 403
        assert body["error"]["data"]["code"] == "package_unresolvable"
        assert "package" in body["error"]["message"]
        assert "WWW-Authenticate" not in headers
        assert all(c.path == "/v1/schema" for c in shared_sandbox.calls)


@pytest.mark.parametrize("introspection", [False, True], ids=["schema-probe", "introspection"])
async def test_start_up_log_says_who_checks_audiences(
    shared_sandbox: Any, caplog: pytest.LogCaptureFixture, introspection: bool
) -> None:
    with caplog.at_level(logging.INFO, logger="pdpp_gateway.hosted"):
        async with start_gateway(sandbox_settings(shared_sandbox.url, introspection=introspection)):
            pass
    lines = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "bearer_validation"]
    assert len(lines) == 1
    if introspection:
        assert lines[0].levelno == logging.INFO
        assert f"{shared_sandbox.url}/mcp" in lines[0].fields["audiences"]  # type: ignore[attr-defined]
    else:
        assert lines[0].levelno == logging.WARNING
        assert "cannot check" in lines[0].getMessage()
