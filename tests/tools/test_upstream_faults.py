"""Upstream faults become bounded, honest tool errors, seen through the SDK's real client.

A recording proxy in front of the real sandbox RS injects one fault into every read
(``tests.upstreams.Fault``): a stall, a 500, a 503, a reset connection, malformed JSON,
an HTML page, an oversized body, a body cut short. For each, in both protocol eras,
the test asserts what the client sees (an ``isError`` result whose first line is the
typed error with the real bound or cause, then the next step), that the answer came
within the fault's time bound, what the RS was sent (retries only where they are
allowed), that nothing was logged at ERROR level, and that the next call, once the
upstream recovers, succeeds on the same pooled client. A resource read meeting the same
fault fails with the same code and the same next step as the tool call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.resources.answers import MAX_ERROR_MESSAGE
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.policy import RsTimeouts
from pdpp_gateway.server import build_server
from tests.conftest import ERAS
from tests.strict_client import error_of
from tests.upstreams import Fault, Switchboard

TIMEOUTS = RsTimeouts(connect=1.0, read=0.5, total=2.0)
MAX_BODY = 1024 * 1024
CALL = ("query_records", {"stream": "pay_statements", "limit": 2})


@dataclass(frozen=True)
class Expected:
    fault: Fault
    code: str | None  # None: the RS's own code, relayed with its status
    says: str  # in the first line of the text
    seconds: float  # the answer comes within this
    sends: tuple[int, int]  # how many times the RS saw the read (min, max)


CASES = {
    "stall": Expected(
        Fault("delay", 3.0), "upstream_timeout", "within 0.5 s (waiting for data)", 1.5, (1, 1)
    ),
    "http_500": Expected(Fault("status", 500), None, "(HTTP 500)", 1.0, (1, 1)),
    "http_503": Expected(Fault("status", 503), "upstream_unavailable", "last answer: HTTP 503", 2.0, (3, 3)),
    "reset": Expected(Fault("reset"), "upstream_unavailable", "resource server", 2.0, (1, 6)),
    "malformed_json": Expected(Fault("malformed"), "upstream_malformed_response", "not JSON", 1.0, (1, 1)),
    "html": Expected(Fault("html"), "upstream_malformed_response", "not JSON", 1.0, (1, 1)),
    "oversized": Expected(
        Fault("oversized", 2 * MAX_BODY),
        "upstream_malformed_response",
        f"larger than {MAX_BODY}",
        1.0,
        (1, 1),
    ),
    "cut_short": Expected(Fault("truncated"), "upstream_unavailable", "cut off", 2.0, (1, 6)),
}


@pytest_asyncio.fixture
async def board(shared_sandbox: Any) -> AsyncIterator[Switchboard]:
    switchboard = Switchboard(shared_sandbox.url)
    async with switchboard.serve():
        yield switchboard


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("case", sorted(CASES))
async def test_an_upstream_fault_is_a_bounded_typed_error(
    board: Switchboard, shared_sandbox: Any, caplog: pytest.LogCaptureFixture, case: str, era: str
) -> None:
    expected = CASES[case]
    async with RsClient(board.url, timeouts=TIMEOUTS, max_body_bytes=MAX_BODY) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), board.url)
        async with Client(build_server(lambda _ctx: context), mode=era) as client:  # type: ignore[arg-type]
            board.fault = expected.fault
            caplog.set_level(logging.INFO)
            started = time.perf_counter()
            result = await client.call_tool(*CALL)
            elapsed = time.perf_counter() - started
            assert elapsed < expected.seconds, elapsed
            error = error_of(result)
            first = error["text"].splitlines()[0]
            if expected.code is not None:
                assert error["code"] == expected.code
            assert expected.says in first, first
            assert len(error["text"]) < 1_200
            assert len(error["text"].splitlines()) >= 2  # then the next step
            low, high = expected.sends
            assert low <= len(board.data_reads()) <= high, board.lines()
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]

            board.fault = None
            recovered = await client.call_tool(*CALL)
            assert not recovered.is_error, recovered.content


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_resource_read_and_a_tool_call_of_one_fault_say_the_same(
    board: Switchboard, shared_sandbox: Any, case: str
) -> None:
    expected = CASES[case]
    async with RsClient(board.url, timeouts=TIMEOUTS, max_body_bytes=MAX_BODY) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), board.url)
        async with Client(build_server(lambda _ctx: context), mode=ERAS[0]) as client:  # type: ignore[arg-type]
            board.fault = expected.fault
            tool = error_of(await client.call_tool(*CALL))
            with pytest.raises(MCPError) as caught:
                await client.read_resource("pdpp://stream/pay_statements")
    read = caught.value.error
    assert read.data is not None
    assert read.data["code"] == tool["code"]
    step = tool["text"].splitlines()[1]
    assert read.message.endswith(step), (read.message, step)
    assert len(read.message) <= MAX_ERROR_MESSAGE
