"""The error ``type`` the PDPP resource server derives from an HTTP status: one table.

Contract: ``error_type_for(status)`` is the RS error envelope's ``type`` for ``status``,
exactly as the reference RS derives it (from the status, never from the error code):
400 ``invalid_request_error``, 401 ``authentication_error``, 403 ``permission_error``,
404 ``not_found_error``, 410 ``gone_error``, 413 ``request_entity_too_large_error``,
429 ``rate_limit_error``, every other status (409, 421, 422, 500, 503, ...) ``api_error``.
Pure (no I/O, no imports beyond the standard library): the RS client reads upstream
errors with it, the sandbox RS writes its envelopes with it, and the hosted door types
its refusals with it (stating its own exceptions where it decides them).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

STATUS_TYPES: Final = MappingProxyType(
    {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        410: "gone_error",
        413: "request_entity_too_large_error",
        429: "rate_limit_error",
    }
)
OTHER_STATUS_TYPE: Final = "api_error"


def error_type_for(status: int) -> str:
    """The RS's error ``type`` for an HTTP status."""
    return STATUS_TYPES.get(status, OTHER_STATUS_TYPE)
