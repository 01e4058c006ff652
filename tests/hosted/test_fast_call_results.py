"""The fast path's writing of results the pipeline does not usually make, against the SDK.

The pipeline's results are plain JSON types; these are not (a datetime, a tuple, a str
subclass, a structured value that is not an object, a ``True`` retry hint). For each,
the fast path (``FastToolCall.run`` + ``encode``) must write what the SDK's
``serve_one`` writes for the same server, or fail the way it fails.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION

from middleware import ToolCall, ToolResult
from pdpp_gateway.hosted.fast_call import FastToolCall
from pdpp_gateway.hosted.transport import _Exchange
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
}


async def sdk_answer(server: Any, params: dict[str, Any], version: str) -> bytes:
    modern = version == V2026
    exchange = _Exchange(
        transport=TransportContext(kind="streamable-http", can_send_request=False, headers={}),
        request_id=1,
        message_metadata=ServerMessageMetadata(request_context=None),
    )
    connection = Connection.from_envelope(version, None, {} if modern else None)
    try:
        result = await serve_one(
            server, exchange, "tools/call", params, connection=connection, lifespan_state={}
        )
    except Exception as error:
        return f"raised {type(error).__name__}".encode()
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result})


async def fast_answer(fast: FastToolCall, params: dict[str, Any], version: str) -> bytes:
    call = fast.match({"method": "tools/call", "params": params}, version)
    assert call is not None
    try:
        result, source = await fast.run(None, call)  # type: ignore[arg-type]
    except Exception as error:
        return f"raised {type(error).__name__}".encode()
    return fast.encode({"jsonrpc": "2.0", "id": 1, "result": result}, source, call)


@pytest.mark.parametrize("version", [DEFAULT_NEGOTIATED_VERSION, V2026])
@pytest.mark.parametrize("case", RESULTS)
async def test_unusual_results_are_written_as_the_sdk_writes_them(case: str, version: str) -> None:
    async def pipeline(call: ToolCall[Any]) -> ToolResult:
        return RESULTS[case]

    server = build_server(lambda ctx: None, pipeline=pipeline)  # type: ignore[arg-type, return-value]
    fast = FastToolCall(server, pipeline, lambda request: None)  # type: ignore[arg-type, return-value]
    params: dict[str, Any] = {"name": "schema", "arguments": {}}
    if version == V2026:
        params["_meta"] = ENVELOPE
    expected = await sdk_answer(server, params, version)
    assert await fast_answer(fast, params, version) == expected
    if case == "structured a list" and version != V2026:  # 2026 allows any JSON value there
        assert expected == b"raised " + MCPError.__name__.encode()
