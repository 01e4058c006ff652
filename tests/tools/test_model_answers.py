"""Model-facing answers on reference-shaped data (issue 13): what a model reading only
content[] needs to tell hits apart, to know an answer merged several sources, to get more
hybrid hits, and to read a grant refusal as one.

The SDK client → ``pdpp-gateway stdio`` → the sandbox RS over HTTP, in both eras. The
sandbox sends search hits as the reference does: ``emitted_at`` is the ingest time, one
value for every seeded record, and a gmail message carries no ``authored_at``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client

from pdpp_gateway.sandbox.dataset import EMITTED_AT

pytestmark = pytest.mark.asyncio(loop_scope="module")
WORK, SLACK = "cin_mail_work", "cin_slack_acme"
MESSAGES_SOURCES = {"cin_mail_work", "cin_mail_personal", "cin_slack_acme"}


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[Any, str]:
    result = await client.call_tool(tool, arguments)
    return result, result.content[0].text  # type: ignore[union-attr]


def _json_after(prefix: str, text: str) -> dict[str, Any]:
    """The JSON arguments of the first ``prefix {...}`` call printed in ``text``."""
    found = re.search(re.escape(prefix) + r" (\{.*?\})(?:$|\s)", text, re.M)
    assert found, text
    arguments: dict[str, Any] = orjson.loads(found.group(1))
    return arguments


# --- titles --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
async def test_search_titles_never_come_from_the_ingest_time(stdio_gateway: Client, mode: str) -> None:
    result, text = await _call(
        stdio_gateway, "search", query="flight confirmation lisbon", mode=mode, limit=8
    )
    hits = result.structured_content["results"]
    assert hits
    for hit in hits:
        assert EMITTED_AT not in hit["title"], hit
        assert "<mark>" not in hit["title"]
        assert f"    title: {hit['title'][:99]}" in text
    assert EMITTED_AT not in text


async def test_a_hit_proven_on_a_subject_is_titled_by_that_subject(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "search", query="lisbon", streams=["messages"], mode="lexical", limit=5
    )
    subject_hits = [h for h in result.structured_content["results"] if h["evidence"][0]["field"] == "subject"]
    assert subject_hits
    for hit in subject_hits:
        subject = re.sub(r"</?mark>", "", hit["evidence"][0]["preview"])
        assert hit["title"] == subject
        assert f"title: {subject}\n" in text


async def test_hits_matched_only_on_a_sender_name_show_the_matched_name(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "search", query="Ribeiro", streams=["messages"], connection_id=WORK, limit=5
    )
    by_name = [h for h in result.structured_content["results"] if h["matched_fields"] == ["from_name"]]
    assert by_name
    for hit in by_name:
        assert hit["title"] == f"Work / messages / {hit['record_id']} · from_name: Ana Ribeiro"
        block = text.split(f"id={hit['id']}", 1)[1].split("\n[", 1)[0]
        assert "from_name: Ana" in block  # each hit says why it matched, without a fetch


async def test_fetch_titles_a_record_without_a_title_field_by_its_id_not_the_ingest_time(
    stdio_gateway: Client,
) -> None:
    page, _ = await _call(stdio_gateway, "query_records", stream="messages", connection_id=SLACK, limit=1)
    record_id = page.structured_content["data"]["data"][0]["id"]
    result, text = await _call(stdio_gateway, "fetch", id=f"{SLACK}/messages:{record_id}", fields=["text"])
    assert not result.is_error, text
    document = orjson.loads(text)
    assert document["metadata"]["emitted_at"] == EMITTED_AT  # the projection left no time to title by
    assert document["title"] == f"Acme Slack / messages / {record_id}"


# --- shared stream names ---------------------------------------------------------------------


async def test_aggregate_over_a_shared_stream_name_says_it_added_up_every_source(
    stdio_gateway: Client,
) -> None:
    result, text = await _call(
        stdio_gateway, "aggregate", stream="messages", metric="count", group_by="is_seen"
    )
    assert not result.is_error, text
    merged = result.structured_content["merged_connections"]
    assert {c["connection_id"] for c in merged} == MESSAGES_SOURCES
    assert {c["connector_key"] for c in merged} == {"gmail", "slack"}
    note = text.splitlines()[1]
    assert note.startswith('Merged sources: 3 connections hold stream "messages"')
    assert "records of a source without is_seen group as (none)" in note
    narrowed, narrowed_text = await _call(stdio_gateway, "aggregate", **_json_after("e.g. aggregate", note))
    one_source = narrowed.structured_content["data"]["filtered_record_count"]
    assert one_source < result.structured_content["data"]["filtered_record_count"]
    assert "merged_connections" not in narrowed.structured_content
    assert "Merged sources" not in narrowed_text


async def test_aggregate_on_a_stream_one_connection_holds_says_nothing_of_sources(
    stdio_gateway: Client,
) -> None:
    result, text = await _call(stdio_gateway, "aggregate", stream="channels", metric="count")
    assert "merged_connections" not in result.structured_content
    assert text == f"aggregate count(channels) = {result.structured_content['data']['value']}"


async def test_query_records_and_aggregate_name_the_same_merged_sources(stdio_gateway: Client) -> None:
    page, page_text = await _call(stdio_gateway, "query_records", stream="messages", fields=["id"], limit=1)
    total, total_text = await _call(stdio_gateway, "aggregate", stream="messages", metric="count")
    assert page.structured_content["merged_connections"] == total.structured_content["merged_connections"]
    sources = re.compile(r"^Merged sources: (3 connections hold stream \"messages\": [^;]*);", re.M)
    listed = sources.search(page_text)
    assert listed, page_text
    assert sources.search(total_text).group(1) == listed.group(1)  # type: ignore[union-attr]


# --- hybrid paging ---------------------------------------------------------------------------


async def test_hybrid_more_hits_say_how_to_reach_them(stdio_gateway: Client) -> None:
    result, text = await _call(stdio_gateway, "search", query="budget", mode="hybrid", limit=3)
    envelope = result.structured_content["data"]
    assert envelope["has_more"] is True
    assert "next_cursor" not in envelope
    assert "raise limit (up to 100)" in text
    lexical, lexical_text = await _call(
        stdio_gateway, "search", **_json_after("which has a cursor: search", text)
    )
    assert lexical.structured_content["data"]["next_cursor"]
    assert "next_cursor=" in lexical_text


# --- grant refusals --------------------------------------------------------------------------


async def test_an_ungranted_stream_reads_as_outside_the_grant_not_as_a_token_problem(
    shared_sandbox: Any, tmp_path: Path, stdio_connect: Callable[..., AbstractAsyncContextManager[Client]]
) -> None:
    async with stdio_connect(shared_sandbox, tmp_path / ".pdpp", token="client_work_mail") as client:
        for tool, extra in (("query_records", {}), ("aggregate", {"metric": "count"})):
            result, text = await _call(client, tool, stream="repositories", **extra)
            assert result.is_error
            assert "context.stream_not_allowed" in text  # the RS's code stays visible
            assert 'Stream "repositories" is not in this grant: the person did not share it' in text
            assert "introspection" not in text  # the RS's misleading words are not repeated
            assert "call schema() for the granted streams" in text
        _, searched = await _call(client, "search", query="x", streams=["repositories"])
        assert "is not in this grant" in searched  # search says the same of the same stream
