"""Rate limits for any HTTP gateway: a token bucket per caller under a global ceiling.

Contract:

- ``Rate(per_second, burst)``: a bucket holds at most ``burst`` tokens and refills at
  ``per_second``; a request takes one. ``per_second <= 0`` means no limit.
- A ``Limiter`` answers ``take(caller) -> Decision``: allowed or not, and when not,
  ``retry_after`` seconds until a token is there. A request is allowed only when both
  its caller's bucket and the global bucket have a token, and then it takes from both.
  A caller key is whatever the gateway says identifies a caller (a grant, a package):
  callers never share a bucket, and a key is never a credential (hash it if in doubt).
- Per-caller rates: ``rate_of(caller)`` (``LocalLimiter`` and ``RedisLimiter``) answers a
  caller's own ``Rate``, or ``None`` for the default ``per_caller`` (a paying tier, say).
- ``LocalLimiter``: the buckets of this process (bounded: the least recently used
  callers are forgotten first, which only ever gives a forgotten caller a full bucket).
  ``take_now(caller, share=n)`` limits at ``1/n`` of each rate and burst (a burst at
  least 1): this process's share of a limit that ``n`` processes enforce together.
- ``FailoverLimiter(shared, local, guard, share)``: a shared limiter (Redis, see
  ``ratelimit_redis``) with this process's buckets as the fallback, reached through
  ``guard`` (``outage.Guard``: a deadline per call). When the shared store fails or is
  slow, requests are limited per process at once, each process to its share of the limit
  (``share()``: how many processes enforce it, as last known; 1 by default), and
  ``degraded`` says why (logged once per outage), until the guard's background probe
  finds the store answering steadily again. Limiting never fails open to "no limit", nor
  to N processes each allowing the whole limit, and never fails closed to "refuse
  everyone".
- This module imports no web framework: the HTTP doors (``http.rate_limit`` for aiohttp,
  ``asgi.McpDoor`` for ASGI) spend one token per HTTP message, the tool stage
  ``call_limits.LimitCalls`` one per tool call.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from mcp_gateway_middleware.outage import DependencyDown, Guard

__all__ = [
    "GLOBAL",
    "Decision",
    "FailoverLimiter",
    "Limiter",
    "LocalLimiter",
    "Rate",
]

_log = logging.getLogger(__name__)
GLOBAL: Final = "*global*"
MAX_CALLERS: Final = 100_000


@dataclass(frozen=True, slots=True)
class Rate:
    per_second: float
    burst: int

    @property
    def unlimited(self) -> bool:
        return self.per_second <= 0


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: float = 0.0  # seconds until a token is there (0 when allowed)
    backend: str = "local"  # which limiter decided: "local" or "shared"

    @property
    def retry_after_seconds(self) -> int:
        """Whole seconds for a ``Retry-After`` header (at least 1 when refused)."""
        return 0 if self.allowed else max(1, math.ceil(self.retry_after))


class Limiter(Protocol):
    async def take(self, caller: str) -> Decision: ...


class LocalLimiter:
    """Token buckets kept in this process."""

    def __init__(
        self,
        per_caller: Rate,
        ceiling: Rate,
        *,
        rate_of: Callable[[str], Rate | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rates = {"caller": per_caller, "global": ceiling}
        self._rate_of = rate_of
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    async def take(self, caller: str) -> Decision:
        return self.take_now(caller)

    def take_now(self, caller: str, share: int = 1) -> Decision:
        now = self._clock()
        own = self._rate_of(caller) if self._rate_of is not None else None
        keyed = [
            (caller, _part(own or self._rates["caller"], share)),
            (GLOBAL, _part(self._rates["global"], share)),
        ]
        levels = [(key, rate, self._level(key, rate, now)) for key, rate in keyed if not rate.unlimited]
        short = [(1 - tokens) / rate.per_second for _, rate, tokens in levels if tokens < 1]
        if short:
            for key, _, tokens in levels:
                self._store(key, tokens, now)
            return Decision(False, max(short))
        for key, _, tokens in levels:
            self._store(key, tokens - 1, now)
        return Decision(True)

    def _level(self, key: str, rate: Rate, now: float) -> float:
        tokens, at = self._buckets.get(key, (float(rate.burst), now))
        return min(float(rate.burst), tokens + (now - at) * rate.per_second)

    def _store(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > MAX_CALLERS:
            self._buckets.popitem(last=False)


def _part(rate: Rate, share: int) -> Rate:
    """One of ``share`` equal parts of ``rate`` (a burst of at least one)."""
    if share <= 1 or rate.unlimited:
        return rate
    return Rate(rate.per_second / share, max(1, rate.burst // share))


class FailoverLimiter:
    """A shared limiter, falling back to this process's share of the limit while it is down."""

    def __init__(
        self, shared: Limiter, local: LocalLimiter, guard: Guard, share: Callable[[], int] = lambda: 1
    ) -> None:
        self._shared = shared
        self._local = local
        self._guard = guard
        self._share = share

    @property
    def degraded(self) -> str | None:
        """Why the shared store is not in use (for /readyz), or ``None``."""
        return self._guard.reason

    async def take(self, caller: str) -> Decision:
        try:
            return await self._guard.call(lambda: self._shared.take(caller))
        except DependencyDown:  # down, slow or failing: limit locally (the guard says so once)
            return self._local.take_now(caller, self._share())
