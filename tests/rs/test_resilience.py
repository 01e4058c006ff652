"""The retry budget and the circuit breaker: alone with a fake clock, then in the RS
client against a real HTTP upstream that fails on purpose."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsTimeoutError, RsUnavailableError
from pdpp_gateway.rs.policy import RetryPolicy, RsTimeouts
from pdpp_gateway.rs.resilience import Breakers, CircuitBreaker, CircuitOpen, CircuitState, RetryBudget

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


def test_the_breaker_opens_on_a_failure_rate_then_lets_a_few_probes_through() -> None:
    clock = Clock()
    changes: list[tuple[CircuitState, str]] = []
    breaker = CircuitBreaker(
        window=10,
        min_calls=4,
        failure_rate=0.75,
        cool_down=5,
        probes=2,
        clock=clock,
        on_change=_note(changes),
    )
    for _ in range(3):  # too few calls to judge, however they ended
        clock.now += 0.5
        breaker.admit()
        breaker.failed()
    clock.now += 0.5
    breaker.admit()
    breaker.succeeded()
    assert breaker.state is CircuitState.CLOSED  # 3 of 4 failed: 0.75, not yet
    clock.now += 0.5
    breaker.admit()
    breaker.failed()
    assert breaker.state is CircuitState.OPEN  # 4 of 5 failed, over 2 s
    with pytest.raises(CircuitOpen) as held:
        breaker.admit()
    assert held.value.retry_after == pytest.approx(5)
    assert (held.value.failed, held.value.calls) == (4, 5)
    clock.now += 5
    breaker.admit()
    breaker.admit()  # two probes at once
    with pytest.raises(CircuitOpen):
        breaker.admit()  # everyone else waits for them
    breaker.failed()  # a probe failed: open again for a whole cool-down
    with pytest.raises(CircuitOpen) as again:
        breaker.admit()
    assert again.value.retry_after == pytest.approx(5)
    breaker.released()  # the other probe was cancelled
    clock.now += 5
    breaker.admit()
    breaker.succeeded()
    assert breaker.state is CircuitState.CLOSED
    assert [state for state, _ in changes] == [
        CircuitState.OPEN,
        CircuitState.HALF_OPEN,
        CircuitState.OPEN,
        CircuitState.HALF_OPEN,
        CircuitState.CLOSED,
    ]
    assert "4 of 5 calls failed" in changes[0][1]


def test_an_rs_that_answers_half_the_calls_is_never_held_back() -> None:
    clock = Clock()
    breaker = CircuitBreaker(clock=clock)
    answered = 0
    for n in range(400):  # healthy half of each second, as a flapping RS is
        clock.now += 0.01
        breaker.admit()
        if (n // 50) % 2:
            breaker.failed()
        else:
            breaker.succeeded()
            answered += 1
    assert breaker.state is CircuitState.CLOSED
    assert answered == 200


def test_a_flapping_rs_is_never_held_back_even_when_its_first_calls_fail() -> None:
    """Down half a second, up half a second, from the first call on: the first calls all fail,
    yet a few failures in a row are not a failure rate until they span ``min_span``."""
    clock = Clock()
    changes: list[tuple[CircuitState, str]] = []
    breaker = CircuitBreaker(clock=clock, on_change=_note(changes))
    answered = 0
    for n in range(2000):  # 100 calls a second for 20 s
        clock.now += 0.01
        breaker.admit()
        if (n // 50) % 2:
            breaker.succeeded()
            answered += 1
        else:
            breaker.failed()
    assert changes == []  # not one spell
    assert answered == 1000


def test_an_rs_down_from_the_start_is_held_back_once_its_failures_span_two_seconds() -> None:
    clock = Clock()
    breaker = CircuitBreaker(clock=clock)
    first = clock.now + 0.1
    for _ in range(100):  # 10 calls a second, every one failing
        clock.now += 0.1
        breaker.admit()
        breaker.failed()
        if breaker.state is not CircuitState.CLOSED:
            break
    assert 2.0 <= clock.now - first < 2.2  # opened as soon as the failures spanned two seconds
    with pytest.raises(CircuitOpen) as held:
        breaker.admit()
    assert held.value.failed == held.value.calls >= 20


def test_old_failures_leave_the_window() -> None:
    clock = Clock()
    breaker = CircuitBreaker(window=10, min_calls=5, failure_rate=0.8, clock=clock)
    for _ in range(4):
        breaker.admit()
        breaker.failed()
    clock.now += 11
    for _ in range(4):
        breaker.admit()
        breaker.succeeded()
    breaker.admit()
    breaker.failed()
    assert breaker.state is CircuitState.CLOSED  # 1 of 5 in the window, not 5 of 9


def _note(changes: list[tuple[CircuitState, str]]) -> Callable[[CircuitState, str], None]:
    return lambda state, why: changes.append((state, why))


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
    breakers = Breakers(min_calls=3, min_span=0, cool_down=0.3)  # judged at once: the rate is tested above
    async with RsClient(str(server.make_url("")), retry=FAST, breakers=breakers) as rs:
        for _ in range(3):
            with pytest.raises(RsUnavailableError):
                await rs.get_json("/v1/schema", token=TOKEN)
        sent = upstream.sends
        with pytest.raises(RsUnavailableError) as held:
            await rs.get_json("/v1/schema", token=TOKEN)
        assert upstream.sends == sent  # failed fast: nothing sent
        assert 0 < held.value.retry_after <= 0.3
        assert "3 of its last 3 answers to such calls failed" in held.value.reason
        assert tool_error(held.value).envelope["retry_after_seconds"] == 1  # whole seconds, rounded up
        upstream.healthy = True
        await asyncio.sleep(0.35)
        response = await rs.get_json("/v1/schema", token=TOKEN)  # the half-open probe
        assert response.body == {"object": "schema"}
        assert breakers.states() == {"schema": CircuitState.CLOSED}


async def test_retries_in_an_outage_stay_within_the_budget(flaky: Any) -> None:
    upstream, server = flaky
    budget = RetryBudget(ratio=0.2, capacity=4, refill_per_second=0)
    breakers = Breakers(min_calls=10_000)  # measure the budget alone
    async with RsClient(str(server.make_url("")), retry=FAST, budget=budget, breakers=breakers) as rs:
        for _ in range(50):
            with pytest.raises(RsUnavailableError):
                await rs.get_json("/v1/schema", token=TOKEN)
    retries = upstream.sends - 50
    assert 4 <= retries <= 4 + 0.2 * 50  # without the budget: 100 retries


async def test_failing_searches_hold_back_searches_only(
    aiohttp_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """One kind of call failing (searches that time out) never holds another caller's record reads."""

    async def search(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    async def records(request: web.Request) -> web.Response:
        return web.json_response({"data": []})

    app = web.Application()
    app.router.add_get("/v1/search", search)
    app.router.add_get("/v1/streams/{stream}/records", records)
    server = await aiohttp_server(app, host="127.0.0.1")
    states: list[tuple[str, CircuitState]] = []
    breakers = Breakers(min_span=0, observer=lambda scope, state: states.append((scope, state)))
    timeouts = RsTimeouts(connect=1, read=0.05, total=0.1)
    async with RsClient(str(server.make_url("")), retry=FAST, breakers=breakers, timeouts=timeouts) as rs:
        for _ in range(6):
            with pytest.raises((RsTimeoutError, RsUnavailableError)):
                await rs.get_json("/v1/search", [("q", "x")], token="grant_a")
        with pytest.raises(RsUnavailableError) as held:
            await rs.get_json("/v1/search", [("q", "x")], token="grant_a")
        assert held.value.retry_after is not None
        answer = await rs.get_json("/v1/streams/messages/records", token="grant_b")
    assert answer.body == {"data": []}
    assert states == [("search", CircuitState.OPEN)]
    assert "circuit for search calls to the RS: open" in caplog.text
