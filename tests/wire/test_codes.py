"""One status → JSON-RPC code table: the hosted door's refusals and the resource reads agree
(an RS failure reaching a resource read as the pipeline's upstream_errors stage words it).

The same HTTP status gets the same code whichever door or operation reports it; only what a
caller's mistake is called differs (a malformed request on the hosted door, a bad URI on a
resource read).
"""

from __future__ import annotations

import mcp.types as types
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdpp_gateway.hosted.refusals import rpc_error_body
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.resources.handlers import protocol_error
from pdpp_gateway.rs.errors import RsStatusError, RsTimeoutError, RsUnavailableError, TimeoutPhase
from pdpp_gateway.wire.codes import (
    BY_STATUS,
    CREDENTIAL_REFUSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    NOT_FOUND,
    PARSE_ERROR,
    RATE_LIMITED,
    UNAVAILABLE,
    for_status,
)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, CREDENTIAL_REFUSED),
        (403, CREDENTIAL_REFUSED),
        (404, NOT_FOUND),
        (429, RATE_LIMITED),
        (503, UNAVAILABLE),
        (504, UNAVAILABLE),
        (500, INTERNAL_ERROR),
        (502, INTERNAL_ERROR),
    ],
)
def test_a_status_has_one_code_on_every_door(status: int, code: int) -> None:
    hosted = orjson.loads(rpc_error_body(status, "x", "what happened"))["error"]["code"]
    refused = RsStatusError.from_body(status, {"error": {"code": "x", "message": "m"}}, None)
    assert hosted == protocol_error(tool_error(refused)).code == code


@pytest.mark.parametrize("status", [400, 409, 422, 413])
def test_a_caller_mistake_is_named_by_the_door(status: int) -> None:
    assert for_status(status, caller_fault=INVALID_REQUEST) == INVALID_REQUEST
    refused = RsStatusError.from_body(status, {"error": {"code": "x", "message": "m"}}, None)
    assert protocol_error(tool_error(refused)).code == INVALID_PARAMS  # a resource read: fix the URI


def test_an_rs_that_cannot_answer_now_is_try_again_shortly() -> None:
    assert protocol_error(tool_error(RsUnavailableError("connection refused"))).code == UNAVAILABLE
    assert protocol_error(tool_error(RsTimeoutError(TimeoutPhase.READ, 10.0))).code == UNAVAILABLE


def test_the_json_rpc_codes_are_the_sdks() -> None:
    assert (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR) == (
        types.PARSE_ERROR,
        types.INVALID_REQUEST,
        types.INVALID_PARAMS,
        types.INTERNAL_ERROR,
    )


@given(status=st.integers(min_value=400, max_value=599))
def test_any_status_has_one_code_on_every_door(status: int) -> None:
    """The hosted door's refusal and a resource read's error carry the table's code for any
    status; they differ only on a caller's mistake not in the table, each naming its own."""
    hosted = orjson.loads(rpc_error_body(status, "x", "what happened"))["error"]["code"]
    refused = RsStatusError.from_body(status, {"error": {"code": "x", "message": "m"}}, None)
    read = protocol_error(tool_error(refused)).code
    assert hosted == for_status(status, caller_fault=INVALID_REQUEST)
    assert read == for_status(status, caller_fault=INVALID_PARAMS)
    assert hosted == read or (status < 500 and status not in BY_STATUS)
