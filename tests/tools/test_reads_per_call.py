"""One RS read per tool call in steady state: what a grant holds (a stream's connections, its
expand capabilities) is learned once per caller and kept at most a minute (``rs.memo``).

Counted at a real sandbox RS. The exceptions, listed in the README with their count: a
binary field's projected re-read (``read_record_field`` on a blob: two), a package's fan-out
(one read per member asked), and the fetch of a mail's message, which finds its body (the
message, a search of the body stream by the snippet's words, the body: three). A thread's head's
fetch reads its parts' page too (two: pinned in ``test_thread_fetch``).
"""

from __future__ import annotations

from typing import Any

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.sandbox_fixtures import set_grant_status

JOURNEY = [
    ("schema", {}),
    ("schema", {"stream": "messages"}),
    ("query_records", {"stream": "messages", "limit": 3}),  # merges both mail connections
    (
        "query_records",
        {"stream": "messages", "limit": 2, "connection_id": "cin_mail_work", "expand": ["message_bodies"]},
    ),
    ("aggregate", {"stream": "messages", "metric": "count"}),  # merges: its connections noted
    ("aggregate", {"stream": "messages", "metric": "count", "connection_id": "cin_mail_work"}),
    ("search", {"query": "invoice", "mode": "lexical", "limit": 3}),  # unpinned: words and meaning
    ("fetch", {"id": "cin_mail_work/messages:{id}"}),  # a message: its body is found (below)
    ("read_record_field", {"id": "cin_mail_work/messages:{id}", "field": "subject"}),
]
MESSAGE_FETCH = ["/v1/streams/messages/records/{id}", "/v1/search", "/v1/streams/message_bodies/records/"]


async def test_every_tool_reads_the_rs_once_per_call_in_steady_state(shared_sandbox: Any) -> None:
    pipeline = build_pipeline()
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        first = {"stream": "messages", "connection_id": "cin_mail_work", "limit": 1}
        page = await pipeline(ToolCall("query_records", first, context))
        record_id = page.structured["data"]["data"][0]["id"]
        journey = [
            (tool, {k: v.format(id=record_id) if k == "id" else v for k, v in arguments.items()})
            for tool, arguments in JOURNEY
        ]
        for tool, arguments in journey:  # the first round learns what the grant holds
            await pipeline(ToolCall(tool, arguments, context))
        for tool, arguments in journey:
            shared_sandbox.calls.clear()
            result = await pipeline(ToolCall(tool, arguments, context))
            assert not result.is_error, (tool, result.text)
            paths = [call.path for call in shared_sandbox.calls]
            if tool == "fetch":
                assert len(paths) == len(MESSAGE_FETCH), paths
                for path, expected in zip(paths, MESSAGE_FETCH, strict=True):
                    assert path.startswith(expected.format(id=record_id)), paths
                assert result.structured["metadata"]["body_id"].startswith("cin_mail_work/message_bodies:")
                continue
            assert len(paths) == 1, (tool, arguments, paths)


async def test_a_refusal_drops_what_the_memo_knew_of_that_caller_only(shared_sandbox: Any) -> None:
    pipeline = build_pipeline()
    count = ("aggregate", {"stream": "messages", "metric": "count"})
    async with RsClient(shared_sandbox.url) as rs:
        broad = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url)
        narrow = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_narrow"]), shared_sandbox.url
        )
        await pipeline(ToolCall(*count, broad))
        refused = await pipeline(ToolCall("query_records", {"stream": "repositories"}, narrow))
        assert refused.is_error  # another caller's 401 ...
        shared_sandbox.calls.clear()
        await pipeline(ToolCall(*count, broad))
        assert len(shared_sandbox.calls) == 1  # ... leaves this caller's memo as it was
        set_grant_status(shared_sandbox, "client_broad", "revoked")
        try:
            assert (await pipeline(ToolCall(*count, broad))).is_error  # 403: the grant changed
            set_grant_status(shared_sandbox, "client_broad", "active")
            shared_sandbox.calls.clear()
            await pipeline(ToolCall(*count, broad))
            assert [call.path for call in shared_sandbox.calls].count("/v1/schema") == 1  # learned again
        finally:
            set_grant_status(shared_sandbox, "client_broad", "active")


def test_only_a_changed_grant_drops_the_memo() -> None:
    from pdpp_gateway.rs.memo import grant_changed

    assert grant_changed(401, "context.active_false")  # the token is no longer good
    assert grant_changed(403, "grant_revoked")
    assert grant_changed(403, "grant_expired")
    assert not grant_changed(401, "context.stream_not_allowed")  # asked outside the grant
    assert not grant_changed(403, "field_not_granted")
    assert not grant_changed(404, "not_found")
