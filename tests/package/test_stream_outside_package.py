"""A stream that no member of a package grants is refused as one grant's RS refuses it: the stream
is not in this grant, ``schema()`` lists what is; never ``ambiguous_connection`` listing every
connection (whose retry cannot work), and without any RS read. A resource read of a stream
outside a grant says the same, not the RS's "Token introspection failed closed".
"""

from __future__ import annotations

from typing import Any

from mcp_gateway_middleware import ToolCall, ToolError

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.resources import answers as resource_answers
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import mail_and_chat

NOT_SHARED = 'Stream "top_artists" is not in this grant: the person did not share it with this app'


async def test_a_stream_no_member_grants_is_refused_as_one_grant_refuses_it(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = mail_and_chat(rs, rs, shared_sandbox.tokens, shared_sandbox.url)
        shared_sandbox.calls.clear()
        records = await build_pipeline()(ToolCall("query_records", {"stream": "top_artists"}, context))
        counted = await build_pipeline()(
            ToolCall("aggregate", {"stream": "top_artists", "metric": "count"}, context)
        )
        try:
            await resource_answers.run(context, "pdpp://stream/top_artists")
        except ToolError as error:
            refused = resource_answers.error_object(error, "pdpp://stream/top_artists", modern=False)
    assert shared_sandbox.calls == []  # decided from the package's own grants
    for result in (records, counted):
        assert result.is_error
        assert result.structured["error"]["code"] == "context.stream_not_allowed"
        assert "ambiguous_connection" not in result.text
        assert NOT_SHARED in result.text
        assert "call schema() for the granted streams" in result.text
    assert refused["message"].startswith(f"context.stream_not_allowed: {NOT_SHARED}")
    assert "call schema() for the granted streams" in refused["message"]


async def test_a_resource_read_outside_one_grant_has_the_tool_error_s_words(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_work_mail"]), shared_sandbox.url
        )
        tool = await build_pipeline()(ToolCall("query_records", {"stream": "top_artists"}, context))
        try:
            await resource_answers.run(context, "pdpp://stream/top_artists")
        except ToolError as error:
            refused = resource_answers.error_object(error, "pdpp://stream/top_artists", modern=True)
    assert NOT_SHARED in tool.text
    assert refused["message"].startswith(f"context.stream_not_allowed: {NOT_SHARED}")
    assert "Token introspection failed closed" not in refused["message"]
