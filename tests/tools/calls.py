"""One tool call through the gateway's pipeline against the sandbox RS, as a client grant."""

from __future__ import annotations

from typing import Any

from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline


async def call_tool(
    sandbox: Any, tool: str, arguments: dict[str, Any], token: str = "client_broad"
) -> ToolResult:
    """``tool`` called with ``arguments`` by the grant of ``token``, the sandbox's log of RS calls
    cleared first; an error answer fails the test."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens[token]), sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall(tool, arguments, context))
    assert not result.is_error, result.text
    return result


def without_words_apart(monkeypatch: Any) -> None:
    """Turn off the search of a pair's words one by one (``retrieval.fused``), for a test of a
    step that answers when the lexical list is empty (the mail body search, a fold)."""
    from pdpp_gateway.retrieval import fused

    async def _none(*_: Any) -> None:
        return None

    monkeypatch.setattr(fused, "_words_apart", _none)
