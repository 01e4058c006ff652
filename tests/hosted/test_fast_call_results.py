"""The fast path's writing of results the pipeline does not usually make, against the SDK.

The pipeline's results are plain JSON types; these are not (a datetime, a tuple, a str
subclass, a structured value that is not an object, a ``True`` retry hint, a non-string
key, an integer orjson cannot write). For each, the endpoint with the fast path must
answer what it answers without it (the SDK's ``serve_one``): the same status, bytes,
``Retry-After`` and metrics outcome, or the same failure.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from mcp_gateway_middleware import ToolCall, ToolResult
from mcp_types import DEFAULT_NEGOTIATED_VERSION

from pdpp_gateway.hosted.fast_call import FastToolCall
from pdpp_gateway.hosted.inbound import INBOUND, Inbound, parse_inbound
from pdpp_gateway.hosted.transport import MCP_OUTCOME, McpEndpoint
from pdpp_gateway.server import build_server

V2026 = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": V2026,
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Kind(enum.StrEnum):
    LETTER = "letter"


class Label(str):
    pass


RESULTS = {
    "datetime": ToolResult({"at": datetime(2026, 5, 1, 12, 30, tzinfo=UTC)}, "t"),
    "tuple": ToolResult({"pair": (1, "two")}, "t"),
    "str enum": ToolResult({"kind": Kind.LETTER}, "t"),
    "str subclass": ToolResult({"label": Label("x")}, "t"),
    "no text": ToolResult({"n": 1}, None),
    "retry hint True": ToolResult({"error": {"retry_after_seconds": True}}, "Error", is_error=True),
    "retry hint 3": ToolResult({"error": {"retry_after_seconds": 3}}, "Error", is_error=True),
    "structured a list": ToolResult([1, 2], "t"),  # type: ignore[arg-type]
    "integer key": ToolResult({"counts": {1: "one"}}, "t"),
    "top-level integer key": ToolResult({1: "one"}, "t"),  # type: ignore[dict-item]
    "not JSON at all": ToolResult({"thing": object()}, "t"),
    "integer beyond 64 bits": ToolResult({"n": 2**70}, "t"),
}


Answer = tuple[int, bytes, str | None, str] | str


async def answer(endpoint: McpEndpoint, era: str) -> Answer:
    """What ``POST /mcp`` answers for a ``schema`` call: status, body, Retry-After and the
    metrics outcome, or the exception that would make aiohttp answer 500."""
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    params: dict[str, Any] = {"name": "schema", "arguments": {}}
    if era == V2026:
        headers |= {"MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call", "Mcp-Name": "schema"}
        params["_meta"] = ENVELOPE
    request = make_mocked_request("POST", "/mcp", headers=headers)
    inbound = parse_inbound(
        orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}), request
    )
    assert isinstance(inbound, Inbound)
    request[INBOUND] = inbound
    try:
        response = await endpoint.post(request)
    except Exception as error:
        return f"raised {type(error).__name__}"
    assert isinstance(response, web.Response)
    assert isinstance(response.body, bytes)
    return response.status, response.body, response.headers.get("Retry-After"), request[MCP_OUTCOME]


@pytest.mark.parametrize("era", ["handshake", V2026])
@pytest.mark.parametrize("case", RESULTS)
async def test_unusual_results_are_answered_as_the_sdk_answers_them(case: str, era: str) -> None:
    async def pipeline(call: ToolCall[Any]) -> ToolResult:
        return RESULTS[case]

    server = build_server(lambda ctx: None, pipeline=pipeline)  # type: ignore[arg-type, return-value]
    fast = FastToolCall(server, pipeline, lambda request: None)  # type: ignore[arg-type, return-value]
    version = V2026 if era == V2026 else DEFAULT_NEGOTIATED_VERSION
    params = {"name": "schema", "arguments": {}, **({"_meta": ENVELOPE} if era == V2026 else {})}
    assert fast.match({"method": "tools/call", "params": params}, version) is not None
    expected = await answer(McpEndpoint(server, {}), era)
    assert await answer(McpEndpoint(server, {}, fast), era) == expected
    if case == "structured a list" and era != V2026:  # 2026 allows any JSON value there
        assert isinstance(expected, tuple)
        assert b'"code":-32603' in expected[1]
    if case == "not JSON at all":  # the SDK cannot shape it: an internal error, not a 500
        assert isinstance(expected, tuple)
        assert b'"error":{"code":-32603' in expected[1]
    if case == "integer beyond 64 bits":
        assert expected == "raised TypeError"  # orjson cannot write it: aiohttp answers 500 either way
