"""How the RS client waits and retries: per-phase timeouts and bounded, jittered retries.

Contract: ``RsTimeouts`` bounds each phase of a read (connect, read, total; seconds).
``RetryPolicy`` retries an idempotent GET on 502/503/504, a refused connection or one
closed before any answer (never after a timeout: each attempt would get the whole budget
again), ``attempts`` in all, with aiohttp-retry's jittered backoff; ``options(retries)``
is the per-read options object, which counts the retries it actually made
(``CountingRetry.retries``), so the shared retry budget is refunded what was not used; it is
copied from one built per policy and retry count, so a read never rebuilds the same settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import aiohttp
from aiohttp_retry import JitterRetry

_GET: Final = frozenset({"GET"})


@dataclass(frozen=True, slots=True)
class RsTimeouts:
    """Per-phase bounds in seconds."""

    connect: float = 5.0
    read: float = 20.0
    total: float = 30.0

    def client_timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self.total, sock_connect=self.connect, sock_read=self.read)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded, jittered retries for idempotent reads."""

    attempts: int = 3
    start_delay: float = 0.1
    max_delay: float = 1.0
    statuses: frozenset[int] = frozenset({502, 503, 504})
    # Refused connections and connections closed before any answer; never timeouts
    # (each attempt would get the whole time budget again).
    exceptions: frozenset[type[Exception]] = field(
        default_factory=lambda: frozenset({aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError})
    )

    def options(self, retries: int | None = None) -> CountingRetry:
        """Fresh options allowing ``retries`` retries (default: ``attempts - 1``)."""
        return _built(self, 1 + (self.attempts - 1 if retries is None else retries)).fresh()


@lru_cache(maxsize=64)  # a policy or two per process, each with a few retry counts
def _built(policy: RetryPolicy, attempts: int) -> CountingRetry:
    return CountingRetry(
        attempts=attempts,
        start_timeout=policy.start_delay,
        max_timeout=policy.max_delay,
        statuses=policy.statuses,
        exceptions=policy.exceptions,
        methods=_GET,
        retry_all_server_errors=False,
        random_interval_size=policy.start_delay,
    )


class CountingRetry(JitterRetry):
    """aiohttp-retry's jittered backoff, counting the retries it actually made."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.retries = 0

    def fresh(self) -> CountingRetry:
        """The same settings with no retry counted yet (the settings are never changed in place)."""
        copy = object.__new__(CountingRetry)
        copy.__dict__.update(self.__dict__)
        copy.retries = 0
        return copy

    def get_timeout(self, attempt: int, response: aiohttp.ClientResponse | None = None) -> float:
        self.retries += 1  # asked for exactly once before each retry
        return super().get_timeout(attempt, response)
