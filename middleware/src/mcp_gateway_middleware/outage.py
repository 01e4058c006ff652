"""A dependency's outage, said once, and a guard that keeps it off the hot path while it lasts.

Contract:

- ``Outage(what, fallback, log)`` tracks one optional dependency (a shared store, say).
  ``down(error)`` records why it is not in use: ``reason`` becomes
  ``"<what> unavailable (<ErrorType>); <fallback>"`` and the first failure of an outage logs
  that line as a warning (later failures of the same outage log nothing). ``up()`` clears
  ``reason`` and, if it was down, logs ``"<what> is back"`` once. ``reason`` is ``None``
  while the dependency is in use (what a readiness probe reports). No error message is
  kept or logged, only its type, so nothing a dependency echoes (a URL, a credential)
  reaches the log.
- ``Guard(outage, probe, ...)`` puts that dependency on a request's path without letting it
  slow the request: ``await guard.call(make)`` runs ``make()`` within ``deadline`` seconds
  (what a loaded process sees of a dependency on loopback or one hop away: its own event
  loop's lag included); a failure or a missed deadline raises ``DependencyDown`` for that
  call. A failure (refused, reset) marks the dependency down at once; a missed deadline
  does only when nothing has answered in time for ``patience`` seconds (slow answers while
  the process itself is busy, many calls waiting at once, are not an outage). While it is
  down every ``call`` raises ``DependencyDown`` at once, without touching it, and one
  background task runs ``probe()`` every ``probe_every`` seconds until it answers
  ``steady`` times in a row within ``probe_deadline``: only then is it up again. So a hung
  dependency costs the calls of ``patience`` seconds their ``deadline`` once, an outage is
  one log line down and one back however it flaps, and the caller serves from its own state
  meanwhile. Several stages may share one guard (one Redis client behind the rate limits and
  the shared refusals).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["DependencyDown", "Guard", "Outage"]

T = TypeVar("T")


class Outage:
    def __init__(self, what: str, fallback: str, log: logging.Logger) -> None:
        self._what = what
        self._fallback = fallback
        self._log = log
        self.reason: str | None = None

    def down(self, error: BaseException) -> None:
        if self.reason is None:
            self._log.warning("%s unavailable (%s); %s", self._what, type(error).__name__, self._fallback)
        self.reason = f"{self._what} unavailable ({type(error).__name__}); {self._fallback}"

    def up(self) -> None:
        if self.reason is not None:
            self._log.warning("%s is back", self._what)
        self.reason = None


class DependencyDown(Exception):
    """The guarded dependency is not in use now: serve from the caller's own state."""


class Guard:
    def __init__(
        self,
        outage: Outage,
        probe: Callable[[], Awaitable[object]],
        *,
        deadline: float = 0.05,
        patience: float = 1.0,
        probe_every: float = 0.5,
        probe_deadline: float = 0.25,
        steady: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.outage = outage
        self._probe = probe
        self._deadline = deadline
        self._patience = patience
        self._clock = clock
        self._answered_at = clock()  # the last answer in time (or the start)
        self._probe_every = probe_every
        self._probe_deadline = probe_deadline
        self._steady = steady
        self._probing: asyncio.Task[None] | None = None

    @property
    def reason(self) -> str | None:
        return self.outage.reason

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        if self.outage.reason is not None:
            raise DependencyDown(self.outage.reason)
        try:
            answer = await asyncio.wait_for(make(), self._deadline)
        except TimeoutError as error:  # slow: an outage only when nothing answers for a while
            if self._clock() - self._answered_at < self._patience:
                raise DependencyDown(f"no answer within {self._deadline:g} s") from None
            self._mark_down(error)
            raise DependencyDown(self.outage.reason) from None
        except Exception as error:  # a failure: down at once
            self._mark_down(error)
            raise DependencyDown(self.outage.reason) from None
        self._answered_at = self._clock()
        return answer

    def _mark_down(self, error: BaseException) -> None:
        self.outage.down(error)
        if self._probing is None or self._probing.done():
            self._probing = asyncio.get_running_loop().create_task(self._probe_until_steady())

    async def _probe_until_steady(self) -> None:
        answered = 0
        while answered < self._steady:
            await asyncio.sleep(self._probe_every)
            try:
                await asyncio.wait_for(self._probe(), self._probe_deadline)
            except Exception:  # still down: start counting again
                answered = 0
            else:
                answered += 1
        self._answered_at = self._clock()
        self.outage.up()

    async def aclose(self) -> None:
        """Stop probing (at shutdown)."""
        if self._probing is not None:
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing
