"""A hit whose long text a page shows only in part offers that text whole, pinned at the level
of the answer text over the sandbox's fresh corpus, in questions of our own.

The windows a page shows of a hit are the sentences the scorer judged best. When they miss the
answer, the read around them seldom finds it; the whole text does, wherever it is. So a hit shown
in part offers its ``fetch`` above its windows, with the text's length (and how much of it a
fetch shows), and the first call a page spells out is its best hit's; a window's own read is
offered only past what a fetch shows. A hit shown whole offers none, and the page's closing line
then gives its fetch as the example."""

from __future__ import annotations

import re
from typing import Any

import orjson

from pdpp_gateway.documents import FETCH_TEXT_CHARS
from pdpp_gateway.marks import parse_marks
from tests.tools.calls import call_tool

POLICY = "cin_mail_home/message_bodies:hb_0008"  # a travel policy mailed whole: 14,542 characters
CALL = re.compile(r"\b(fetch|read_record_field|query_records) (\{.*?\})$", re.M)


def _spelled(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(tool, orjson.loads(arguments)) for tool, arguments in CALL.findall(text)]


async def test_a_long_text_shown_in_part_offers_its_fetch_first(shared_sandbox: Any) -> None:
    asked = "does the travel cover pay for a relative to fly out if one of us stays in hospital"
    page = await call_tool(shared_sandbox, "search", {"query": asked}, token="client_life")
    best = page.structured["results"][0]
    assert best["id"] == POLICY
    assert any("read" in item for item in best["evidence"])  # shown in part
    text = page.text or ""
    calls = _spelled(text)
    assert calls[0] == ("fetch", {"id": POLICY})
    assert f"its whole text (14,542 chars; fetch shows its first {FETCH_TEXT_CHARS:,})" in text
    assert text.count('fetch {"id":"' + POLICY + '"}') == 1  # not again as the example
    assert not [
        arguments for tool, arguments in calls if tool == "read_record_field" and arguments["id"] == POLICY
    ]

    fetched = await call_tool(shared_sandbox, "fetch", calls[0][1], token="client_life")
    whole = " ".join(str(fetched.structured["text"]).split())
    for item in best["evidence"]:  # it holds every window the page showed, and the text around them
        assert " ".join(parse_marks(item["preview"])[0].strip("…").split()) in whole
        read = item["read"]["arguments"]
        assert read["offset_chars"] + read["limit_chars"] <= FETCH_TEXT_CHARS


async def test_a_window_past_what_a_fetch_shows_keeps_its_read(shared_sandbox: Any) -> None:
    asked = "how is our personal data used by the insurance company"
    page = await call_tool(shared_sandbox, "search", {"query": asked}, token="client_life")
    best = page.structured["results"][0]
    assert best["id"] == POLICY
    reads = [item["read"]["arguments"] for item in best["evidence"]]
    past = [read for read in reads if read["offset_chars"] + read["limit_chars"] > FETCH_TEXT_CHARS]
    within = [read for read in reads if read not in past]
    assert past  # one window past the fetch's reach
    assert within  # and one in it
    calls = _spelled(page.text or "")
    assert calls[0] == ("fetch", {"id": POLICY})
    offered = [arguments for tool, arguments in calls if tool == "read_record_field"]
    assert all(read in offered for read in past)
    assert not any(read in offered for read in within)


async def test_a_text_shown_whole_offers_no_fetch_of_its_own(shared_sandbox: Any) -> None:
    asked = "where did the shelf with the test phones move to"
    page = await call_tool(shared_sandbox, "search", {"query": asked}, token="client_life")
    text = page.text or ""
    best = page.structured["results"][0]
    if any("read" in item for item in best.get("evidence") or ()):
        raise AssertionError(f"the question's best hit should be shown whole: {text[:600]}")
    assert "its whole text" not in text.split("\n[2]")[0]
    assert text.rstrip().endswith(f"e.g. fetch {orjson.dumps({'id': best['id']}).decode()}")
