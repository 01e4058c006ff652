"""The one status -> error ``type`` table is the reference RS's (rs-contract.md, "type derives from status")."""

from __future__ import annotations

import pytest

from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.rs.error_body import normalise_error_body

REFERENCE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    410: "gone_error",
    413: "request_entity_too_large_error",
    429: "rate_limit_error",
    # everything else, 409, 421 and 422 included
    409: "api_error",
    421: "api_error",
    422: "api_error",
    425: "api_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
}


@pytest.mark.parametrize(("status", "expected"), sorted(REFERENCE.items()))
def test_error_type_is_derived_from_the_status_as_the_reference_does(status: int, expected: str) -> None:
    assert error_type_for(status) == expected
    # an upstream body the gateway cannot read as an envelope is typed by the same table
    assert normalise_error_body(status, "<html>bad gateway</html>")["type"] == expected
