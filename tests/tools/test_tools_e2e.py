"""The six tools end to end: the SDK client → ``pdpp-gateway stdio`` → the sandbox RS over HTTP.

Each test runs in both protocol eras (the ``stdio_gateway`` fixture is parametrized).
The SDK client checks every successful ``structuredContent`` against the tool's
``outputSchema``, so shape regressions fail here too. Data is discovered through the
tools themselves (schema → records → search) rather than hard-coded.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

import orjson
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from tests.strict_client import error_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOOL_NAMES = ["schema", "query_records", "aggregate", "search", "fetch", "read_record_field"]


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    part = result.content[0]
    assert part.type == "text"
    return part.text


async def call(client: Client, tool: str, **arguments: Any) -> tuple[CallToolResult, str]:
    result = await client.call_tool(tool, arguments)
    return result, text_of(result)


def rs_calls(sandbox: Any, path_part: str = "") -> list[Any]:
    return [c for c in sandbox.calls if path_part in str(getattr(c, "path", c))]


def query_of(record: Any) -> list[tuple[str, str]]:
    raw = getattr(record, "query", None)
    if raw is None and isinstance(record, dict):
        raw = record.get("query")
    if isinstance(raw, str):
        return parse_qsl(raw, keep_blank_values=True)
    return list(raw or [])


# --- tools/list ----------------------------------------------------------------------


async def test_tool_list_is_the_six_read_tools_within_budget(stdio_gateway: Client) -> None:
    listed = await stdio_gateway.list_tools()
    assert [tool.name for tool in listed.tools] == TOOL_NAMES
    wire = orjson.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert len(wire) < 12_000, len(wire)
    assert b"connector_instance_id" not in wire
    for tool in listed.tools:
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert "hidden" not in (tool.description or "").lower()
    by_name = {tool.name: tool for tool in listed.tools}
    for name in ("query_records", "aggregate", "search"):
        filter_schema = by_name[name].input_schema["properties"]["filter"]
        assert filter_schema["type"] == "object"
        assert "anyOf" not in filter_schema
        assert "oneOf" not in filter_schema
        assert "gte" in orjson.dumps(filter_schema["additionalProperties"]).decode()
    assert "other_count" in (by_name["aggregate"].description or "")
    assert set(by_name["search"].input_schema["required"]) == {"query"}
    assert set(by_name["fetch"].input_schema["required"]) == {"id"}
    # connection_id recovery guidance is said once (instructions), not repeated per tool
    descriptions = [
        tool.input_schema["properties"].get("connection_id", {}).get("description", "")
        for tool in listed.tools
    ]
    assert all(len(d) < 80 for d in descriptions)


async def test_instructions_front_load_the_usage_pattern(stdio_gateway: Client) -> None:
    head = (stdio_gateway.instructions or "")[:512]
    for needle in ("schema", "connection_id", "filter", "next_cursor"):
        assert needle in head
    assert "owner" not in (stdio_gateway.instructions or "").lower()


# --- schema ----------------------------------------------------------------------------


async def test_global_schema_is_an_index_with_every_stream_name_visible(stdio_gateway: Client) -> None:
    result, text = await call(stdio_gateway, "schema")
    assert not result.is_error
    document = result.structured_content["data"]  # directly under data, never data.data
    assert "connectors" in document
    assert "data" not in document
    names = {stream["name"] for connector in document["connectors"] for stream in connector["streams"]}
    assert len(names) >= 8
    for name in names:
        assert name in text
    wire = orjson.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert len(wire) < 16_000, len(wire)  # the whole result fits, not just the text
    assert b"field_capabilities" not in wire  # field detail lives behind schema(stream)


async def test_schema_for_a_shared_stream_name_shows_every_source_and_a_legend(stdio_gateway: Client) -> None:
    result, text = await call(stdio_gateway, "schema", stream="messages")
    assert not result.is_error
    rows = [s for c in result.structured_content["data"]["connectors"] for s in c["streams"]]
    assert len(rows) >= 2  # mail (two connections) and chat both have "messages"
    connections = set(re.findall(r"cin_[A-Za-z0-9_]+", text))
    assert len(connections) >= 2
    assert "legend" in text.lower()


async def test_full_schema_needs_a_stream_and_makes_no_rs_call(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, "schema", detail="full")
    assert result.is_error
    assert error_of(result)["param"] == "detail"
    assert "schema(stream" in text
    assert shared_sandbox.calls == []


# --- query_records ---------------------------------------------------------------------


async def test_two_pages_with_the_cursor_shown_in_text(stdio_gateway: Client) -> None:
    first, text = await call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=await _mail_work(stdio_gateway),
        limit=3,
    )
    assert not first.is_error
    page = first.structured_content["data"]
    assert len(page["data"]) == 3
    assert page["has_more"] is True
    cursor = page["next_cursor"]
    assert cursor in text  # the handle is model-visible, verbatim
    second, _ = await call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=await _mail_work(stdio_gateway),
        limit=3,
        cursor=cursor,
    )
    ids_one = {r["id"] for r in page["data"]}
    ids_two = {r["id"] for r in second.structured_content["data"]["data"]}
    assert ids_one.isdisjoint(ids_two)


async def test_typed_filter_is_encoded_as_bracket_parameters(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    shared_sandbox.calls.clear()
    result, _ = await call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=await _mail_work(stdio_gateway),
        filter={"received_at": {"gte": "2026-01-01T00:00:00Z"}},
        limit=5,
    )
    assert not result.is_error, result.structured_content
    sent = [pair for c in rs_calls(shared_sandbox, "/records") for pair in query_of(c)]
    assert ("filter[received_at][gte]", "2026-01-01T00:00:00Z") in sent
    assert all(key != "filter" for key, _ in sent)
    for record in result.structured_content["data"]["data"]:
        assert record["data"]["received_at"] >= "2026-01-01"


BAD_CALLS = [
    ("query_records", {"stream": "messages", "filter": "filter[is_seen]=true"}, "invalid_filter"),
    ("query_records", {"stream": "messages", "filter": {}}, "invalid_filter"),
    ("query_records", {"stream": "messages", "filter": {"filter[x]": 1}}, "invalid_filter"),
    ("query_records", {"stream": "messages", "limit": 500}, "invalid_arguments"),
    ("query_records", {"stream": "../../admin"}, "invalid_arguments"),
    ("query_records", {"stream": "messages", "expand": ["x"], "expand_limit": {}}, "invalid_expand"),
    ("aggregate", {"stream": "messages", "metric": "count", "filter": "is_seen=true"}, "invalid_filter"),
    ("search", {"q": "lisbon"}, "invalid_arguments"),
    ("fetch", {"id": "messages:../../etc/passwd"}, "invalid_id"),
    ("fetch", {"id": "cin_a/extra/messages:m1"}, "invalid_id"),
    ("fetch", {"id": "cin_a/messages:m1", "connection_id": "cin_b"}, "conflicting_connection_id"),
    (
        "read_record_field",
        {"id": "cin_a/messages:m1", "field": "body", "q": "x", "offset_chars": 1},
        "invalid_field_window_selector",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "code"), BAD_CALLS)
async def test_bad_input_is_refused_before_any_rs_call(
    stdio_gateway: Client, shared_sandbox: Any, tool: str, arguments: dict[str, Any], code: str
) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, tool, **arguments)
    assert result.is_error
    assert error_of(result)["code"] == code
    assert code in text
    assert shared_sandbox.calls == []


# --- aggregate -------------------------------------------------------------------------


async def test_scalar_aggregate_puts_the_number_in_text(stdio_gateway: Client) -> None:
    result, text = await call(
        stdio_gateway,
        "aggregate",
        stream="messages",
        metric="count",
        connection_id=await _mail_work(stdio_gateway),
    )
    assert not result.is_error
    value = result.structured_content["data"]["value"]
    assert isinstance(value, int)
    assert value > 0
    assert str(value) in text
    assert "count" in text
    assert "messages" in text
    assert len(text) < 600


async def test_grouped_aggregate_previews_buckets_and_other_count(stdio_gateway: Client) -> None:
    result, text = await call(
        stdio_gateway,
        "aggregate",
        stream="messages",
        metric="count",
        group_by_time="received_at",
        granularity="month",
        limit=3,
        connection_id=await _mail_work(stdio_gateway),
    )
    assert not result.is_error, result.structured_content
    data = result.structured_content["data"]
    assert len(data["groups"]) == 3
    assert data["other_count"] > 0  # months spread wider than three buckets
    assert f"other_count={data['other_count']}" in text
    for group in data["groups"]:
        assert str(group["key"]) in text


# --- search → fetch → read_record_field -------------------------------------------------


async def test_search_ids_fetch_without_extra_arguments_on_a_multi_source_grant(
    stdio_gateway: Client,
) -> None:
    result, text = await call(stdio_gateway, "search", query="invoice", limit=5)
    assert not result.is_error
    results = result.structured_content["results"]
    assert results
    for hit in results:
        assert hit["id"] in text  # complete, untruncated handle in text
        assert hit["id"].startswith(f"{hit['connection_id']}/")
    fetched, fetch_text = await call(stdio_gateway, "fetch", id=results[0]["id"])
    assert not fetched.is_error, fetched.structured_content
    document = fetched.structured_content
    assert set(document) == {"id", "title", "text", "url", "metadata"}
    assert document["id"] == results[0]["id"]
    assert orjson.loads(fetch_text) == document  # content[] mirrors the document exactly


async def test_a_question_about_structured_data_offers_the_read_that_answers_it(
    stdio_gateway: Client,
) -> None:
    question = "What was my take-home pay on my most recent payslip?"
    result, text = await call(stdio_gateway, "search", query=question)
    assert not result.is_error, text
    (hint,) = result.structured_content["stream_hints"]  # declared in outputSchema, checked strictly
    printed = re.search(r"^Structured data may answer this: .*?query_records (\{.*\})$", text, re.MULTILINE)
    assert printed, text[:800]
    assert orjson.loads(printed.group(1)) == hint["call"]["arguments"]
    records, records_text = await call(stdio_gateway, "query_records", **hint["call"]["arguments"])
    assert not records.is_error, records_text
    assert '"net_amount":3406.0' in records_text  # the newest payslip's take-home pay


async def test_legacy_id_of_a_record_in_two_connections_surfaces_ambiguous_connection(
    stdio_gateway: Client,
) -> None:
    shared = await _record_in_both_mail_connections(stdio_gateway)
    result, text = await call(stdio_gateway, "fetch", id=f"messages:{shared}")
    assert result.is_error
    assert error_of(result)["code"] == "ambiguous_connection"
    assert "retry_with=connection_id" in text
    for connection_id in ("cin_mail_work", "cin_mail_personal"):
        assert connection_id in text


async def test_read_record_field_pages_with_the_shown_arguments(stdio_gateway: Client) -> None:
    handle, field = await _long_text_field(stdio_gateway)
    first, text = await call(stdio_gateway, "read_record_field", id=handle, field=field, limit_chars=1000)
    assert not first.is_error, first.structured_content
    window = first.structured_content["window"]
    assert window["complete"] is False
    assert window["end_chars"] == 1000
    match = re.search(r"read_record_field (\{.*?\})\n", text)
    assert match, text[:500]
    follow = orjson.loads(match.group(1))
    second, _ = await call(stdio_gateway, "read_record_field", **follow)
    assert second.structured_content["window"]["start_chars"] == 1000


# --- resources -------------------------------------------------------------------------


async def test_stream_and_record_resources_are_readable(stdio_gateway: Client) -> None:
    templates = await stdio_gateway.list_resource_templates()
    assert {t.uri_template for t in templates.resource_templates} >= {
        "pdpp://stream/{name}",
        "pdpp://record/{handle}",
    }
    listed = await stdio_gateway.list_resources()
    assert any(str(r.uri) == "pdpp://stream/messages" for r in listed.resources)
    stream = await stdio_gateway.read_resource("pdpp://stream/messages")
    assert '"name"' in stream.contents[0].text  # type: ignore[union-attr]
    hits, _ = await call(stdio_gateway, "search", query="invoice", limit=1)
    handle = hits.structured_content["results"][0]["id"]
    record = await stdio_gateway.read_resource(
        "pdpp://record/" + handle.replace("/", "%2F").replace(":", "%3A")
    )
    assert orjson.loads(record.contents[0].text)["object"] == "record"  # type: ignore[union-attr]


async def test_a_missing_record_resource_names_its_uri_with_the_era_s_code(stdio_gateway: Client) -> None:
    uri = "pdpp://record/cin_mail_work%2Fmessages%3Anot_there"
    with pytest.raises(MCPError) as missing:
        await stdio_gateway.read_resource(uri)
    modern = stdio_gateway.protocol_version == "2026-07-28"
    assert missing.value.error.code == (-32602 if modern else -32002)  # 2026-07-28 retired -32002
    assert missing.value.error.data["uri"] == uri
    assert missing.value.error.data["code"] == "not_found"


# --- helpers (discover data through the tools) ---------------------------------------------


async def _mail_work(client: Client) -> str:
    result, _ = await call(client, "schema", stream="messages")
    for connector in result.structured_content["data"]["connectors"]:
        for entry in connector.get("granted_connections") or []:
            if entry.get("display_name") == "Work":
                return str(entry["connection_id"])
        for stream in connector["streams"]:
            for entry in stream.get("granted_connections") or []:
                if entry.get("display_name") == "Work":
                    return str(entry["connection_id"])
    raise AssertionError("no Work mail connection in the sandbox schema")


async def _record_in_both_mail_connections(client: Client) -> str:
    schema, _ = await call(client, "schema", stream="messages")
    mail = [c for c in schema.structured_content["data"]["connectors"] if c.get("connector_key") == "gmail"]
    connections = [e["connection_id"] for c in mail for e in c.get("granted_connections") or []]
    pages = []
    for connection in connections[:2]:
        ids: set[str] = set()
        cursor: dict[str, str] = {}
        while True:  # every page of the connection's messages
            page, _ = await call(
                client,
                "query_records",
                stream="messages",
                connection_id=connection,
                limit=100,
                fields=["id"],
                **cursor,
            )
            body = page.structured_content["data"]
            ids |= {r["id"] for r in body["data"]}
            if not body.get("next_cursor"):
                break
            cursor = {"cursor": body["next_cursor"]}
        pages.append(ids)
    shared = set.intersection(*pages)
    assert shared, "the sandbox must have a record id present in both mail connections"
    return sorted(shared)[0]


async def _long_text_field(client: Client) -> tuple[str, str]:
    page, _ = await call(
        client,
        "query_records",
        stream="message_bodies",
        connection_id=await _mail_work(client),
        filter={"body_text_bytes": {"gte": 10_000}},
        limit=5,
    )
    for record in page.structured_content["data"]["data"]:
        for field, value in record["data"].items():
            if isinstance(value, str) and len(value) > 5000:
                return f"{record['connection_id']}/message_bodies:{record['id']}", field
    raise AssertionError("no long text field in message_bodies")
