"""The HTTP stages of ``mcp_gateway_middleware.http`` on their own, over real HTTP: what each hands
the gateway's functions, and where each fails closed."""

from __future__ import annotations

from typing import Any, Final

import pytest
from aiohttp import web
from mcp_gateway_middleware.hosts import HostPolicy, TrustedProxies
from mcp_gateway_middleware.http import Stage, accepts, bearer_check, host_check, refuse_token_kinds

WHO: Final = web.RequestKey("who", str)


async def whoami(request: web.Request) -> web.Response:
    return web.json_response({"who": request.get(WHO)})


def refuse_kind(request: web.Request, kind: str | None) -> web.Response:
    return web.json_response({"refused": kind}, status=403)


async def serve(aiohttp_client: Any, *stages: Stage) -> Any:
    app = web.Application(middlewares=list(stages))
    app.router.add_get("/", whoami)
    return await aiohttp_client(app)


async def test_the_bearer_stage_hands_the_header_to_authenticate_and_seats_the_answer(
    aiohttp_client: Any,
) -> None:
    seen: list[str | None] = []

    async def authenticate(header: str | None) -> str | ValueError:
        seen.append(header)
        return "ada" if header == "Key good" else ValueError("no")

    def refuse(request: web.Request, rejection: ValueError) -> web.Response:
        return web.json_response({"refused": str(rejection)}, status=401)

    stage = bearer_check(authenticate, refuse, WHO, rejection=ValueError, duplicate=ValueError("two"))
    client = await serve(aiohttp_client, stage)
    assert await (await client.get("/", headers={"Authorization": "Key good"})).json() == {"who": "ada"}
    refused = await client.get("/", headers={"Authorization": "Key bad"})
    assert (refused.status, await refused.json()) == (401, {"refused": "no"})
    assert (await client.get("/")).status == 401
    twice = await client.get("/", headers=[("Authorization", "Key good"), ("Authorization", "Key bad")])
    assert await twice.json() == {"refused": "two"}  # two credentials: neither is looked at
    assert seen == ["Key good", "Key bad", None]


async def test_the_kind_stage_fails_closed_without_a_seated_caller(aiohttp_client: Any) -> None:
    closed = await serve(aiohttp_client, refuse_token_kinds(str.upper, {"ROOT"}, refuse_kind, WHO))
    answer = await closed.get("/")
    assert (answer.status, await answer.json()) == (403, {"refused": None})
    lenient = refuse_token_kinds(str.upper, {"ROOT"}, refuse_kind, WHO, refuse_unknown=False)
    assert (await (await serve(aiohttp_client, lenient)).get("/")).status == 200


@pytest.mark.parametrize(
    ("accept", "media_type", "admitted"),
    [
        ("text/csv", "text/csv", True),
        ("TEXT/*", "text/csv", True),
        ("text/*;q=0, */*", "text/csv", False),
        ("text/csv;q=0, text/*", "text/csv", False),
        ("text/csv;q=0.1, */*;q=0", "text/csv", True),
        ("text/csv;q=oops", "text/csv", False),
        ("application/json", "text/csv", False),
        ("", "text/csv", False),
    ],
)
def test_accepts_lets_the_most_specific_range_decide(accept: str, media_type: str, admitted: bool) -> None:
    assert accepts(accept, media_type) is admitted


async def test_the_host_stage_serves_listed_hosts_trusts_only_listed_proxies_and_exempts_probes(
    aiohttp_client: Any,
) -> None:
    policy = HostPolicy(
        frozenset({"data.example.org"}),
        frozenset({"https://data.example.org"}),
        TrustedProxies.parse(["127.0.0.1"]),
    )
    app = web.Application(middlewares=[host_check(policy, exempt={"/healthz"})])
    app.router.add_get("/", whoami)
    app.router.add_get("/healthz", whoami)
    client = await aiohttp_client(app)
    proxied = {"X-Forwarded-Host": "DATA.example.org:443", "X-Forwarded-Proto": "https"}
    assert (await client.get("/", headers=proxied)).status == 200  # the test client is the trusted proxy
    misdirected = await client.get("/", headers={"Host": "data.example.org:8443"})  # not its default port
    body = await misdirected.json()
    assert (misdirected.status, body["error"]["data"]["code"]) == (421, "misdirected_request")
    assert "data.example.org:8443" in body["error"]["message"]
    foreign = await client.get("/", headers={**proxied, "Origin": "https://evil.example"})
    assert (foreign.status, (await foreign.json())["error"]["data"]["code"]) == (403, "origin_not_allowed")
    own = await client.get("/", headers={**proxied, "Origin": "HTTPS://data.example.org:443"})
    assert own.status == 200
    assert (await client.get("/healthz", headers={"Host": "internal.local"})).status == 200

    untrusted = HostPolicy(frozenset({"data.example.org"}))  # no proxy trusted: the Host decides
    app = web.Application(middlewares=[host_check(untrusted)])
    app.router.add_get("/", whoami)
    client = await aiohttp_client(app)
    assert (await client.get("/", headers=proxied)).status == 421
