"""What keeps the gateway from piling onto a failing resource server.

Contract:

- ``RetryBudget``: retries are a bounded fraction of recent traffic. Every request
  deposits ``ratio`` of a retry (default 0.2: at most one retry per five requests in a
  steady outage) into a bucket that also refills at ``refill_per_second`` and holds at
  most ``capacity``. A request reserves the retries it may need before it is sent
  (``reserve``) and gives back those it did not use (``refund``), so concurrent
  requests can never spend more than the bucket held: retries cannot amplify an outage.
- ``CircuitBreaker``: after ``threshold`` consecutive upstream failures (no answer in
  time, a refused, reset or cut-off connection, 502/503/504 after retries) the circuit
  opens and every call fails fast for ``cool_down`` seconds, with the time left to
  wait. Then exactly one call is let through (half-open): its success closes the
  circuit, its failure opens it again for another cool-down. An answer the RS gave on
  purpose (any 2xx-4xx, or a 500 that is a bug of one request) counts as health.

Both are per upstream and shared by every caller of one ``RsClient``: they describe the
RS, not a grant. Clocks are injectable for tests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

Clock = Callable[[], float]


@dataclass(slots=True)
class RetryBudget:
    """A token bucket of retries, filled by requests (``ratio`` each) and by time."""

    ratio: float = 0.2
    capacity: float = 10.0
    refill_per_second: float = 0.5
    clock: Clock = time.monotonic
    _balance: float = field(init=False)
    _updated: float = field(init=False)

    def __post_init__(self) -> None:
        self._balance = self.capacity
        self._updated = self.clock()

    def reserve(self, wanted: int) -> int:
        """Record one request and reserve up to ``wanted`` retries for it; returns how many."""
        now = self.clock()
        refill = (now - self._updated) * self.refill_per_second + self.ratio
        self._balance = min(self.capacity, self._balance + refill)
        self._updated = now
        granted = max(0, min(wanted, math.floor(self._balance)))
        self._balance -= granted
        return granted

    def refund(self, unused: int) -> None:
        """Give back reserved retries the request did not need."""
        self._balance = min(self.capacity, self._balance + max(0, unused))

    @property
    def balance(self) -> float:
        return self._balance


class CircuitState(Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitOpen(Exception):
    """The circuit is open: no call is sent for ``retry_after`` more seconds."""

    def __init__(self, retry_after: float, failures: int) -> None:
        super().__init__(f"circuit open for {retry_after:.1f} s after {failures} failures")
        self.retry_after = retry_after
        self.failures = failures


DEFAULT_THRESHOLD: Final = 5
DEFAULT_COOL_DOWN: Final = 10.0


@dataclass(slots=True)
class CircuitBreaker:
    threshold: int = DEFAULT_THRESHOLD
    cool_down: float = DEFAULT_COOL_DOWN
    clock: Clock = time.monotonic
    _failures: int = field(default=0, init=False)
    _opened_at: float | None = field(default=None, init=False)
    _probing: bool = field(default=False, init=False)

    @property
    def state(self) -> CircuitState:
        if self._opened_at is None:
            return CircuitState.CLOSED
        if self._probing or self.clock() - self._opened_at >= self.cool_down:
            return CircuitState.HALF_OPEN
        return CircuitState.OPEN

    def admit(self) -> None:
        """Let a call through, or raise ``CircuitOpen`` (one probe at a time when half-open)."""
        if self._opened_at is None:
            return
        waited = self.clock() - self._opened_at
        if waited < self.cool_down:
            raise CircuitOpen(self.cool_down - waited, self._failures)
        if self._probing:
            raise CircuitOpen(1.0, self._failures)  # the probe is still out: ask again shortly
        self._probing = True

    def succeeded(self) -> None:
        self._failures, self._opened_at, self._probing = 0, None, False

    def failed(self) -> None:
        self._failures += 1
        if self._probing or self._failures >= self.threshold:
            self._opened_at, self._probing = self.clock(), False

    def released(self) -> None:
        """An admitted call ended without telling anything about the RS (e.g. cancelled)."""
        self._probing = False
