"""Bounds on the hosted door's connections: how long each may wait, and how many may be open.

Contract:

- ``ConnectionLimits``: ``idle`` seconds a new connection may stay silent before its first
  request begins; ``header`` seconds a request line and its headers may take from their
  first byte; ``keepalive`` seconds a connection may wait for its next request after an
  answer; ``ceiling`` connections open at once. ``default_ceiling()`` is the process's
  descriptor limit at start less ``FD_HEADROOM`` (upstream connections, Redis, files,
  logs), three quarters of it at most, so the process never runs out of descriptors
  before the ceiling holds.
- ``ConnectionGuard`` keeps the connections waiting for a request head (silent, kept
  alive, or sending headers) in the order they began to wait, each with its deadline; one
  still waiting at its deadline is closed (``idle_timeout``, ``header_timeout``,
  ``keepalive_timeout``). A connection arriving at the ceiling closes the one that has
  waited longest (``evicted``): a real caller, or a ``/healthz`` probe, always gets in
  however many silent or slow sockets one client holds. With none waiting (every
  connection busy with a request) the newcomer is ``refused``: answered 503
  ``server_busy`` with ``Retry-After`` and closed, never left hanging.
- Every closing is counted in ``pdpp_gateway_connections_closed{reason}`` and the open
  connections in ``pdpp_gateway_connections_open``; evictions and refusals are logged as
  one warning at most every ``LOG_EVERY`` seconds, with the count since the last one
  (a flood of sockets never floods the log); timeouts at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Final, Protocol

from pdpp_gateway.hosted.metrics import Metrics
from pdpp_gateway.hosted.refusals import rpc_error_body
from pdpp_gateway.settings import HostedSettings

FD_HEADROOM: Final = 256
MIN_CEILING: Final = 16
NO_RLIMIT_CEILING: Final = 1024
LOG_EVERY: Final = 10.0
_log = logging.getLogger("pdpp_gateway.connections")


def default_ceiling() -> int:
    """The descriptor limit (soft) less ``FD_HEADROOM``, and three quarters of it at most
    (``NO_RLIMIT_CEILING`` where the platform has no such limit: Windows)."""
    try:
        import resource
    except ImportError:
        return NO_RLIMIT_CEILING
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(MIN_CEILING, min(soft - FD_HEADROOM, soft * 3 // 4))


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    idle: float = 10.0
    header: float = 10.0
    keepalive: float = 75.0
    ceiling: int = 0  # 0: default_ceiling()

    @classmethod
    def from_settings(cls, settings: HostedSettings) -> ConnectionLimits:
        return cls(
            idle=settings.idle_timeout_seconds,
            header=settings.header_timeout_seconds,
            keepalive=settings.keepalive_timeout_seconds,
            ceiling=settings.max_connections,
        )

    def resolved_ceiling(self) -> int:
        return self.ceiling or default_ceiling()


def busy_answer() -> bytes:
    """The whole HTTP answer of a refused connection."""
    body = rpc_error_body(
        503,
        "server_busy",
        "The gateway holds as many connections as it may, each busy with a request; nothing was "
        "processed. Retry in a moment.",
        error_type="unavailable",
    )
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Closable(Protocol):
    def force_close(self) -> None: ...


class ConnectionGuard:
    """The open connections of one server, and which of them wait for a request head."""

    def __init__(self, limits: ConnectionLimits, metrics: Metrics | None) -> None:
        self.ceiling = limits.resolved_ceiling()
        self._metrics = metrics
        self._open: set[Closable] = set()
        # waiting connection -> (why it would close, its deadline timer), oldest first
        self._waiting: dict[Closable, tuple[str, asyncio.TimerHandle]] = {}
        self._unlogged: dict[str, int] = {}
        self._logged_at = -LOG_EVERY
        self._seconds = {
            "idle_timeout": limits.idle,
            "header_timeout": limits.header,
            "keepalive_timeout": limits.keepalive,
        }

    def admit(self, connection: Closable) -> bool:
        """Take ``connection`` in (closing the longest-waiting one at the ceiling), or refuse it."""
        if len(self._open) >= self.ceiling:
            if not self._waiting:
                self._closed("refused")
                return False
            oldest = next(iter(self._waiting))
            self.forget(oldest)
            oldest.force_close()
            self._closed("evicted")
        self._open.add(connection)
        self._count_open()
        return True

    def wait(self, connection: Closable, reason: str) -> None:
        """``connection`` waits for a request head from now on; closed as ``reason`` if it is
        still waiting when that wait's limit has passed."""
        if connection not in self._open:
            return
        self._stop_waiting(connection)
        timer = asyncio.get_running_loop().call_later(self._seconds[reason], self._expire, connection, reason)
        self._waiting[connection] = (reason, timer)

    def waiting_for(self, connection: Closable) -> str | None:
        """Why ``connection`` would close now, if it is waiting for a request head."""
        waiting = self._waiting.get(connection)
        return waiting[0] if waiting else None

    def busy(self, connection: Closable) -> None:
        """A request head has arrived on ``connection``: it waits no longer."""
        self._stop_waiting(connection)

    def forget(self, connection: Closable) -> None:
        """``connection`` is closed."""
        self._stop_waiting(connection)
        if connection in self._open:
            self._open.discard(connection)
            self._count_open()

    def _stop_waiting(self, connection: Closable) -> None:
        waiting = self._waiting.pop(connection, None)
        if waiting is not None:
            waiting[1].cancel()

    def _expire(self, connection: Closable, reason: str) -> None:
        if self.waiting_for(connection) == reason:
            self.forget(connection)
            connection.force_close()
            self._closed(reason)

    def _count_open(self) -> None:
        if self._metrics is not None:
            self._metrics.connections_open.set(len(self._open))

    def _closed(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.count_connection_closed(reason)
        if reason.endswith("_timeout"):
            _log.debug("closed a connection (%s)", reason, extra={"fields": {"event": reason}})
            return
        self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY:
            self._logged_at = now
            self._log_ceiling()

    def _log_ceiling(self) -> None:
        counts, self._unlogged = self._unlogged, {}
        _log.warning(
            "connection ceiling (%d) reached: %d waiting connection(s) closed for newcomers, "
            "%d newcomer(s) refused with 503 since the last such line",
            self.ceiling,
            counts.get("evicted", 0),
            counts.get("refused", 0),
            extra={"fields": {"event": "connection_ceiling", "ceiling": self.ceiling, **counts}},
        )
