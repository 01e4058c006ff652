"""The upstream hop's errors: what went wrong talking to the RS, as facts only.

Contract: every failure of an RS call raises one of these plain exceptions (no
``ToolError``, no model text). Each carries what happened and ``code``, the stable
name its tool result carries on the wire; ``render.upstream.tool_error`` is the one
place that turns it into words and an envelope, for tools and resources alike.

::

    RsError                   any failure of an RS call
    ├── RsTimeoutError        no answer within a bound: ``phase`` (connect, waiting for
    │                         data, whole request) and its ``seconds``
    ├── RsUnavailableError    the RS could not be reached, or kept answering 502/503/504
    │                         after the bounded retries (``status``, ``upstream_code``),
    │                         or the circuit breaker holds calls back (``retry_after``
    │                         seconds); ``reason`` says which, in a few words
    ├── RsStatusError         the RS answered non-2xx: ``status``, its ``error`` object
    │                         WHOLE as ``envelope`` (``available_connections``,
    │                         ``retry_with``, ``resource_metadata``, ... survive; an
    │                         OAuth-style or non-JSON body is normalised by ``error_body``)
    │                         and the ``request_id``
    └── RsProtocolError       a 2xx that cannot be used (not a JSON object, over the size
                              cap, a redirect): ``problem`` says which

``ASKED_OUTSIDE_GRANT``: the RS's 401 codes that refuse what was asked (a stream or a
connection the grant does not hold), not the grant or the token itself.

``str()`` of each is a short line for logs. No field, message or repr ever carries the
bearer token (the client redacts an error body that echoes it before it gets here).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from pdpp_gateway.rs.error_body import normalise_error_body

__all__ = [
    "ASKED_OUTSIDE_GRANT",
    "RsError",
    "RsProtocolError",
    "RsStatusError",
    "RsTimeoutError",
    "RsUnavailableError",
    "TimeoutPhase",
    "normalise_error_body",
]

ASKED_OUTSIDE_GRANT: Final = frozenset({"context.stream_not_allowed", "context.instance_mismatch"})


class RsError(Exception):
    """Any failure of a call to the resource server; ``code`` is its name on the wire."""

    def __init__(self, code: str, summary: str) -> None:
        super().__init__(f"{code}: {summary}")
        self.code = code


class TimeoutPhase(StrEnum):
    """Which of the client's bounds fired (the value reads as a phrase)."""

    CONNECT = "connecting"
    READ = "waiting for data"
    TOTAL = "whole request"


class RsTimeoutError(RsError):
    """No answer within ``seconds``, the bound of ``phase``."""

    def __init__(self, phase: TimeoutPhase, seconds: float) -> None:
        super().__init__("upstream_timeout", f"no answer within {seconds:g} s ({phase})")
        self.phase = phase
        self.seconds = seconds


class RsUnavailableError(RsError):
    """The RS could not be reached or kept failing; ``retry_after`` when calls are held back."""

    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        upstream_code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__("upstream_unavailable", reason + (f" (HTTP {status})" if status else ""))
        self.reason = reason
        self.status = status
        self.upstream_code = upstream_code
        self.retry_after = retry_after


class RsStatusError(RsError):
    """The RS answered with a non-2xx status; ``envelope`` is its error object, whole."""

    def __init__(self, status: int, envelope: Mapping[str, Any], request_id: str | None) -> None:
        self.envelope: dict[str, Any] = dict(envelope)
        super().__init__(str(self.envelope.get("code", "error")), f"HTTP {status}")
        self.status = status
        self.request_id = request_id or _str_or_none(self.envelope.get("request_id"))

    @classmethod
    def from_body(cls, status: int, body: object, request_id: str | None) -> RsStatusError:
        return cls(status, normalise_error_body(status, body), request_id)


class RsProtocolError(RsError):
    """A 2xx answer the gateway cannot use; ``problem`` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__("upstream_malformed_response", problem)
        self.problem = problem


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
