"""``wire.call_result`` writes a tool call's result with the SDK's bytes, in both eras.

For any result the pipeline makes (plain JSON data: a text, structured content, an error
with or without a retry hint), the frame both fast paths write (``envelope.frame`` around
``json_bytes.encode(call_result.result_wire(...))``, the early path over stdio; the hosted
fast path writes the same ``result``) is the frame the real SDK writes when the gateway's
own ``call_tool`` handler (``server.build_server``) returns it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.server import build_server
from pdpp_gateway.wire.call_result import RETRY_AFTER_META, result_wire
from pdpp_gateway.wire.envelope import frame
from pdpp_gateway.wire.json_bytes import encode
from tests.wire.sdk import JSON_OBJECTS, REQUEST_ID, sdk_answer

NAME = "oracle gateway ✓"
RETRY_HINTS = st.integers(min_value=0, max_value=2**31) | st.none() | st.booleans() | st.text(max_size=3)
RESULTS = st.builds(
    ToolResult, structured=JSON_OBJECTS, text=st.text() | st.none(), is_error=st.booleans()
) | st.builds(
    lambda rest, wait, text: ToolResult(
        {**rest, "error": {"retry_after_seconds": wait}}, text, is_error=True
    ),
    JSON_OBJECTS,
    RETRY_HINTS,
    st.text(),
)


def _sdk(result: ToolResult, *, modern: bool) -> bytes:
    async def pipeline(call: ToolCall[Any]) -> ToolResult:
        return result

    server = build_server(lambda ctx: None, name=NAME, pipeline=pipeline)  # type: ignore[arg-type, return-value]
    return sdk_answer(server, "tools/call", {"name": "schema", "arguments": {}}, modern=modern)


@given(result=RESULTS, modern=st.booleans())
def test_a_result_is_written_with_the_sdks_bytes(result: ToolResult, modern: bool) -> None:
    stamp = build_server(lambda ctx: None, name=NAME).server_info_stamp  # type: ignore[arg-type, return-value]
    wire = result_wire(result, modern=modern, stamp=stamp)
    assert wire is not None
    body = encode(wire)
    assert body is not None
    assert frame(str(REQUEST_ID), b"result", body) == _sdk(result, modern=modern)


def test_a_retry_hint_is_carried_in_meta() -> None:
    """What the bytes above compare when an error is worth retrying later."""
    result = ToolResult({"error": {"retry_after_seconds": 30}}, "Error upstream_unavailable", is_error=True)
    body = encode(result_wire(result, modern=False, stamp=None))
    assert body is not None
    assert body.startswith(b'{"_meta":{"' + RETRY_AFTER_META.encode() + b'":30},"content":')
    assert frame(str(REQUEST_ID), b"result", body) == _sdk(result, modern=False)
