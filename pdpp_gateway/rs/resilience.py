"""What keeps the gateway from piling onto a failing resource server.

Contract:

- ``RetryBudget``: retries are a bounded fraction of recent traffic. Every request
  deposits ``ratio`` of a retry (default 0.2: at most one retry per five requests in a
  steady outage) into a bucket that also refills at ``refill_per_second`` and holds at
  most ``capacity``. A request reserves the retries it may need before it is sent
  (``reserve``) and gives back those it did not use (``refund``), so concurrent
  requests can never spend more than the bucket held: retries cannot amplify an outage.
- ``CircuitBreaker``: judges the RS by the failure *rate* of recent calls (upstream
  failures: no answer in time, a refused, reset or cut-off connection, 502/503/504 after
  retries; an answer the RS gave on purpose, any 2xx-4xx or a 500 that is a bug of one
  request, counts as health). At least ``min_calls`` calls in the last ``window`` seconds,
  ending ``min_span`` seconds apart or more, with ``failure_rate`` or more failed open the
  circuit: every call fails fast for ``cool_down`` seconds with the time left to wait,
  then a few probes go through (half-open) and the first to end decides. An RS that
  flaps (down and up by turns, each for less than about ``min_span``) answers half the
  calls and is never held back, not even when its first calls all fall in a down turn:
  a few failures in a row are not yet a failure rate.
- ``Breakers``: one breaker per route class (``rs.routes``: search, records, aggregate,
  schema, ...), so one kind of call that fails (slow searches) never holds another
  (record reads). Every change of state is one log line and is told to an observer (the
  hosted door's ``/metrics`` gauge).

The retry budget is per upstream and the breakers per route class, shared by every caller
of one ``RsClient``: they describe the RS, not a grant. Clocks are injectable for tests.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Final

Clock = Callable[[], float]
_log = logging.getLogger("pdpp_gateway.rs")


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


class CircuitState(Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitOpen(Exception):
    """The circuit is open: no call is sent for ``retry_after`` more seconds."""

    def __init__(self, retry_after: float, failed: int, calls: int) -> None:
        super().__init__(f"circuit open for {retry_after:.1f} s after {failed} of {calls} calls failed")
        self.retry_after = retry_after
        self.failed = failed
        self.calls = calls


DEFAULT_WINDOW: Final = 10.0
DEFAULT_MIN_CALLS: Final = 5
DEFAULT_MIN_SPAN: Final = 2.0
DEFAULT_FAILURE_RATE: Final = 0.8
DEFAULT_COOL_DOWN: Final = 5.0
DEFAULT_PROBES: Final = 3
Change = Callable[["CircuitState", str], None]


@dataclass(slots=True)
class CircuitBreaker:
    """Health judged by the failure rate of the last ``window`` seconds of calls.

    It opens once at least ``min_calls`` calls ended within the window, the first and the
    last at least ``min_span`` seconds apart, and at least ``failure_rate`` of them failed:
    an RS that answers half the time is not held back (half the calls still succeed, and
    a down turn shorter than ``min_span`` is never judged alone), one that is down is. Open, every call fails fast for
    ``cool_down`` seconds; then up to ``probes`` calls at a time are let through
    (half-open): a success closes it (the window starts afresh), a failure opens it again.
    ``on_change(state, why)`` hears every change of state.
    """

    window: float = DEFAULT_WINDOW
    min_calls: int = DEFAULT_MIN_CALLS
    min_span: float = DEFAULT_MIN_SPAN
    failure_rate: float = DEFAULT_FAILURE_RATE
    cool_down: float = DEFAULT_COOL_DOWN
    probes: int = DEFAULT_PROBES
    clock: Clock = time.monotonic
    on_change: Change | None = None
    _events: deque[tuple[float, bool]] = field(default_factory=deque, init=False)  # (ended, failed)
    _failed: int = field(default=0, init=False)
    _opened_at: float | None = field(default=None, init=False)
    _probing: int = field(default=0, init=False)
    _announced: CircuitState = field(default=CircuitState.CLOSED, init=False)
    _held: tuple[int, int] = field(default=(0, 0), init=False)  # (failed, calls) when it opened

    @property
    def state(self) -> CircuitState:
        if self._opened_at is None:
            return CircuitState.CLOSED
        if self._probing or self.clock() - self._opened_at >= self.cool_down:
            return CircuitState.HALF_OPEN
        return CircuitState.OPEN

    def admit(self) -> None:
        """Let a call through, or raise ``CircuitOpen`` (``probes`` at a time when half-open)."""
        if self._opened_at is None:
            return
        waited = self.clock() - self._opened_at
        if waited < self.cool_down:
            raise CircuitOpen(self.cool_down - waited, *self._held)
        if self._probing >= self.probes:
            raise CircuitOpen(1.0, *self._held)  # the probes are still out: ask again shortly
        self._probing += 1
        self._announce(CircuitState.HALF_OPEN, f"letting up to {self.probes} probe calls through")

    def succeeded(self) -> None:
        if self._opened_at is not None:
            self._close()
            return
        self._record(failed=False)

    def failed(self) -> None:
        if self._opened_at is not None:
            if self._probing:  # a probe failed: hold calls for another cool-down
                self._open(*self._held, why="a probe call failed")
            return
        self._record(failed=True)
        calls = len(self._events)
        spanned = self._events[-1][0] - self._events[0][0] >= self.min_span
        if calls >= self.min_calls and spanned and self._failed >= self.failure_rate * calls:
            self._open(
                self._failed, calls, why=f"{self._failed} of {calls} calls failed in {self.window:g} s"
            )

    def released(self) -> None:
        """An admitted call ended without telling anything about the RS (e.g. cancelled)."""
        if self._probing:
            self._probing -= 1

    def _record(self, *, failed: bool) -> None:
        now = self.clock()
        self._events.append((now, failed))
        self._failed += failed
        while self._events and self._events[0][0] <= now - self.window:
            _, was_failed = self._events.popleft()
            self._failed -= was_failed

    def _open(self, failed: int, calls: int, *, why: str) -> None:
        self._opened_at, self._probing, self._held = self.clock(), 0, (failed, calls)
        self._announce(CircuitState.OPEN, f"{why}; holding calls back for {self.cool_down:g} s")

    def _close(self) -> None:
        self._opened_at, self._probing = None, 0
        self._events.clear()
        self._failed = 0
        self._announce(CircuitState.CLOSED, "a probe call succeeded")

    def _announce(self, state: CircuitState, why: str) -> None:
        if state is not self._announced:
            self._announced = state
            if self.on_change is not None:
                self.on_change(state, why)


@dataclass(slots=True)
class Breakers:
    """One ``CircuitBreaker`` per route class (``rs.routes``): searches that time out hold
    back searches, not another caller's record reads. Each change of state is logged
    (``circuit for <scope> calls to the RS: <state> (<why>)``) and told to
    ``observer(scope, state)``; each call held back is told to ``on_held(scope)``."""

    window: float = DEFAULT_WINDOW
    min_calls: int = DEFAULT_MIN_CALLS
    min_span: float = DEFAULT_MIN_SPAN
    failure_rate: float = DEFAULT_FAILURE_RATE
    cool_down: float = DEFAULT_COOL_DOWN
    probes: int = DEFAULT_PROBES
    clock: Clock = time.monotonic
    observer: Callable[[str, CircuitState], None] | None = None
    on_held: Callable[[str], None] | None = None  # a call of this scope was held back
    _by_scope: dict[str, CircuitBreaker] = field(default_factory=dict, init=False)

    def count_held(self, scope: str) -> None:
        if self.on_held is not None:
            self.on_held(scope)

    def for_scope(self, scope: str) -> CircuitBreaker:
        breaker = self._by_scope.get(scope)
        if breaker is None:
            breaker = CircuitBreaker(
                window=self.window,
                min_calls=self.min_calls,
                min_span=self.min_span,
                failure_rate=self.failure_rate,
                cool_down=self.cool_down,
                probes=self.probes,
                clock=self.clock,
                on_change=partial(self._changed, scope),
            )
            self._by_scope[scope] = breaker
        return breaker

    def states(self) -> dict[str, CircuitState]:
        return {scope: breaker.state for scope, breaker in self._by_scope.items()}

    def _changed(self, scope: str, state: CircuitState, why: str) -> None:
        log = _log.info if state is CircuitState.CLOSED else _log.warning
        log("circuit for %s calls to the RS: %s (%s)", scope, state.value, why)
        if self.observer is not None:
            self.observer(scope, state)
