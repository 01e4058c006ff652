"""``wire.envelope``: the names, the 2026-07-28 completion and stamp, and the exception
answer, each as the SDK writes them.

- The names are the SDK's own (``mcp_types``).
- ``stamped`` stamps any sieved 2026-era result (``_meta`` absent, empty, the handler's
  own, a server already named, or an explicit ``null`` stamp) as the SDK's runner does:
  the same bytes as the real SDK answering a handler that returns it.
- ``handler_error`` in a ``frame`` is what the SDK writes over stdio for an exception out
  of a handler, for any message, in both eras (the early path's answer to a call that
  raised: ``{"code": 0, "message": <its text>}`` in the handshake era, ``-32603`` without
  its text in the 2026-07-28 era).
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import mcp_types
from hypothesis import given
from hypothesis import strategies as st
from mcp.server import Server, ServerRequestContext
from mcp_gateway_middleware import ToolCall, ToolResult
from mcp_types import methods as sdk_methods

from pdpp_gateway.server import build_server
from pdpp_gateway.wire.codes import HANDLER_EXCEPTION
from pdpp_gateway.wire.envelope import SERVER_INFO_META_KEY, frame, handler_error, stamped
from pdpp_gateway.wire.json_bytes import encode
from tests.wire.sdk import JSON_VALUES, REQUEST_ID, V2026, sdk_answer

METAS = st.none() | st.dictionaries(
    st.sampled_from(["io.example/x", "dev.pdpp/retry_after_seconds", SERVER_INFO_META_KEY]),
    JSON_VALUES,
    max_size=3,
)


def test_the_names_are_the_sdks() -> None:
    assert SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY
    assert HANDLER_EXCEPTION == 0


@given(meta=METAS, text=st.text())
def test_a_2026_result_is_stamped_as_the_runner_stamps_it(meta: dict[str, Any] | None, text: str) -> None:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
    if meta is not None:
        result["_meta"] = meta

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> dict[str, Any]:
        return result

    server: Server = Server("oracle", on_call_tool=call_tool)
    sieved = sdk_methods.serialize_server_result("tools/call", V2026, result)
    body = encode(stamped(sieved, server.server_info_stamp))
    assert body is not None
    sdk = sdk_answer(server, "tools/call", {"name": "t"}, modern=True)
    assert frame(str(REQUEST_ID), b"result", body) == sdk


@given(message=st.text(), modern=st.booleans())
def test_an_exception_out_of_a_handler_is_answered_as_the_sdk_answers_it(message: str, modern: bool) -> None:
    exception = RuntimeError(message)

    async def pipeline(call: ToolCall[Any]) -> ToolResult:
        raise exception

    server = build_server(lambda ctx: None, pipeline=pipeline)  # type: ignore[arg-type, return-value]
    body = encode(handler_error(exception, modern=modern))
    assert body is not None
    sdk = sdk_answer(server, "tools/call", {"name": "schema", "arguments": {}}, modern=modern)
    assert frame(str(REQUEST_ID), b"error", body) == sdk
