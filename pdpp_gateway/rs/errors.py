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

_STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    410: "gone_error",
    413: "request_entity_too_large_error",
    429: "rate_limit_error",
}
_EXCERPT_CHARS = 200


def error_type_for(status: int) -> str:
    """The RS's error ``type`` for an HTTP status (derived from status, as the RS does)."""
    return _STATUS_TYPES.get(status, "api_error")


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


def normalise_error_body(status: int, body: object) -> dict[str, Any]:
    """The RS error object of a non-2xx body, in the RS envelope shape."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            return dict(error)
        if isinstance(error, str):
            description = body.get("error_description") or body.get("message") or error
            return {"type": error, "code": error, "message": str(description)[:_EXCERPT_CHARS]}
    message = f"Resource server returned HTTP {status}"
    if isinstance(body, str) and body.strip() and "<" not in body[:100]:
        message += f": {' '.join(body.split())[:_EXCERPT_CHARS]}"
    return {"type": error_type_for(status), "code": f"http_{status}", "message": message}


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
