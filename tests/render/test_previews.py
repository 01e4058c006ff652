"""Evidence previews and read-more arguments, as pure functions (B1, B2, G4 units).

``preview_around_mark`` counts visible characters only, keeps ``<mark>`` tags well-formed
and bounds a single long mark; ``balance_marks`` repairs any cut; ``read_more_query``
picks a literal span of the preview; a connection that cannot live in the id travels as
``connection_id`` in every continuation.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.documents import fetch_document, search_results
from pdpp_gateway.ids import RecordRef, handle_arguments, parse_handle
from pdpp_gateway.marks import balance_marks, parse_marks, preview_around_mark, read_more_query
from pdpp_gateway.render.field_window import render_field_window
from pdpp_gateway.render.records import render_records
from pdpp_gateway.render.search import DETAIL_SHARE, render_search
from pdpp_gateway.tools.args import parse_query_records, parse_read_record_field, parse_search

PROVIDER = "https://rs.example"


def _visible(text: str) -> str:
    return re.sub(r"</?mark>", "", text)


def _well_formed(text: str) -> bool:
    depth = 0
    for tag in re.findall(r"</?mark>|<|>", text):
        if tag == "<mark>":
            depth += 1
        elif tag == "</mark>":
            depth -= 1
        else:
            return False  # a stray or cut angle bracket
        if depth not in (0, 1):
            return False
    return depth == 0


LONG = " ".join(f"word{n}" for n in range(200))


@pytest.mark.parametrize(
    "text",
    [
        f"{LONG} <mark>budget</mark> {LONG}",
        f"<mark>budget</mark> {LONG}",
        f"{LONG} <mark>budget</mark>",
        f"{LONG} " + " ".join("<mark>budget</mark>" for _ in range(80)) + f" {LONG}",
        f"{LONG} <mark>{'x' * 900}</mark> {LONG}",
        LONG,
    ],
)
def test_preview_counts_visible_chars_and_keeps_tags_well_formed(text: str) -> None:
    preview, cut = preview_around_mark(text, 120)
    assert cut is True
    assert len(_visible(preview)) <= 120  # tags do not count, ellipses do
    assert _well_formed(preview), preview
    if "<mark>" in text:
        assert "<mark>" in preview  # centred on the match, not the head of the text


def test_many_marks_do_not_eat_the_visible_budget() -> None:
    text = f"{LONG} " + " ".join("<mark>budget</mark>" for _ in range(10)) + f" {LONG}"
    preview, _ = preview_around_mark(text, 200)
    assert len(_visible(preview)) > 150  # the old raw-length count left ~60 visible chars


def test_one_long_mark_is_bounded_and_closed() -> None:
    preview, cut = preview_around_mark(f"start <mark>{'y' * 1000}</mark> end", 100)
    assert cut
    assert len(_visible(preview)) <= 100
    assert preview.count("<mark>") == preview.count("</mark>") == 1


def test_short_text_is_returned_whole_and_balanced() -> None:
    assert preview_around_mark("a <mark>b</mark> c") == ("a <mark>b</mark> c", False)
    assert preview_around_mark("a <mark>b c") == ("a <mark>b c</mark>", False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a <mark>budget</mar", "a <mark>budget</mark>"),
        ("a <mark>budget</mark> and <mar", "a <mark>budget</mark> and "),
        ("ark>budget</mark> x", "budget x"),
        ("k> x <mark>y</mark>", " x <mark>y</mark>"),
        ("a </mark>b<mark>c<mark>d</mark>e</mark>", "a b<mark>cd</mark>e"),
        ("no tags at all", "no tags at all"),
        ("<mark>open", "<mark>open</mark>"),
        ("<mark></mark>empty", "empty"),
    ],
)
def test_balance_marks_repairs_any_cut(raw: str, expected: str) -> None:
    assert balance_marks(raw) == expected
    assert _well_formed(balance_marks(raw))


def test_parse_marks_gives_visible_text_and_ranges() -> None:
    plain, marks = parse_marks("x <mark>ab</mark> y <mark>c</mark>")
    assert plain == "x ab y c"
    assert [plain[s:e] for s, e in marks] == ["ab", "c"]


def test_read_more_query_is_a_distinctive_literal_span_of_one_line() -> None:
    preview = "…Your Porto <mark>booking</mark> <mark>confirmation</mark> <mark>code</mark> is QX7P2M for seat 22A.\nNext line…"
    query = read_more_query(preview)
    assert query is not None
    assert "booking confirmation code" in query
    assert len(query) > len("booking") + 20  # not the bare first term
    assert "\n" not in query
    assert "…" not in query
    assert query in _visible(preview)
    assert read_more_query("no match here") is None


def test_evidence_uses_an_rs_offset_when_the_excerpt_has_one() -> None:
    hit = _hit("cin_a", preview="…a <mark>b</mark> c…", match_start_chars=5000)
    [result] = search_results({"data": [hit]}, provider_url=PROVIDER)
    arguments = result["evidence"][0]["read"]["arguments"]
    assert arguments["offset_chars"] == 4700
    assert "q" not in arguments


# --- G4: a connection_id that cannot be embedded in the id -------------------------------

COLON = "urn:conn:1"


def _hit(connection: str, *, preview: str = "x <mark>deposit</mark> y", **extra: Any) -> dict[str, Any]:
    return {
        "stream": "message_bodies",
        "record_key": "body_1",
        "connection_id": connection,
        "matched_fields": ["body_text"],
        "evidence_excerpts": [{"field_path": "body_text", "preview_text": preview, **extra}],
    }


def test_handle_arguments_adds_connection_id_only_when_the_id_cannot_carry_it() -> None:
    assert handle_arguments("s", "r", "cin_a") == {"id": "cin_a/s:r"}
    assert handle_arguments("s", "r", COLON) == {"id": "s:r", "connection_id": COLON}
    assert handle_arguments("s", "r") == {"id": "s:r"}


def test_search_continuations_carry_an_unembeddable_connection() -> None:
    bare = {**_hit(COLON), "evidence_excerpts": [], "record_key": "body_2"}
    cut = _hit(COLON, preview="…x <mark>deposit</mark> y…")  # a preview of part of its field
    body = {"data": [bare, cut, {**bare, "record_key": "body_3"}]}
    results = search_results(body, provider_url=PROVIDER)
    assert results[1]["id"] == "message_bodies:body_1"
    assert results[1]["evidence"][0]["read"]["arguments"]["connection_id"] == COLON
    text = render_search(parse_search({"query": "deposit"}), ToolResult({"data": {}, "results": results}))
    assert f'"connection_id":"{COLON}"' in text.split("read more:")[1].splitlines()[0]
    fetch_line = next(line for line in text.splitlines() if "no text evidence" in line)
    assert f'fetch {{"id":"message_bodies:body_2","connection_id":"{COLON}"}}' in fetch_line
    assert f"connection_id={COLON}" in text.splitlines()[1]
    # a hit with no evidence after one with some is listed in brief, its connection still shown
    assert f"[3] id=message_bodies:body_3 connection_id={COLON}" in text.splitlines()
    assert "is listed in brief: fetch it by id to read it" in text


def test_bare_hits_after_evidence_are_rows_and_leave_room_for_evidence_further_down() -> None:
    bare = [{**_hit("cin_a"), "evidence_excerpts": [], "record_key": f"bare_{n}"} for n in range(9)]
    body = {"data": [_hit("cin_a"), *bare, {**_hit("cin_a"), "record_key": "body_late"}]}
    results = search_results(body, provider_url=PROVIDER)
    near = {"id": "cin_a/message_bodies:bare_1", "field": "body_text", "near": "deposit"}
    results[2]["read_near"] = {"tool": "read_record_field", "arguments": near}
    text = render_search(parse_search({"query": "deposit"}), ToolResult({"data": {}, "results": results}))
    assert "[2] id=cin_a/message_bodies:bare_0" in text.splitlines()
    # a brief hit keeps the aimed read of its long field, under its row
    row = text.splitlines().index("[3] id=cin_a/message_bodies:bare_1")
    assert text.splitlines()[row + 1] == (
        "    long: read where it speaks of your words with read_record_field "
        '{"id":"cin_a/message_bodies:bare_1","field":"body_text","near":"deposit"}'
    )
    assert "no text evidence (" not in text  # every bare hit is a row: they come after evidence
    # the eleventh hit still gets its block: rows do not count against the detailed hits
    assert "[11] id=cin_a/message_bodies:body_late" in text
    assert "listed by id only" not in text  # nothing was cut for the budget


def test_a_judged_page_details_only_the_hits_near_its_best_and_says_why_the_rest_are_rows() -> None:
    # a fused page's hits come ordered by the judge; the fourth scores under DETAIL_SHARE of the first
    scores = [0.9, 0.8, 0.6, 0.5, 0.4]
    results = search_results(
        {"data": [{**_hit("cin_a"), "record_key": f"body_{n}"} for n in range(len(scores))]},
        provider_url=PROVIDER,
    )
    for hit, score in zip(results, scores, strict=True):
        hit["relevance"] = score
    assert scores[2] >= DETAIL_SHARE * scores[0] > scores[3]
    text = render_search(parse_search({"query": "deposit"}), ToolResult({"data": {}, "results": results}))
    lines = text.splitlines()
    assert lines[6:10] == [  # the third in detail, the fourth and fifth as rows
        "    evidence body_text: x <mark>deposit</mark> y",
        "[4] id=cin_a/message_bodies:body_3 x <mark>deposit</mark> y",
        "[5] id=cin_a/message_bodies:body_4 x <mark>deposit</mark> y",
        "(hits 4–5 are listed by id only, judged well below the first: fetch one by id)",
    ]
    # the same page unjudged (a pinned mode): every hit fits in detail, no note
    for hit in results:
        del hit["relevance"]
    plain = render_search(parse_search({"query": "deposit"}), ToolResult({"data": {}, "results": results}))
    assert "listed by id only" not in plain
    assert sum(line.strip().startswith("evidence") for line in plain.splitlines()) == len(scores)
    assert sum(line.strip().startswith("evidence") for line in lines) == 3


def test_a_long_page_still_shows_its_first_hit_s_best_window() -> None:
    # 25 hits: their rows leave no room for the first hit's two windows; it shows its best one
    excerpt = "a line about the flat " * 8 + "<mark>deposit</mark>" + " and the keys" * 8
    results = search_results(
        {"data": [{**_hit("cin_a", preview=excerpt), "record_key": f"body_{n}"} for n in range(25)]},
        provider_url=PROVIDER,
    )
    sentence = "The deposit held becomes two months of the new rent, paid with the June rent. "
    results[0]["evidence"] = [
        {
            "field": "body_text",
            "preview": f"{which} " + sentence * 9,
            "truncated": True,
            "provenance": "passage",
            "at_chars": at,
            "total_chars": 14_000,
            "read": {
                "tool": "read_record_field",
                "arguments": {"id": results[0]["id"], "field": "body_text"},
            },
        }
        for which, at in (("best", 6_000), ("second", 12_000))
    ]
    text = render_search(
        parse_search({"query": "deposit", "limit": 25}), ToolResult({"data": {}, "results": results})
    )
    first = text.split("\n[2] ")[0]
    evidence = [line for line in first.splitlines() if line.strip().startswith("evidence")]
    assert len(evidence) == 1
    assert evidence[0].startswith("    evidence body_text (passage at char 6000 of 14000): best The deposit")
    listed = re.findall(r"^\[\d+\] id=cin_a/message_bodies:body_(\d+)\b", text, re.M)
    assert listed == [str(n) for n in range(25)]  # every hit still listed, in order
    assert len(text) <= 4_600


def test_fetch_marker_and_field_window_and_records_carry_an_unembeddable_connection() -> None:
    record = {
        "id": "body_1",
        "stream": "message_bodies",
        "connection_id": COLON,
        "data": {"body_text": "z" * 50},
    }
    document = fetch_document(
        record,
        requested_id="message_bodies:body_1",
        ref=RecordRef("message_bodies", "body_1", COLON),
        provider_url=PROVIDER,
        max_text_chars=10,
    )
    assert f'"connection_id":"{COLON}"' in document["text"]
    window = {
        "record": {
            "id": "message_bodies:body_1",
            "connection_id": COLON,
            "stream": "message_bodies",
            "record_id": "body_1",
        },
        "field": {"path": "body_text"},
        "window": {
            "text": "z" * 10,
            "start_chars": 10,
            "end_chars": 20,
            "total_chars": 50,
            "limit_chars": 10,
            "has_more": True,
            "next_offset_chars": 20,
            "previous_offset_chars": 0,
        },
    }
    asked = parse_read_record_field(
        {"id": "message_bodies:body_1", "connection_id": COLON, "field": "body_text"}
    )
    text = render_field_window(asked, ToolResult(window))
    for line in text.splitlines():
        if line.startswith(("next:", "previous:")):
            assert f'"connection_id":"{COLON}"' in line
    page = {"data": {"data": [{**record, "data": {"body_text": "y" * 500}}], "has_more": False}}
    text = render_records(parse_query_records({"stream": "message_bodies"}), ToolResult(page))
    assert f"message_bodies:body_1 connection_id={COLON}" in text
    hint = next(line for line in text.splitlines() if "read_record_field" in line)
    assert f'"connection_id":"{COLON}"' in hint
    assert parse_handle("message_bodies:body_1").connection_id is None  # hence the separate argument
