"""The retry budget and the circuit breaker: alone with a fake clock, then in the RS
client against a real HTTP upstream that fails on purpose."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import RetryPolicy, RsClient
from pdpp_gateway.rs.errors import RsUnavailableError
from pdpp_gateway.rs.resilience import CircuitBreaker, CircuitOpen, CircuitState, RetryBudget

TOKEN = "tok_secret_do_not_leak"
FAST = RetryPolicy(attempts=3, start_delay=0.01, max_delay=0.02)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_grants_retries_as_a_fraction_of_requests() -> None:
    clock = Clock()
    budget = RetryBudget(ratio=0.2, capacity=2, refill_per_second=0, clock=clock)
    granted = [budget.reserve(2) for _ in range(20)]
    assert granted[0] == 2  # the spare capacity first
    assert sum(granted) <= 2 + 0.2 * 20  # then one retry per five requests at most
    assert sum(granted[5:]) >= 2


def test_unused_retries_are_given_back_and_time_refills() -> None:
    clock = Clock()
    budget = RetryBudget(ratio=0, capacity=4, refill_per_second=1, clock=clock)
    assert budget.reserve(4) == 4
    assert budget.reserve(1) == 0
    budget.refund(2)
    assert budget.reserve(4) == 2
    clock.now += 3
    assert budget.reserve(4) == 3


def test_the_breaker_opens_after_the_threshold_then_probes_once() -> None:
    clock = Clock()
    breaker = CircuitBreaker(threshold=3, cool_down=10, clock=clock)
    for _ in range(2):
        breaker.admit()
        breaker.failed()
    breaker.admit()
    breaker.succeeded()  # a success resets the count
    for _ in range(3):
        breaker.admit()
        breaker.failed()
    assert breaker.state is CircuitState.OPEN
    with pytest.raises(CircuitOpen) as held:
        breaker.admit()
    assert held.value.retry_after == pytest.approx(10)
    clock.now += 10
    breaker.admit()  # the one half-open probe
    with pytest.raises(CircuitOpen):
        breaker.admit()  # everyone else waits for it
    breaker.failed()  # the probe failed: open again for a whole cool-down
    with pytest.raises(CircuitOpen) as again:
        breaker.admit()
    assert again.value.retry_after == pytest.approx(10)
    clock.now += 10
    breaker.admit()
    breaker.succeeded()
    assert breaker.state is CircuitState.CLOSED
    breaker.admit()


class Flaky:
    """An upstream that answers 503 until ``healthy``; counts what it receives."""

    def __init__(self) -> None:
        self.healthy = False
        self.sends = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.sends += 1
        if self.healthy:
            return web.json_response({"object": "schema"})
        return web.json_response({"error": {"code": "overloaded"}}, status=503)


@pytest.fixture
async def flaky(aiohttp_server: Any) -> tuple[Flaky, TestServer]:
    upstream = Flaky()
    app = web.Application()
    app.router.add_get("/{tail:.*}", upstream.handle)
    return upstream, await aiohttp_server(app, host="127.0.0.1")


async def test_a_dead_upstream_is_held_back_then_probed_back_to_health(flaky: Any) -> None:
    upstream, server = flaky
    breaker = CircuitBreaker(threshold=3, cool_down=0.3)
    async with RsClient(str(server.make_url("")), retry=FAST, breaker=breaker) as rs:
        for _ in range(3):
            with pytest.raises(RsUnavailableError):
                await rs.get_json("/v1/schema", token=TOKEN)
        sent = upstream.sends
        with pytest.raises(RsUnavailableError) as held:
            await rs.get_json("/v1/schema", token=TOKEN)
        assert upstream.sends == sent  # failed fast: nothing sent
        assert 0 < held.value.retry_after <= 0.3
        assert "holding calls back" in held.value.reason
        assert tool_error(held.value).envelope["retry_after_seconds"] == 1  # whole seconds, rounded up
        upstream.healthy = True
        await asyncio.sleep(0.35)
        response = await rs.get_json("/v1/schema", token=TOKEN)  # the half-open probe
        assert response.body == {"object": "schema"}
        assert breaker.state is CircuitState.CLOSED


async def test_retries_in_an_outage_stay_within_the_budget(flaky: Any) -> None:
    upstream, server = flaky
    budget = RetryBudget(ratio=0.2, capacity=4, refill_per_second=0)
    breaker = CircuitBreaker(threshold=10_000)  # measure the budget alone
    async with RsClient(str(server.make_url("")), retry=FAST, budget=budget, breaker=breaker) as rs:
        for _ in range(50):
            with pytest.raises(RsUnavailableError):
                await rs.get_json("/v1/schema", token=TOKEN)
    retries = upstream.sends - 50
    assert 4 <= retries <= 4 + 0.2 * 50  # without the budget: 100 retries
