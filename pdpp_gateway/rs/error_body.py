"""The RS's error bodies read into its error envelope shape (pure; no HTTP client, no SDK).

Contract: ``normalise_error_body(status, body)`` returns the RS ``error`` object WHOLE
when the body has one; an OAuth-style ``{"error": "x", "error_description": "y"}`` or a
non-JSON body becomes ``{type, code, message}`` without echoing a large or HTML body.
``error_type_for(status)`` is the RS's error ``type`` for a status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
