"""The verdict cache in front of a bearer validator: one upstream check per burst."""

from __future__ import annotations

import asyncio

import pytest

from pdpp_gateway.caller import BearerFacts
from pdpp_gateway.hosted.tokens import AuthServerUnavailable, CachedValidator


class Gate:
    """A validator that counts checks and answers only when released."""

    def __init__(self, outcome: BearerFacts | Exception) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self._outcome = outcome

    async def validate(self, token: str) -> BearerFacts:
        self.calls += 1
        await self.release.wait()
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome


async def test_a_burst_with_one_uncached_token_makes_one_check() -> None:
    inner = Gate(BearerFacts.inactive("unknown"))
    cache = CachedValidator(inner, ttl=30)
    waiting = [asyncio.create_task(cache.validate("tok_a")) for _ in range(50)]
    await asyncio.sleep(0)
    inner.release.set()
    verdicts = await asyncio.gather(*waiting)
    assert inner.calls == 1
    assert all(verdict is verdicts[0] for verdict in verdicts)
    await cache.validate("tok_a")
    assert inner.calls == 1  # then cached
    inner.release.clear()
    other = asyncio.create_task(cache.validate("tok_b"))  # another token: its own check
    await asyncio.sleep(0)
    inner.release.set()
    await other
    assert inner.calls == 2


async def test_an_outage_reaches_every_waiter_and_is_not_cached() -> None:
    inner = Gate(AuthServerUnavailable("down"))
    cache = CachedValidator(inner, ttl=30)
    waiting = [asyncio.create_task(cache.validate("tok_a")) for _ in range(5)]
    await asyncio.sleep(0)
    inner.release.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(result, AuthServerUnavailable) for result in results)
    with pytest.raises(AuthServerUnavailable):
        await cache.validate("tok_a")
    assert inner.calls == 2


async def test_a_caller_that_goes_away_does_not_cancel_the_shared_check() -> None:
    inner = Gate(BearerFacts.inactive("unknown"))
    cache = CachedValidator(inner, ttl=30)
    first = asyncio.create_task(cache.validate("tok_a"))
    second = asyncio.create_task(cache.validate("tok_a"))
    await asyncio.sleep(0)
    first.cancel()
    inner.release.set()
    assert (await second).active is False
    assert inner.calls == 1
