"""A dependency's outage, said once: for a stage that keeps working without it.

Contract: ``Outage(what, fallback, log)`` tracks one optional dependency (a shared store,
say). ``down(error)`` records why it is not in use: ``reason`` becomes
``"<what> unavailable (<ErrorType>); <fallback>"`` and the first failure of an outage logs
that line as a warning (later failures of the same outage log nothing). ``up()`` clears
``reason`` and, if it was down, logs ``"<what> is back"`` once. ``reason`` is ``None``
while the dependency is in use (what a readiness probe reports). No error message is
kept or logged, only its type, so nothing a dependency echoes (a URL, a credential)
reaches the log.
"""

from __future__ import annotations

import logging


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
