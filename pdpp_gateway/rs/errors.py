"""The upstream hop's typed errors: what can go wrong talking to the RS, kept honest.

Contract: every failure of an RS call is one of these ``ToolError`` subclasses, so the
error stage turns it into an ``isError`` result in exactly one place.

- ``RsStatusError``: the RS answered non-2xx. Its envelope is the RS ``error`` object,
  WHOLE (``available_connections``, ``retry_with``, ``resource_metadata``, ... survive);
  an OAuth-style ``{"error": "x", "error_description": "y"}`` or a non-JSON body is
  normalised to ``{type, code, message}`` without echoing a large or HTML body.
- ``RsTimeoutError``: no answer within a phase's bound.
- ``RsUnavailableError``: the RS could not be reached, or kept answering 502/503/504
  after the bounded retries, or the gateway's circuit breaker is holding calls back
  after repeated failures (``retry_after_seconds`` then says when to try again).
- ``RsProtocolError``: a 2xx whose body is not a JSON object, or is over the size cap.

No message, envelope or repr ever carries the bearer token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from middleware import ToolError
from pdpp_gateway.rs.error_body import error_type_for, normalise_error_body

__all__ = [
    "RsError",
    "RsProtocolError",
    "RsStatusError",
    "RsTimeoutError",
    "RsUnavailableError",
    "error_type_for",
    "normalise_error_body",
]


class RsError(ToolError):
    """Any failure of a call to the resource server."""


class RsStatusError(RsError):
    """The RS answered with a non-2xx status; ``envelope`` is its error object, whole."""

    def __init__(self, status: int, envelope: Mapping[str, Any], request_id: str | None) -> None:
        request_id = request_id or _str_or_none(envelope.get("request_id"))
        super().__init__(envelope, http_status=status, request_id=request_id)
        self.status = status

    @classmethod
    def from_body(cls, status: int, body: object, request_id: str | None) -> RsStatusError:
        return cls(status, normalise_error_body(status, body), request_id)


class RsTimeoutError(RsError):
    def __init__(self, phase: str, seconds: float) -> None:
        super().__init__(
            {
                "type": "api_error",
                "code": "upstream_timeout",
                "message": f"The resource server did not answer within {seconds:g} s ({phase}). "
                "Retry in a moment; if it keeps timing out, narrow the request (smaller limit, fewer fields).",
            }
        )


class RsUnavailableError(RsError):
    def __init__(
        self,
        reason: str,
        *,
        upstream_code: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        suffix = (
            f" (last answer: HTTP {status}{f' {upstream_code}' if upstream_code else ''})" if status else ""
        )
        when = f"Retry in {math.ceil(retry_after)} s." if retry_after is not None else "Retry later."
        envelope: dict[str, Any] = {
            "type": "api_error",
            "code": "upstream_unavailable",
            "message": f"The resource server is unavailable: {reason}{suffix}. {when}",
        }
        if retry_after is not None:
            envelope["retry_after_seconds"] = math.ceil(retry_after)
        super().__init__(envelope, **({"http_status": status} if status else {}))


class RsProtocolError(RsError):
    def __init__(self, problem: str) -> None:
        super().__init__(
            {
                "type": "api_error",
                "code": "upstream_malformed_response",
                "message": f"The resource server sent an unusable answer: {problem}. Retry; if it persists, "
                "report it to the provider.",
            }
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
