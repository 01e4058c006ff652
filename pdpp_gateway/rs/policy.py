"""How the RS client waits and retries: per-phase timeouts and bounded, jittered retries.

Contract: ``RsTimeouts`` bounds each phase of a read (connect, read, total; seconds).
``RetryPolicy`` retries an idempotent GET on 502/503/504, a refused connection or one
closed before any answer (never after a timeout: each attempt would get the whole budget
again), ``attempts`` in all, with aiohttp-retry's jittered backoff; ``options(retries)``
is the per-read options object, which counts the retries it actually made
(``CountingRetry.retries``), so the shared retry budget is refunded what was not used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
        """Options allowing ``retries`` retries (default: ``attempts - 1``)."""
        return CountingRetry(
            attempts=1 + (self.attempts - 1 if retries is None else retries),
            start_timeout=self.start_delay,
            max_timeout=self.max_delay,
            statuses=self.statuses,
            exceptions=self.exceptions,
            methods=_GET,
            retry_all_server_errors=False,
            random_interval_size=self.start_delay,
        )


class CountingRetry(JitterRetry):
    """aiohttp-retry's jittered backoff, counting the retries it actually made."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.retries = 0

    def get_timeout(self, attempt: int, response: aiohttp.ClientResponse | None = None) -> float:
        self.retries += 1  # asked for exactly once before each retry
        return super().get_timeout(attempt, response)
