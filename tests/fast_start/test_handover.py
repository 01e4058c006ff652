"""The hand-over's outbound side: the SDK's answers to early-answered requests are not written
twice, and one that differs from what was written early is reported."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse
from mcp_gateway_middleware.sdk_stdio import drain_on_eof

from pdpp_gateway.fast_start.answers import Answer
from pdpp_gateway.fast_start.wire import EarlyAnswers
from pdpp_gateway.stdio import answered_early


def response(request_id: int, result: dict[str, object]) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result))


async def written_through(early: EarlyAnswers, replies: list[SessionMessage]) -> list[SessionMessage]:
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](8)
    async with read_receive, write_receive:
        async with drain_on_eof(read_receive, write_send, written=answered_early(early)) as (
            inbound,
            outbound,
        ):
            async with inbound, outbound:
                for reply in replies:
                    await outbound.send(reply)
            await read_send.aclose()
        return [item async for item in write_receive]


async def test_answers_given_early_are_not_written_again_and_differences_are_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    early = EarlyAnswers()
    same = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    early.add(Answer(id_key="1", method="ping", frame=same))
    early.add(
        Answer(id_key="2", method="tools/list", frame=b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n')
    )
    assert not early.settled.is_set()
    written = await written_through(early, [response(1, {}), response(2, {"tools": ["x"]}), response(3, {})])
    assert [item.message.id for item in written] == [3]  # type: ignore[union-attr]
    assert early.settled.is_set()
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1
    assert "tools/list" in errors[0]
