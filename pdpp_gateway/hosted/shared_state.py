"""State the replicas of the hosted door share through Redis, when one is configured.

Contract:

- ``shared_store(settings)``: one asyncio Redis client for the app's life with the
  ``Guard`` every use of it goes through (``mcp_gateway_middleware.outage``): a call gets
  ``REDIS_DEADLINE`` seconds; after a failure (refused, reset), or when nothing has answered
  in time for a second (hung: a frozen Redis answers nothing; slow answers while this process
  is busy are not an outage), every call skips Redis at once and serves from this process's own state,
  while one background probe (``PING``) waits for it to answer steadily. One log line when
  it goes, one when it is back, however it flaps. ``None`` without ``--redis-url``.
- ``Replicas``: how many processes share the store (a heartbeat every few seconds, on
  Redis's clock), kept as last seen while Redis is down: the rate limits' fallback allows
  each process its share of the limit, not the whole limit.
- ``SharedRefusals``: a token refused by one replica (inactive: revoked, expired, wrong
  audience...) is refused by every replica within the verdict cache bound. The replica
  that learns it writes ``<prefix>:<sha256 of the token>`` with the refusal's reason for
  that bound; every replica checks the key before trusting a cached active verdict.
  Only hashes reach Redis, never a token. If Redis fails, the replica keeps its own
  cache (the single-process bound: never a pass it would not have given alone), and
  ``degraded`` says so until Redis answers steadily again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

from mcp_gateway_middleware.outage import DependencyDown, Guard, Outage

from pdpp_gateway.settings import HostedSettings

_log = logging.getLogger(__name__)
PREFIX: Final = "pdpp:refused"


# a loopback or one-hop Redis as a loaded process sees it, its own loop lag included: a call that
# misses it is limited from this process's share alone, so a tight deadline admits more than the limit
REDIS_DEADLINE: Final = 0.25


# every process says it is alive this often; one silent for REPLICA_SECONDS is no longer counted
HEARTBEAT_SECONDS: Final = 1.0
REPLICA_SECONDS: Final = 5
REPLICAS_KEY: Final = "pdpp:replicas"
# KEYS: the set of processes. ARGV: this process's id, the seconds a silent one stays counted.
_BEAT: Final = """
local now = tonumber(redis.call('TIME')[1])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return redis.call('ZCARD', KEYS[1])
"""


class Replicas:
    """How many processes share the store, as last seen: each writes its id with Redis's own
    time every ``HEARTBEAT_SECONDS`` (through the guard) and counts those heard from within
    ``REPLICA_SECONDS``. While Redis is down the count stays what it last was: each process
    then limits to its share of the limit (``FailoverLimiter``)."""

    def __init__(self, client: Any, guard: Guard) -> None:
        self.known = 1
        self._id = secrets.token_hex(8)
        self._client = client
        self._guard = guard
        self._script = client.register_script(_BEAT)
        self._stopping = asyncio.Event()

    async def beat(self) -> None:
        with contextlib.suppress(DependencyDown):
            count = await self._guard.call(
                lambda: self._script(keys=[REPLICAS_KEY], args=[self._id, REPLICA_SECONDS])
            )
            self.known = max(1, int(count))

    async def run(self) -> None:
        """Heartbeats until ``leave``. Stopped by an event, not by cancelling: Python 3.11's
        ``wait_for`` (inside the guard) can swallow a cancellation that meets an answer, and a
        loop that then went on would hold the process's shutdown for good."""
        while not self._stopping.is_set():
            await self.beat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), HEARTBEAT_SECONDS)

    async def leave(self, running: asyncio.Task[None]) -> None:
        """Stop ``running`` (this heartbeat's ``run``: at most one beat, the guard's deadline)
        and no longer be counted (at shutdown; best effort)."""
        self._stopping.set()
        await running
        with contextlib.suppress(DependencyDown):
            await self._guard.call(lambda: self._client.zrem(REPLICAS_KEY, self._id))


@dataclass(frozen=True, slots=True)
class SharedStore:
    client: Any
    guard: Guard
    replicas: Replicas


@asynccontextmanager
async def shared_store(settings: HostedSettings) -> AsyncIterator[SharedStore | None]:
    if not settings.redis_url:
        yield None
        return
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    # One retry at once, on a new connection: after Redis restarts, each pooled connection fails
    # once, and redis-py's default (ten retries, backing off from 10 ms up to a second) outlasts
    # the guard's deadline, so a Redis that is back looked down again, call after call, for seconds.
    client = aioredis.from_url(
        settings.redis_url, socket_timeout=0.5, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 1)
    )
    outage = Outage("shared Redis store", "rate limits and token verdicts are per process", _log)
    guard = Guard(outage, client.ping, deadline=REDIS_DEADLINE)
    with contextlib.suppress(Exception):  # connect before serving, so no call pays for it
        await asyncio.wait_for(client.ping(), 1.0)
    replicas = Replicas(client, guard)
    beating = asyncio.get_running_loop().create_task(replicas.run())
    try:
        yield SharedStore(client, guard, replicas)
    finally:
        await replicas.leave(beating)
        await guard.aclose()
        await client.aclose()


class SharedRefusals:
    def __init__(self, store: SharedStore, ttl: float, *, prefix: str = PREFIX) -> None:
        self._client = store.client
        self._guard = store.guard
        self._ttl_ms = max(1, int(ttl * 1000))
        self._prefix = prefix

    @property
    def degraded(self) -> str | None:
        """Why the shared store is not in use (for /readyz), or ``None``."""
        return self._guard.reason

    async def refused(self, token_hash: str) -> str | None:
        """The reason another replica refused this token, if it did within the bound."""
        try:
            reason = await self._guard.call(lambda: self._client.get(f"{self._prefix}:{token_hash}"))
        except DependencyDown:  # keep the local cache; the guard says so once
            return None
        return reason.decode() if isinstance(reason, bytes) else reason

    async def publish(self, token_hash: str, reason: str) -> None:
        with contextlib.suppress(DependencyDown):
            await self._guard.call(
                lambda: self._client.set(f"{self._prefix}:{token_hash}", reason, px=self._ttl_ms)
            )
