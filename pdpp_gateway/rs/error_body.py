"""The RS's error bodies read into its error envelope shape (pure; no HTTP client, no SDK).

Contract: ``normalise_error_body(status, body)`` returns the RS ``error`` object WHOLE
when the body has one; an OAuth-style ``{"error": "x", "error_description": "y"}`` or a
non-JSON body becomes ``{type, code, message}`` without echoing a large or HTML body.
``error_type_for(status)`` (from ``pdpp_gateway.error_types``, the one status table) is
the RS's error ``type`` for a status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pdpp_gateway.error_types import error_type_for

_EXCERPT_CHARS = 200


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
