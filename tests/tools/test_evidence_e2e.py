"""Evidence previews, read-more windows, complete listings and field ends, end to end.

The SDK client → ``pdpp-gateway stdio`` → the sandbox RS over HTTP, in both eras. Every
handle a test follows is parsed out of the model-visible text.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from mcp import Client

from pdpp_gateway.render.search import PASSAGE_CHARS, PREVIEW_CHARS

pytestmark = pytest.mark.asyncio(loop_scope="module")
WORK = "cin_mail_work"
PORTO = f"{WORK}/message_bodies:body_porto_trip"


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[Any, str]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result, result.content[0].text  # type: ignore[union-attr]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _visible(preview: str) -> str:
    return _flat(re.sub(r"</?mark>", "", preview)).strip("…").strip()


def _evidence_pairs(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(preview as shown, read-more arguments) for every evidence line of a search text."""
    pairs = re.findall(r"^ +evidence [^:]+: (.*)\n +read more: read_record_field (\{.*\})$", text, re.M)
    return [(preview, orjson.loads(arguments)) for preview, arguments in pairs]


QUERIES = [
    "booking confirmation code",
    "Porto booking confirmation code",
    "Lisbon apartment deposit",
    "storage unit locker",
    "invoice consulting",
    "quarterly budget review",
    "deposit",
]


def _whole_text_fetches(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(preview as shown, fetch arguments) for every evidence line of a search text whose hit
    offers its whole text by fetch above it and no read-more of its own."""
    found = []
    for block in re.split(r"^(?=\[\d+\] )", text, flags=re.M):
        fetch = re.search(r"^ +its whole text[^:]*: fetch (\{.*\})$", block, re.M)
        alone = re.findall(r"^ +evidence [^:]+: (.*)$(?!\n +read more: )", block, re.M)
        if fetch is not None:
            found += [(preview, orjson.loads(fetch.group(1))) for preview in alone]
    return found


@pytest.mark.parametrize("query", QUERIES)
async def test_read_more_lands_on_the_window_the_preview_shows(stdio_gateway: Client, query: str) -> None:
    result, text = await _call(stdio_gateway, "search", query=query, limit=25)
    pairs = _evidence_pairs(text)
    fetched = _whole_text_fetches(text)
    shown = re.findall(r"^ +evidence [^:]+: (.*)$", text, re.M)
    assert shown, text
    # a short field shown whole may end in "…" of its own (a mail's snippet field)
    fields_whole = {
        _visible(str(item["preview"]))
        for hit in result.structured_content["results"]
        for item in hit.get("evidence") or ()
        if item.get("truncated") is False and "read" not in item
    }
    whole = [
        preview
        for preview in shown
        if _visible(preview) in fields_whole or not (preview.startswith("…") or preview.endswith("…"))
    ]
    # a preview cut by "…" offers the read that goes on: its own read-more, or its hit's whole
    # text by fetch (above its evidence) where the fetch shows all the read-more would;
    # one showing its whole field offers neither
    cut = sorted(p for p in shown if p not in whole)
    assert sorted([preview for preview, _ in pairs] + [p for p, _ in fetched if p not in whole]) == cut, text
    for preview, arguments in pairs:
        window, window_text = await _call(stdio_gateway, "read_record_field", **arguments)
        shown = _visible(preview)
        assert shown in _flat(window.structured_content["window"]["text"]), (query, preview, arguments)
        assert shown in _flat(window_text.split("\n---\n", 1)[1])
    for preview, arguments in fetched:
        document, document_text = await _call(stdio_gateway, "fetch", **arguments)
        assert _visible(preview) in _flat(document.structured_content["text"]), (query, preview, arguments)
        assert _visible(preview) in _flat(orjson.loads(document_text)["text"])


async def test_the_reported_porto_window_holds_the_code(stdio_gateway: Client) -> None:
    _, text = await _call(
        stdio_gateway, "search", query="booking confirmation code", streams=["message_bodies"]
    )
    preview, arguments = _evidence_pairs(text)[0]  # its best answer window
    assert "QX7P2M" in preview
    _, window = await _call(stdio_gateway, "read_record_field", **arguments)
    assert "Your Porto booking confirmation code is QX7P2M" in window


async def test_evidence_previews_keep_mark_tags_whole(stdio_gateway: Client) -> None:
    _, text = await _call(stdio_gateway, "search", query="budget review planning", limit=25)
    lines = re.findall(r"^ +(?:evidence|snippet)([^:]*): (.*)$", text, re.M)
    assert lines
    for label, line in lines:
        # a snippet is a preview; a passage read for the answer is bounded where it was cut
        bound = PASSAGE_CHARS if "(passage at char" in label else PREVIEW_CHARS
        assert len(re.sub(r"</?mark>", "", line)) <= bound
        stripped = re.sub(r"</?mark>", "", line)
        assert "<" not in stripped, line  # no cut tag such as <mark>budget</mar…
        assert line.count("<mark>") == line.count("</mark>"), line


# --- every returned hit / record is reachable from the text ---------------------------------


def _listed_hits(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] id=(\S+)", text, re.M)


async def test_search_text_lists_every_hit_of_a_default_page(stdio_gateway: Client) -> None:
    # a lexical page, as the RS ranks it (an unpinned search is fused: ten hits)
    result, text = await _call(stdio_gateway, "search", query="invoice", mode="lexical", limit=25)
    ids = [hit["id"] for hit in result.structured_content["results"]]
    assert len(ids) == 25
    assert _listed_hits(text) == ids  # all 25, in order, not 8
    assert len(text) <= 5_000
    # one-line rows still show what matched, so the model can choose which hit to open
    rows = [line for line in text.splitlines() if re.match(r"^\[\d+\] id=\S+$", line)]
    assert rows == [], rows
    lines = text.splitlines()
    one_line = [  # a row, not a block's first line: nothing indented follows it
        line
        for line, after in zip(lines, [*lines[1:], ""], strict=True)
        if re.match(r"^\[\d+\] id=\S+ ", line) and not after.startswith("    ")
    ]
    assert one_line, text
    assert all("<mark>" in line for line in one_line), one_line


async def test_search_hits_beyond_the_budget_are_named_and_reachable(stdio_gateway: Client) -> None:
    result, text = await _call(stdio_gateway, "search", query="invoice", mode="lexical", limit=100)
    ids = [hit["id"] for hit in result.structured_content["results"]]
    listed = _listed_hits(text)
    assert listed == ids[: len(listed)]
    missing = ids[len(listed) :]
    assert missing, "100 ids should not fit the search text budget"
    assert f"Hits {len(listed) + 1}–100 ({len(missing)}) are not listed" in text
    follow = re.search(r"to list them, follow next_cursor from search (\{.*\})$", text, re.M)
    assert follow, text
    seen: list[str] = []
    arguments = orjson.loads(follow.group(1))
    for _ in range(5):
        _, page_text = await _call(stdio_gateway, "search", **arguments)
        seen += _listed_hits(page_text)
        cursor = re.search(r"^next_cursor=(\S+) → next page: search (\{.*\})$", page_text, re.M)
        if set(missing) <= set(seen) or not cursor:
            break
        arguments = orjson.loads(cursor.group(2))
        assert arguments["cursor"] == cursor.group(1)
    assert set(missing) <= set(seen)


def _listed_records(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] (\S+)", text, re.M)


async def test_records_text_lists_every_record_of_the_page(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway, "query_records", stream="message_bodies", connection_id=WORK, limit=25
    )
    records = result.structured_content["data"]["data"]
    assert _listed_records(text) == [f"{WORK}/message_bodies:{r['id']}" for r in records]
    assert len(text) <= 4_000
    # rows beyond the detailed ones still say what each record is: its title and time
    for record in records[-3:]:
        received = record["data"]["message_received_at"]
        assert re.search(rf"^\[\d+\] {WORK}/message_bodies:{record['id']} .*{received}$", text, re.M)
    assert "narrow with fields" in text  # records shown by handle only; fields were not narrowed


async def test_records_beyond_the_budget_are_named_without_a_fields_hint_when_narrowed(
    stdio_gateway: Client,
) -> None:
    arguments = {"stream": "messages", "connection_id": WORK, "limit": 100, "fields": ["id", "subject"]}
    result, text = await _call(stdio_gateway, "query_records", **arguments)
    handles = [f"{WORK}/messages:{r['id']}" for r in result.structured_content["data"]["data"]]
    listed = _listed_records(text)
    assert listed == handles[: len(listed)]
    missing = handles[len(listed) :]
    assert missing
    assert f"Records {len(listed) + 1}–100 ({len(missing)}) are not listed" in text
    assert "narrow with fields" not in text  # fields are already narrowed
    follow = re.search(r"to list them, follow next_cursor from query_records (\{.*\})$", text, re.M)
    assert follow, text
    seen: list[str] = []
    call_arguments = orjson.loads(follow.group(1))
    for _ in range(5):
        _, page_text = await _call(stdio_gateway, "query_records", **call_arguments)
        seen += _listed_records(page_text)
        cursor = re.search(r"next page \(same order/sort\): query_records (\{.*\})$", page_text, re.M)
        if set(missing) <= set(seen) or not cursor:
            break
        call_arguments = orjson.loads(cursor.group(1))
    assert set(missing) <= set(seen)


# --- the end of a field -------------------------------------------------------------------


async def test_the_last_window_says_end_of_field(stdio_gateway: Client) -> None:
    first, _ = await _call(stdio_gateway, "read_record_field", id=PORTO, field="body_text", limit_chars=100)
    total = first.structured_content["window"]["total_chars"]
    last, text = await _call(
        stdio_gateway, "read_record_field", id=PORTO, field="body_text", offset_chars=total - 50
    )
    header, _ = text.split("\n---\n", 1)
    assert last.structured_content["window"]["has_more"] is False
    assert "has_more=false" in header
    assert "End of field" in header
    assert "next:" not in header


async def test_an_offset_past_the_end_says_so_and_offers_the_last_window(stdio_gateway: Client) -> None:
    first, _ = await _call(stdio_gateway, "read_record_field", id=PORTO, field="body_text", limit_chars=100)
    total = first.structured_content["window"]["total_chars"]
    _, text = await _call(
        stdio_gateway, "read_record_field", id=PORTO, field="body_text", offset_chars=total + 1000
    )
    assert f"offset_chars={total + 1000} is past the end of the field ({total} chars)" in text
    last = re.search(r"Read the last window with read_record_field (\{.*\})$", text, re.M)
    assert last, text
    window, _ = await _call(stdio_gateway, "read_record_field", **orjson.loads(last.group(1)))
    assert window.structured_content["window"]["end_chars"] == total
    assert window.structured_content["window"]["text"]


async def test_an_offset_past_the_end_written_as_a_whole_float_says_so_too(stdio_gateway: Client) -> None:
    """The text reads the offset validation accepted (``tools.args``: ``2034.0`` is ``2034``)."""
    first, _ = await _call(stdio_gateway, "read_record_field", id=PORTO, field="body_text", limit_chars=100)
    total = first.structured_content["window"]["total_chars"]
    _, text = await _call(
        stdio_gateway, "read_record_field", id=PORTO, field="body_text", offset_chars=float(total + 1000)
    )
    assert f"offset_chars={total + 1000} is past the end of the field ({total} chars)" in text
