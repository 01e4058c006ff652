"""State the replicas of the hosted door share through Redis, when one is configured.

Contract:

- ``redis_client(settings)``: one asyncio Redis client for the app's life (short socket
  timeouts, so a dead Redis costs a request at most about half a second once, then the
  fallbacks take over), or ``None`` without ``--redis-url``.
- ``SharedRefusals``: a token refused by one replica (inactive: revoked, expired, wrong
  audience...) is refused by every replica within the verdict cache bound. The replica
  that learns it writes ``<prefix>:<sha256 of the token>`` with the refusal's reason for
  that bound; every replica checks the key before trusting a cached active verdict.
  Only hashes reach Redis, never a token. If Redis fails, the replica keeps its own
  cache (the single-process bound: never a pass it would not have given alone), and
  ``degraded`` says so until Redis answers again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from middleware.outage import Outage
from pdpp_gateway.settings import HostedSettings

_log = logging.getLogger(__name__)
PREFIX: Final = "pdpp:refused"


@asynccontextmanager
async def redis_client(settings: HostedSettings) -> AsyncIterator[Any]:
    if not settings.redis_url:
        yield None
        return
    import redis.asyncio as aioredis

    client = aioredis.from_url(settings.redis_url, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        yield client
    finally:
        await client.aclose()


class SharedRefusals:
    def __init__(self, client: Any, ttl: float, *, prefix: str = PREFIX) -> None:
        self._client = client
        self._ttl_ms = max(1, int(ttl * 1000))
        self._prefix = prefix
        self._outage = Outage("shared verdict store", "verdicts are per process", _log)

    @property
    def degraded(self) -> str | None:
        """Why the shared store is not in use (for /readyz), or ``None``."""
        return self._outage.reason

    async def refused(self, token_hash: str) -> str | None:
        """The reason another replica refused this token, if it did within the bound."""
        try:
            reason = await self._client.get(f"{self._prefix}:{token_hash}")
        except Exception as error:  # Redis down: keep the local cache, say so
            self._outage.down(error)
            return None
        self._outage.up()
        return reason.decode() if isinstance(reason, bytes) else reason

    async def publish(self, token_hash: str, reason: str) -> None:
        try:
            await self._client.set(f"{self._prefix}:{token_hash}", reason, px=self._ttl_ms)
        except Exception as error:
            self._outage.down(error)
            return
        self._outage.up()
