"""/readyz reflects the RS's /v1 API (what every tool reads), probed without a caller token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.readiness import ReadinessProbe
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.upstreams import serve_app

ENVELOPE_401 = {
    "error": {"type": "authentication_error", "code": "authentication_error", "message": "no bearer"}
}


@dataclass
class StubRs:
    """An RS whose discovery document always answers, and whose /v1 answers as told."""

    v1: str = "envelope_401"
    url: str = ""
    probes: int = 0
    authorized_probes: int = 0


@asynccontextmanager
async def stub_rs(v1: str) -> AsyncIterator[StubRs]:
    rs = StubRs(v1)

    async def metadata(request: web.Request) -> web.Response:
        return web.json_response({"resource": rs.url, "authorization_servers": [rs.url]})

    async def schema(request: web.Request) -> web.Response:
        rs.probes += 1
        rs.authorized_probes += "Authorization" in request.headers
        if rs.v1 == "envelope_401":
            return web.json_response(ENVELOPE_401, status=401)
        if rs.v1 == "html_401":
            return web.Response(text="<html>login</html>", content_type="text/html", status=401)
        if rs.v1 == "slow":
            await asyncio.sleep(2)
        return web.Response(text="<html>Bad gateway</html>", content_type="text/html", status=502)

    app = web.Application()
    app.router.add_get("/.well-known/oauth-protected-resource", metadata)
    app.router.add_get("/v1/schema", schema)
    async with serve_app(app) as url:
        rs.url = url
        yield rs


async def readyz(mcp_url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(mcp_url.replace("/mcp", "/readyz")) as response:
        return response.status, await response.json()


async def test_ready_in_front_of_the_sandbox(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        assert await readyz(url) == (200, {"status": "ready"})


@pytest.mark.parametrize(
    ("v1", "status", "reason"),
    [
        ("envelope_401", 200, None),
        ("bad_gateway", 503, "HTTP 502"),
        ("html_401", 503, "HTTP 401"),
    ],
    ids=["rs-envelope-401-is-up", "502-with-discovery-up", "foreign-401-page"],
)
async def test_readiness_follows_the_v1_api(v1: str, status: int, reason: str | None) -> None:
    async with stub_rs(v1) as rs, start_gateway(sandbox_settings(rs.url, introspection=False)) as url:
        got, body = await readyz(url)
        assert got == status, body
        if reason is not None:
            assert body["status"] == "unready"
            assert reason in body["reason"]
            assert "/v1" in body["reason"]
        assert rs.authorized_probes == 0  # never a caller's token


async def test_readiness_is_cached_so_readyz_cannot_hammer_the_rs() -> None:
    async with (
        stub_rs("bad_gateway") as rs,
        start_gateway(sandbox_settings(rs.url, introspection=False)) as url,
    ):
        answers = await asyncio.gather(*(readyz(url) for _ in range(10)))
        assert {status for status, _ in answers} == {503}
        # one probe (the RS client retries a 502 up to 3 times), not one per /readyz
        assert rs.probes <= 3


async def test_a_silent_v1_api_is_not_ready_within_the_probe_budget() -> None:
    async with stub_rs("slow") as rs, RsClient(rs.url) as client:
        reason = await ReadinessProbe(client, timeout=0.2).check()
    assert reason == "the resource server's /v1 API did not answer within 0.2 s"


async def test_verdict_expires_after_its_ttl() -> None:
    now = [0.0]
    async with stub_rs("envelope_401") as rs, RsClient(rs.url) as client:
        probe = ReadinessProbe(client, ttl=5, clock=lambda: now[0])
        assert await probe.check() is None
        rs.v1 = "bad_gateway"
        assert await probe.check() is None  # still the cached verdict
        now[0] = 5.0
        assert "HTTP 502" in (await probe.check() or "")
