"""Audit regressions, end to end: SDK client → ``pdpp-gateway stdio`` → a real RS over HTTP.

Each test pins one finding: oversized and non-finite arguments refused before the RS,
whole-number floats encoded as integers, blank searches refused and RS parameter names
mapped back to tool arguments, ``schema(stream)`` carrying the RS compact body verbatim,
the global index bounded as a whole result without hiding a stream name, and the reads
that had no end-to-end coverage (semantic and hybrid search, ``expand_limit`` and typed
filters forwarded, change tokens and exact counts in text, the expand gate following a
schema change without a restart).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import orjson
import pytest
from mcp import Client
from mcp.types import CallToolResult

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import stdio_params
from tests.strict_client import error_of
from tests.upstreams import Switchboard, broad_schema, broad_stream_names, schema_only_rs

pytestmark = pytest.mark.asyncio(loop_scope="module")

WORK = "cin_mail_work"


async def call(client: Client, tool: str, **arguments: Any) -> tuple[CallToolResult, str]:
    result = await client.call_tool(tool, arguments)
    assert len(result.content) == 1
    return result, result.content[0].text  # type: ignore[union-attr]


def sent(sandbox: Any, path_part: str) -> list[list[tuple[str, str]]]:
    """The query pairs of every recorded RS call whose path contains ``path_part``."""
    return [parse_qsl(c.query, keep_blank_values=True) for c in sandbox.calls if path_part in c.path]


def wire_size(result: CallToolResult) -> int:
    return len(orjson.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)))


@asynccontextmanager
async def gateway_on(
    url: str, token: str, cache_root: Path, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    write_credential(cache_root, url, token)
    params = stdio_params(url, cache_root, env=env)
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        yield client


# --- 5. size caps: typed, actionable, before any RS call ------------------------------------------

OVERSIZED = [
    ("query_records", {"stream": "messages", "cursor": "c" * 100_000}, "cursor"),
    ("query_records", {"stream": "messages", "changes_since": "t" * 5_000}, "changes_since"),
    ("search", {"query": "lisbon " * 7_000}, "query"),
    ("search", {"query": "x", "cursor": "c" * 100_000}, "cursor"),
    ("query_records", {"stream": "messages", "fields": [f"field_{i}" for i in range(3_000)]}, "fields"),
    ("query_records", {"stream": "messages", "fields": ["f" * 10_000]}, "fields"),
    ("query_records", {"stream": "messages", "filter": {f"f{i}": 1 for i in range(200)}}, "filter"),
    ("query_records", {"stream": "messages", "filter": {"subject": "s" * 20_000}}, "filter"),
    ("query_records", {"stream": "messages", "filter": {"k" * 5_000: 1}}, "filter"),
    ("search", {"query": "x", "streams": [f"s{i}" for i in range(500)]}, "streams"),
    ("fetch", {"id": f"{WORK}/messages:" + "r" * 100_000}, "id"),
    ("read_record_field", {"id": f"{WORK}/messages:m1", "field": "body_text", "q": "q" * 50_000}, "q"),
    ("aggregate", {"stream": "m" * 10_000, "metric": "count"}, "stream"),
]


@pytest.mark.parametrize(("tool", "arguments", "param"), OVERSIZED)
async def test_oversized_arguments_are_refused_with_a_typed_error_before_the_rs(
    stdio_gateway: Client, shared_sandbox: Any, tool: str, arguments: dict[str, Any], param: str
) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, tool, **arguments)
    assert result.is_error
    error = error_of(result)
    assert (error["code"], error["param"]) == ("invalid_arguments", param)
    assert "at most" in text
    assert len(text) < 600  # the refusal names size and limit; it never echoes the value
    assert shared_sandbox.calls == []


async def test_tool_input_schemas_advertise_their_caps(stdio_gateway: Client) -> None:
    listed = await stdio_gateway.list_tools()
    by_name = {tool.name: tool.input_schema["properties"] for tool in listed.tools}
    assert by_name["search"]["query"]["maxLength"] <= 2_000
    assert by_name["query_records"]["cursor"]["maxLength"] <= 4_096
    assert by_name["query_records"]["fields"]["maxItems"] <= 64
    assert by_name["query_records"]["filter"]["maxProperties"] <= 64
    assert by_name["fetch"]["expand_limit"]["maxProperties"] <= 64
    wire = orjson.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert len(wire) < 12_000


# --- 6. whole-number floats are integers; non-finite filter values are refused -------------------


async def test_whole_number_floats_reach_the_rs_as_integers(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    shared_sandbox.calls.clear()
    page, _ = await call(stdio_gateway, "query_records", stream="messages", connection_id=WORK, limit=5.0)
    assert not page.is_error, page.content
    assert len(page.structured_content["data"]["data"]) == 5  # type: ignore[index]
    assert ("limit", "5") in sent(shared_sandbox, "/records")[-1]
    record_id = page.structured_content["data"]["data"][0]["id"]  # type: ignore[index]

    shared_sandbox.calls.clear()
    fetched, _ = await call(
        stdio_gateway,
        "fetch",
        id=f"{WORK}/messages:{record_id}",
        expand=["attachments"],
        expand_limit={"attachments": 2.0},
    )
    assert not fetched.is_error, fetched.content
    assert ("expand_limit[attachments]", "2") in sent(shared_sandbox, f"/records/{record_id}")[-1]

    body, _ = await call(
        stdio_gateway, "query_records", stream="message_bodies", connection_id=WORK, limit=1.0, fields=["id"]
    )
    body_id = body.structured_content["data"]["data"][0]["id"]  # type: ignore[index]
    shared_sandbox.calls.clear()
    window, _ = await call(
        stdio_gateway,
        "read_record_field",
        id=f"{WORK}/message_bodies:{body_id}",
        field="body_text",
        offset_chars=10.0,
        limit_chars=100.0,
    )
    assert not window.is_error, window.content
    pairs = sent(shared_sandbox, "/field-window")[-1]
    assert ("offset_chars", "10") in pairs
    assert ("limit_chars", "100") in pairs
    assert window.structured_content["window"]["start_chars"] == 10  # type: ignore[index]


async def test_the_next_page_call_in_the_text_repeats_a_whole_number_float_as_sent(
    stdio_gateway: Client,
) -> None:
    """The text's follow-up call repeats the arguments as validation accepted them
    (``tools.args``): the ``limit`` the RS was sent, an integer."""
    page, text = await call(stdio_gateway, "query_records", stream="messages", connection_id=WORK, limit=2.0)
    assert not page.is_error, page.content
    follow = next(line for line in text.splitlines() if line.startswith("next_cursor="))
    assert '"limit":2,' in follow, follow
    assert "2.0" not in follow


async def test_whole_number_float_filter_values_are_sent_as_integers(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    shared_sandbox.calls.clear()
    result, _ = await call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=WORK,
        filter={"size_bytes": {"gte": 1000.0}},
        limit=2,
    )
    assert not result.is_error, result.content
    assert ("filter[size_bytes][gte]", "1000") in sent(shared_sandbox, "/records")[-1]


# --- 9. blank searches stop before the RS; RS parameter names come back as tool arguments --------


@pytest.mark.parametrize("query", ["   ", "\t\n "])
async def test_blank_search_is_refused_before_the_rs(
    stdio_gateway: Client, shared_sandbox: Any, query: str
) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, "search", query=query)
    assert result.is_error
    assert error_of(result)["param"] == "query"
    assert "query" in text
    assert shared_sandbox.calls == []


async def test_an_rs_error_on_q_names_the_query_argument(stdio_gateway: Client, shared_sandbox: Any) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, "search", query="!!! ???")
    assert result.is_error
    assert "param=query (REST parameter q)" in text  # the RS's own name kept beside the argument
    assert len(sent(shared_sandbox, "/v1/search")) == 1  # the RS itself refused it
    assert "argument 'query'" in text
    assert "argument 'q'" not in text
    assert "param=query" in text


# --- 4. schema(stream): the RS compact body verbatim, legend beside it ----------------------------


async def _rest_compact(sandbox: Any, **query: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {sandbox.tokens['client_broad']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{sandbox.url}/v1/schema", params={"view": "compact", **query}, headers=headers) as answer,
    ):
        body: dict[str, Any] = await answer.json()
    return {key: value for key, value in body.items() if key not in {"links", "meta"}}


@pytest.mark.parametrize("scope", [{"stream": "messages"}, {"stream": "messages", "connection_id": WORK}])
async def test_schema_stream_carries_the_rest_compact_body_verbatim(
    stdio_gateway: Client, shared_sandbox: Any, scope: dict[str, str]
) -> None:
    result, text = await call(stdio_gateway, "schema", **scope)
    assert not result.is_error
    structured = result.structured_content
    assert structured is not None
    assert structured["data"] == await _rest_compact(shared_sandbox, **scope)
    rows = [row for connector in structured["data"]["connectors"] for row in connector["streams"]]
    assert all("field_capabilities" in row and "fields" not in row for row in rows)
    legend = structured["field_capability_legend"]
    assert {"eq", "lex", "a=<kinds>"} <= set(legend)
    assert "field_capability_legend" not in structured["data"]
    assert re.search(r"received_at\[[^\]]*r=gte", text)  # the text is as useful as before
    assert "expand: message_bodies" in text
    assert "legend:" in text


# --- 3. the global index fits as a whole result and names every stream ----------------------------


async def test_a_very_broad_grant_keeps_every_stream_name_visible_within_the_budget(tmp_path: Path) -> None:
    body = broad_schema(connectors=40, streams=15)
    async with (
        schema_only_rs(body) as url,
        gateway_on(url, "tok_broad_grant", tmp_path / ".pdpp") as client,
    ):
        result, text = await call(client, "schema")
    assert not result.is_error
    for connector in range(40):
        for name in broad_stream_names(connector, 15):
            assert re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text), name
    assert "schema: 40 connectors, 600 streams" in text
    assert wire_size(result) < 24_000, wire_size(result)
    data = result.structured_content["data"]  # type: ignore[index]
    bounded = data["index_bounded"]
    assert bounded["stream_count"] == 600
    assert bounded["streams_listed"] <= 600
    assert data["stream_count"] == 600
    assert len(orjson.dumps(data)) <= 8_000  # the structured half of the budget
    assert b"field_capabilities" not in orjson.dumps(data)


async def test_a_grant_too_broad_to_name_says_how_to_list_the_rest(tmp_path: Path) -> None:
    body = broad_schema(connectors=200, streams=15)
    async with (
        schema_only_rs(body) as url,
        gateway_on(url, "tok_broad_grant", tmp_path / ".pdpp") as client,
    ):
        result, text = await call(client, "schema")
    assert not result.is_error
    assert wire_size(result) < 24_000, wire_size(result)
    data = result.structured_content["data"]  # type: ignore[index]
    assert data["index_bounded"]["level"] == "capped"
    assert data["index_bounded"]["streams_listed"] < 3_000
    listed = sum(len(c["streams"]) for c in data["connectors"])
    assert listed == data["index_bounded"]["streams_listed"]
    assert len(orjson.dumps(data)) <= 8_000
    assert "more streams" in text
    assert "schema(connection_id" in text


# --- 10. reads that had no end-to-end coverage ------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "route"), [("semantic", "/v1/search/semantic"), ("hybrid", "/v1/search/hybrid")]
)
async def test_semantic_and_hybrid_search(
    stdio_gateway: Client, shared_sandbox: Any, mode: str, route: str
) -> None:
    shared_sandbox.calls.clear()
    result, text = await call(stdio_gateway, "search", query="invoice payment", mode=mode, limit=5)
    assert not result.is_error, result.content
    assert [c.path for c in shared_sandbox.calls] == [route]
    hits = result.structured_content["results"]  # type: ignore[index]
    assert hits
    assert len(hits) <= 5
    for hit in hits:
        assert hit["id"] in text
    assert result.structured_content["data"]["result_count"] == len(hits)  # type: ignore[index]
    fetched, _ = await call(stdio_gateway, "fetch", id=hits[0]["id"])
    assert not fetched.is_error


async def test_fetch_forwards_expand_limit(stdio_gateway: Client, shared_sandbox: Any) -> None:
    page, _ = await call(stdio_gateway, "query_records", stream="messages", connection_id=WORK, limit=1)
    record_id = page.structured_content["data"]["data"][0]["id"]  # type: ignore[index]
    shared_sandbox.calls.clear()
    result, _ = await call(
        stdio_gateway,
        "fetch",
        id=f"{WORK}/messages:{record_id}",
        expand=["attachments"],
        expand_limit={"attachments": 3},
    )
    assert not result.is_error, result.content
    pairs = sent(shared_sandbox, f"/records/{record_id}")[-1]
    assert ("expand", "attachments") in pairs
    assert ("expand_limit[attachments]", "3") in pairs


async def test_aggregate_forwards_a_typed_filter(stdio_gateway: Client, shared_sandbox: Any) -> None:
    everything, _ = await call(
        stdio_gateway, "aggregate", stream="messages", metric="count", connection_id=WORK
    )
    shared_sandbox.calls.clear()
    seen, text = await call(
        stdio_gateway,
        "aggregate",
        stream="messages",
        metric="count",
        connection_id=WORK,
        filter={"is_seen": True},
    )
    assert not seen.is_error, seen.content
    pairs = sent(shared_sandbox, "/aggregate")[-1]
    assert ("filter[is_seen]", "true") in pairs
    assert all(key != "filter" for key, _ in pairs)
    value = seen.structured_content["data"]["value"]  # type: ignore[index]
    assert 0 < value < everything.structured_content["data"]["value"]  # type: ignore[index]
    assert str(value) in text


async def test_query_records_text_carries_next_changes_since(stdio_gateway: Client) -> None:
    result, text = await call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=WORK,
        changes_since="beginning",
        limit=3,
    )
    assert not result.is_error, result.content
    token = result.structured_content["data"]["next_changes_since"]  # type: ignore[index]
    assert f"next_changes_since={token}" in text
    later, _ = await call(
        stdio_gateway, "query_records", stream="messages", connection_id=WORK, changes_since=token
    )
    assert not later.is_error, later.content


async def test_query_records_text_carries_exact_count(stdio_gateway: Client) -> None:
    result, text = await call(
        stdio_gateway, "query_records", stream="messages", connection_id=WORK, count="exact", limit=2
    )
    assert not result.is_error, result.content
    count = result.structured_content["data"]["meta"]["count"]  # type: ignore[index]
    assert count["kind"] == "exact"
    assert f"count=exact:{count['value']}" in text


def _without_expansions(body: dict[str, Any]) -> dict[str, Any]:
    for connector in body.get("connectors") or ():
        for row in connector.get("streams") or ():
            row["expand_capabilities"] = []
    return body


async def test_expand_gate_follows_a_schema_change_without_a_restart(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    """Within the grant memo's bound (60 s; 1 s here, PDPP_GRANT_MEMO_SECONDS)."""
    board = Switchboard(shared_sandbox.url)
    arguments = {"stream": "messages", "connection_id": WORK, "expand": ["message_bodies"], "limit": 1}
    memo = {"PDPP_GRANT_MEMO_SECONDS": "1"}
    async with (
        board.serve() as url,
        gateway_on(url, shared_sandbox.tokens["client_broad"], tmp_path / ".pdpp", memo) as client,
    ):
        allowed, _ = await call(client, "query_records", **arguments)
        assert not allowed.is_error, allowed.content
        board.schema_rewrite = _without_expansions  # the stream stops advertising the relation
        await asyncio.sleep(1.1)  # past the memo's bound
        board.seen.clear()
        refused, text = await call(client, "query_records", **arguments)
        assert refused.is_error
        assert error_of(refused)["code"] == "invalid_expand"
        assert "message_bodies" in text
        assert board.paths() == ["/v1/schema"]  # refused by the gate: no records read
        board.schema_rewrite = None
        await asyncio.sleep(1.1)
        again, _ = await call(client, "query_records", **arguments)
        assert not again.is_error, again.content


async def test_arguments_within_caps_that_would_overflow_the_request_line_are_refused_typed(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    fields = [f"field_{i:03d}_" + "x" * 110 for i in range(64)]  # each item and the count within caps
    shared_sandbox.calls.clear()
    result, text = await call(
        stdio_gateway, "query_records", stream="messages", connection_id=WORK, fields=fields
    )
    assert result.is_error
    assert error_of(result)["code"] == "request_too_large"
    assert "fewer fields" in text
    assert len(text) < 600
    assert shared_sandbox.calls == []
