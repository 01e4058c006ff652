"""What a model reading only content[] needs beyond the evidence ladder: the whole record
on fetch, whole rows when they fit, and errors that say how to fix the call.

The SDK client → ``pdpp-gateway stdio`` → the sandbox RS over HTTP, in both eras.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from mcp import Client

pytestmark = pytest.mark.asyncio(loop_scope="module")
SLACK = "cin_slack_acme"


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[Any, str]:
    result = await client.call_tool(tool, arguments)
    return result, result.content[0].text  # type: ignore[union-attr]


async def test_fetch_text_carries_the_other_fields_of_the_record(stdio_gateway: Client) -> None:
    page, _ = await _call(stdio_gateway, "query_records", stream="messages", connection_id=SLACK, limit=1)
    record = page.structured_content["data"]["data"][0]
    result, text = await _call(stdio_gateway, "fetch", id=f"{SLACK}/messages:{record['id']}")
    assert not result.is_error, text
    document = orjson.loads(text)  # content[] mirrors the document
    assert document["text"] == record["data"]["text"]
    # "which channel, who wrote it" answerable from the fetched document itself
    assert document["metadata"]["data.channel_id"] == record["data"]["channel_id"]
    assert document["metadata"]["data.user_name"] == record["data"]["user_name"]
    assert "data.text" not in document["metadata"]  # the main text is not repeated


async def test_fetch_fields_narrow_the_metadata_too(stdio_gateway: Client) -> None:
    page, _ = await _call(stdio_gateway, "query_records", stream="messages", connection_id=SLACK, limit=1)
    record_id = page.structured_content["data"]["data"][0]["id"]
    _, text = await _call(
        stdio_gateway, "fetch", id=f"{SLACK}/messages:{record_id}", fields=["text", "user_name"]
    )
    metadata = orjson.loads(text)["metadata"]
    assert [key for key in metadata if key.startswith("data.")] == ["data.user_name"]


async def test_small_narrow_rows_are_all_shown_in_full(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "query_records", stream="pay_statements", fields=["issued_at", "net_amount"], limit=18
    )
    records = result.structured_content["data"]["data"]
    assert len(records) == 18
    for record in records:  # every amount is in the text, not only the first five
        assert re.search(rf":{record['id']} \{{[^\n]*\"net_amount\":{record['data']['net_amount']}", text), (
            record
        )
    assert "one line" not in text


async def test_a_field_error_on_a_shared_stream_name_points_to_connection_id(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "aggregate", stream="messages", metric="count", filter={"is_seen": False}
    )
    assert result.is_error
    assert "pass that source's connection_id" in text


async def test_a_refused_filter_shows_the_filter_shapes(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway,
        "query_records",
        stream="pay_statements",
        filter={"net_amount": {"gte": "lots"}},
    )
    assert result.is_error
    assert '{"field": {"gte"|"gt"|"lte"|"lt": value}}' in text


async def test_each_tool_argument_error_gets_that_tool_s_hint(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "read_record_field", id="cin_mail_work/messages:m1", field="a/b"
    )
    assert result.is_error
    assert "top-level field of the record" in text
    assert "metric" not in text  # aggregate's hint for its own field argument
    result, text = await _call(stdio_gateway, "aggregate", stream="messages", metric="sum", field="a/b")
    assert result.is_error
    assert "include this metric" in text
