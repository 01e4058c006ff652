"""Upstream failures in words: the one conversion of an ``RsError`` into a ``ToolError``.

Contract: ``tool_error(error)`` is the ``ToolError`` that every RS failure becomes, and
the only place one is worded. The tool pipeline's ``upstream_errors`` stage (just above
the handlers, below the package fan-out, so a failed package member is already a
``ToolError`` when the fan-out merges) and the resource reads (``resources``) both call
it, so a tool call and a resource read of the same failure say the same thing. The
envelope keeps the wire's shape:

- ``RsStatusError``: the RS's own error object, whole; extras ``http_status`` and
  ``request_id``.
- ``RsTimeoutError``: ``api_error`` / ``upstream_timeout``, naming the bound that fired.
- ``RsUnavailableError``: ``api_error`` / ``upstream_unavailable`` with the reason and the
  RS's last answer (extra ``http_status``); when the gateway holds calls back, the
  envelope's ``retry_after_seconds`` (whole seconds, rounded up) says when to try again,
  and the doors copy it to ``_meta["dev.pdpp/retry_after_seconds"]`` and ``Retry-After``.
- ``RsProtocolError``: ``api_error`` / ``upstream_malformed_response`` with the problem.

Messages state what happened, never what to do: the next step for every code is
``render.errors.next_step``'s alone.
"""

from __future__ import annotations

import math
from typing import Any

from mcp_gateway_middleware import ToolError

from pdpp_gateway.rs.errors import (
    RsError,
    RsProtocolError,
    RsStatusError,
    RsTimeoutError,
    RsUnavailableError,
)


def tool_error(error: RsError) -> ToolError:
    """The tool-facing error for an RS failure."""
    if isinstance(error, RsStatusError):
        return ToolError(error.envelope, http_status=error.status, request_id=error.request_id)
    extra: dict[str, Any] = {}
    envelope: dict[str, Any] = {"type": "api_error", "code": error.code, "message": _message(error)}
    if isinstance(error, RsUnavailableError):
        if error.retry_after is not None:
            envelope["retry_after_seconds"] = math.ceil(error.retry_after)
        if error.status:
            extra["http_status"] = error.status
    return ToolError(envelope, **extra)


def _message(error: RsError) -> str:
    if isinstance(error, RsTimeoutError):
        return f"The resource server did not answer within {error.seconds:g} s ({error.phase})."
    if isinstance(error, RsUnavailableError):
        last = ""
        if error.status:
            last = f" (last answer: HTTP {error.status}{f' {error.upstream_code}' if error.upstream_code else ''})"
        return f"The resource server is unavailable: {error.reason}{last}."
    if isinstance(error, RsProtocolError):
        return f"The resource server sent an unusable answer: {error.problem}."
    return f"The resource server call failed: {error}."
