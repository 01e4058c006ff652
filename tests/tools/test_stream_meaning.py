"""A stream offered by meaning where words name none, or beside the one they name (``retrieval.stream_hints``).

"How much was my last salary" shares no word with ``pay_statements`` or its fields (gross and
net amounts), and its search's first hit is a pension mail. The stream nearest the question in
meaning is offered as a ready read, which answers as printed. A question about mail, whose
words no stream is near, gets no stream line; a stream words name comes first.
"""

from __future__ import annotations

import json
from typing import Any

from tests.tools.calls import call_tool

SALARY = "how much was my last salary"


async def test_a_question_in_other_words_is_offered_the_stream_nearest_in_meaning(
    shared_sandbox: Any,
) -> None:
    result = await call_tool(shared_sandbox, "search", {"query": SALARY})
    assert all(hit["stream"] != "pay_statements" for hit in result.structured["results"])
    (hint,) = result.structured["stream_hints"]
    assert (hint["stream"], hint["by"], hint["words"]) == ("pay_statements", "meaning", [])
    line = next(line for line in result.text.splitlines() if line.startswith("Structured data may answer"))
    assert line.startswith(
        "Structured data may answer this: stream pay_statements of northstar-hr (Northstar HR) is the "
        "nearest the question in meaning; its records newest first by issued_at: query_records "
    )
    printed = json.JSONDecoder().raw_decode(line, line.index("query_records {") + len("query_records "))[0]
    read = await call_tool(shared_sandbox, "query_records", printed)
    assert read.structured["data"]["data"][0]["data"]["net_amount"] == 3406.0  # the newest payslip


async def test_a_question_no_stream_is_near_gets_no_stream_line(shared_sandbox: Any) -> None:
    for query in ("when do I fly to Lisbon", "anything from the dentist about my next appointment?"):
        result = await call_tool(shared_sandbox, "search", {"query": query})
        assert "stream_hints" not in result.structured, query
        assert "Structured data may answer this" not in (result.text or "")


async def test_words_that_name_a_stream_are_said_as_words(shared_sandbox: Any) -> None:
    result = await call_tool(
        shared_sandbox, "search", {"query": "What was my take-home pay on my most recent payslip?"}
    )
    (hint,) = result.structured["stream_hints"]
    assert "by" not in hint
    assert hint["words"] == ["pay", "payslip"]


async def test_meaning_offers_its_stream_beside_the_one_a_word_names(shared_sandbox: Any) -> None:
    # "recently" names recently_played; "saved" says what was done and names nothing, but the
    # question is nearest saved_tracks in meaning: both are offered, the word's first
    result = await call_tool(shared_sandbox, "search", {"query": "what songs have I saved recently"})
    hints = result.structured["stream_hints"]
    assert [(hint["stream"], hint.get("by")) for hint in hints] == [
        ("recently_played", None),
        ("saved_tracks", "meaning"),
    ]
    assert "stream saved_tracks of spotify (Spotify) is the nearest the question in meaning" in result.text
