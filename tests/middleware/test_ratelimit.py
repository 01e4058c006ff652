"""Rate limits: the local buckets with a fake clock, the shared buckets in a real Redis,
the failover between them, and the aiohttp stage."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from aiohttp import web
from mcp_gateway_middleware.http import rate_limit
from mcp_gateway_middleware.outage import Guard, Outage
from mcp_gateway_middleware.ratelimit import Decision, FailoverLimiter, LocalLimiter, Rate
from mcp_gateway_middleware.ratelimit_redis import RedisLimiter

from tests.redis_server import RedisServer, redis_server

UNLIMITED = Rate(0, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_caller_gets_its_burst_then_the_rate() -> None:
    clock = Clock()
    limiter = LocalLimiter(Rate(2, 3), UNLIMITED, clock=clock)
    assert [(await limiter.take("a")).allowed for _ in range(4)] == [True, True, True, False]
    refused = await limiter.take("a")
    assert refused.retry_after == pytest.approx(0.5)
    assert refused.retry_after_seconds == 1
    assert (await limiter.take("b")).allowed  # callers never share a bucket
    clock.now += 0.5
    assert (await limiter.take("a")).allowed
    assert not (await limiter.take("a")).allowed


async def test_the_global_ceiling_holds_across_callers() -> None:
    limiter = LocalLimiter(Rate(100, 100), Rate(1, 5), clock=Clock())
    allowed = [(await limiter.take(f"caller{n}")).allowed for n in range(8)]
    assert allowed == [True] * 5 + [False] * 3


async def _never() -> None:
    raise ConnectionError("store down")


class Broken:
    async def take(self, caller: str) -> Decision:
        raise ConnectionError("store down")


async def test_a_failed_store_falls_back_to_local_limits_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    guard = Guard(Outage("shared rate-limit store", "limiting per process", logging.getLogger("t")), _never)
    limiter = FailoverLimiter(Broken(), LocalLimiter(Rate(1, 2), UNLIMITED, clock=clock), guard)
    decisions = [await limiter.take("a") for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, False]  # still limited: never fails open
    assert {d.backend for d in decisions} == {"local"}
    assert limiter.degraded
    assert "per process" in limiter.degraded
    assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1  # said once


@pytest_asyncio.fixture
async def redis() -> AsyncIterator[tuple[RedisServer, Any]]:
    with redis_server() as server:
        client = aioredis.from_url(server.url)
        try:
            yield server, client
        finally:
            await client.aclose()


async def test_two_replicas_share_one_bucket_in_redis(redis: tuple[RedisServer, Any]) -> None:
    _, client = redis
    replicas = [RedisLimiter(client, Rate(0.001, 10), UNLIMITED, prefix="t1") for _ in range(2)]
    decisions = await asyncio.gather(*(replicas[n % 2].take("grant_1") for n in range(30)))
    assert sum(d.allowed for d in decisions) == 10  # the burst, in total, never twice
    assert all(d.backend == "shared" for d in decisions)
    keys = [key.decode() for key in await client.keys("t1:*")]
    assert all("grant_1" not in key for key in keys)  # the caller key is hashed


async def test_redis_going_away_keeps_limits_per_process(redis: tuple[RedisServer, Any]) -> None:
    server, client = redis
    guard = Guard(Outage("shared store", "limiting per process", logging.getLogger("t")), client.ping)
    limiter = FailoverLimiter(
        RedisLimiter(client, Rate(1, 3), UNLIMITED, prefix="t2"), LocalLimiter(Rate(1, 3), UNLIMITED), guard
    )
    assert (await limiter.take("g")).backend == "shared"
    server.kill()
    after = [await asyncio.wait_for(limiter.take("g"), timeout=5) for _ in range(5)]
    assert {d.backend for d in after} == {"local"}
    assert sum(d.allowed for d in after) == 3
    assert limiter.degraded


async def test_the_stage_refuses_with_the_gateways_answer(aiohttp_client: Any) -> None:
    limiter = LocalLimiter(Rate(0.01, 1), UNLIMITED)

    def refuse(request: web.Request, decision: Decision) -> web.Response:
        return web.json_response(
            {"error": "slow down"}, status=429, headers={"Retry-After": str(decision.retry_after_seconds)}
        )

    async def ok(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    stage = rate_limit(limiter, lambda request: request.headers.get("X-Caller"), refuse)
    app = web.Application(middlewares=[stage])
    app.router.add_get("/", ok)
    client = await aiohttp_client(app)
    assert (await client.get("/", headers={"X-Caller": "a"})).status == 200
    refused = await client.get("/", headers={"X-Caller": "a"})
    assert refused.status == 429
    assert int(refused.headers["Retry-After"]) >= 99
    assert (await client.get("/")).status == 200  # no caller: not limited here


def test_a_process_alone_allows_its_share_of_a_limit_several_enforce() -> None:
    """While the shared store is down, each of n processes allows 1/n of the rate and burst:
    together about the limit, never n times it."""
    now = [0.0]
    local = LocalLimiter(Rate(6, 9), Rate(0, 0), clock=lambda: now[0])
    assert [local.take_now("grant:a", share=3).allowed for _ in range(4)] == [True, True, True, False]
    now[0] += 0.5  # a third of the rate refills a token a half second
    assert local.take_now("grant:a", share=3).allowed
    assert not local.take_now("grant:a", share=3).allowed
    assert [local.take_now("grant:b").allowed for _ in range(10)].count(True) == 9  # share 1: the whole limit


async def test_a_caller_s_own_rate_holds_in_redis_as_in_the_process(redis: tuple[RedisServer, Any]) -> None:
    _, client = redis
    paying = {"ada": Rate(0.001, 5)}
    shared = RedisLimiter(client, Rate(0.001, 2), UNLIMITED, prefix="t3", rate_of=paying.get)
    local = LocalLimiter(Rate(0.001, 2), UNLIMITED, rate_of=paying.get)
    for limiter in (shared, local):
        ada = [(await limiter.take("ada")).allowed for _ in range(6)]
        bob = [(await limiter.take("bob")).allowed for _ in range(3)]
        assert (ada, bob) == ([True] * 5 + [False], [True, True, False])
