"""The one conversion of an upstream failure into a tool error, and the step each code gets.

Each kind of ``RsError`` becomes the wire's envelope (type, code, message stating the
facts, extras ``http_status``/``request_id``), the breaker's wait becomes whole seconds in
``retry_after_seconds`` and then ``_meta`` through the real SDK client, and the advice a
model reads comes from ``next_step`` once, never from the message.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from mcp import Client

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.render.errors import next_step
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import RsBlob, RsResponse
from pdpp_gateway.rs.errors import (
    RsError,
    RsProtocolError,
    RsStatusError,
    RsTimeoutError,
    RsUnavailableError,
    TimeoutPhase,
)
from pdpp_gateway.server import RETRY_AFTER_META, build_server

RS_ENVELOPE = {
    "type": "invalid_request_error",
    "code": "ambiguous_connection",
    "message": "pick one",
    "available_connections": [{"connection_id": "cin_a"}],
    "retry_with": "connection_id",
}


@pytest.mark.parametrize(
    ("error", "code", "says", "extra"),
    [
        (RsTimeoutError(TimeoutPhase.CONNECT, 5), "upstream_timeout", "within 5 s (connecting)", {}),
        (RsTimeoutError(TimeoutPhase.READ, 0.5), "upstream_timeout", "within 0.5 s (waiting for data)", {}),
        (RsTimeoutError(TimeoutPhase.TOTAL, 30), "upstream_timeout", "within 30 s (whole request)", {}),
        (
            RsUnavailableError("cannot connect to it (connection refused)"),
            "upstream_unavailable",
            "unavailable: cannot connect to it (connection refused).",
            {},
        ),
        (
            RsUnavailableError("it kept failing after retries", status=503, upstream_code="maintenance"),
            "upstream_unavailable",
            "(last answer: HTTP 503 maintenance)",
            {"http_status": 503},
        ),
        (
            RsProtocolError("the body is not JSON"),
            "upstream_malformed_response",
            "unusable answer: the body is not JSON.",
            {},
        ),
    ],
)
def test_each_gateway_worded_kind_states_the_facts_and_no_advice(
    error: RsError, code: str, says: str, extra: dict[str, Any]
) -> None:
    converted = tool_error(error)
    assert converted.envelope["type"] == "api_error"
    assert converted.code == error.code == code
    assert says in converted.envelope["message"]
    assert "retry" not in converted.envelope["message"].lower()  # advice is the next step's
    assert converted.extra == extra
    assert "retry_after_seconds" not in converted.envelope
    assert next_step(converted.envelope, extra.get("http_status"))


def test_an_rs_status_keeps_its_envelope_whole_with_status_and_request_id() -> None:
    error = RsStatusError(409, RS_ENVELOPE, "req_9")
    converted = tool_error(error)
    assert converted.envelope == RS_ENVELOPE
    assert converted.extra == {"http_status": 409, "request_id": "req_9"}
    assert tool_error(RsStatusError(500, {**RS_ENVELOPE, "request_id": "req_body"}, None)).extra == {
        "http_status": 500,
        "request_id": "req_body",  # the envelope's own, when no header named one
    }


@pytest.mark.parametrize("wait", [0.2, 1.0, 7.01])
def test_a_held_back_call_says_when_in_whole_seconds(wait: float) -> None:
    error = RsUnavailableError(
        "5 of its last 5 answers to such calls failed, so the gateway is holding them back", retry_after=wait
    )
    converted = tool_error(error)
    seconds = math.ceil(wait)
    assert converted.envelope["retry_after_seconds"] == seconds
    assert converted.extra == {}
    assert next_step(converted.envelope, None) == (
        f"Retry in {seconds} s; calling sooner fails the same way."
    )


@pytest.mark.parametrize(
    ("code", "step"),
    [
        ("upstream_timeout", "narrow the request"),
        ("upstream_unavailable", "retry later"),
        ("upstream_malformed_response", "report it to the provider"),
    ],
)
def test_each_upstream_code_has_its_own_step(code: str, step: str) -> None:
    assert step in str(next_step({"code": code}, None))


class _HeldBack:
    """A reader whose every read meets an open circuit breaker."""

    def __init__(self, wait: float) -> None:
        self.wait = wait

    async def get_json(self, path: str, query: Any = ()) -> RsResponse:
        raise RsUnavailableError("the gateway is holding calls back", retry_after=self.wait)

    async def get_bytes(self, path: str, query: Any = (), *, max_bytes: int) -> RsBlob:
        raise RsUnavailableError("the gateway is holding calls back", retry_after=self.wait)


async def test_a_tool_call_held_back_carries_the_wait_in_meta_and_text() -> None:
    context = GatewayContext.for_client(_HeldBack(2.5), "http://rs.example")
    async with Client(build_server(lambda _ctx: context)) as client:  # type: ignore[arg-type]
        result = await client.call_tool("query_records", {"stream": "messages", "limit": 1})
    assert result.is_error
    assert result.meta is not None
    assert result.meta[RETRY_AFTER_META] == 3
    lines = result.content[0].text.splitlines()  # type: ignore[union-attr]
    assert (
        lines[0]
        == "Error upstream_unavailable: The resource server is unavailable: the gateway is holding calls back."
    )
    assert lines[1] == "Retry in 3 s; calling sooner fails the same way."
