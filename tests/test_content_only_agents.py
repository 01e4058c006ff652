"""Scripted agents that read ONLY content[] text (never structuredContent) and still finish.

``TextOnly`` wraps the real SDK client over the real stdio gateway and hands the agent
nothing but the text of each result, the way hosts that hide structured output do. Every
handle the agent uses next is parsed out of that text.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from mcp import Client

pytestmark = pytest.mark.asyncio(loop_scope="module")


class TextOnly:
    """The agent's whole view of the gateway: tool name + arguments in, text out."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.calls: list[str] = []
        self.read_windows: list[str] = []

    async def __call__(self, tool: str, **arguments: Any) -> str:
        self.calls.append(tool)
        result = await self._client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        text = result.content[0].text  # type: ignore[union-attr]
        if tool == "read_record_field":
            self.read_windows.append(text.split("\n---\n", 1)[1])
        return text


def _json_after(label: str, text: str) -> dict[str, Any]:
    match = re.search(re.escape(label) + r" (\{.*?\})(?:\n|$)", text)
    assert match, f"no {label!r} arguments in:\n{text[:1500]}"
    parsed: dict[str, Any] = orjson.loads(match.group(1))
    return parsed


async def test_content_only_agent_walks_the_whole_read_journey(stdio_gateway: Client) -> None:
    agent = TextOnly(stdio_gateway)

    index = await agent("schema")
    mail = re.search(r"^gmail: connections (\S+) \(Work\)", index, re.M)
    assert mail, index
    work = mail.group(1)
    assert re.search(r"streams: messages \(\d+\)", index)

    detail = await agent("schema", stream="messages", connection_id=work)
    assert re.search(r"received_at\[[^\]]*r=gte", detail)  # enough to build a range filter
    time_field = re.search(r"group_by_time=(\w+)", detail)
    assert time_field, detail

    first = await agent(
        "query_records",
        stream="messages",
        connection_id=work,
        limit=3,
        filter={"received_at": {"gte": "2025-06-01T00:00:00Z"}},
    )
    cursor = re.search(r"^next_cursor=(\S+)", first, re.M)
    assert cursor, first
    second = await agent(
        "query_records",
        stream="messages",
        connection_id=work,
        limit=3,
        filter={"received_at": {"gte": "2025-06-01T00:00:00Z"}},
        cursor=cursor.group(1),
    )
    handles = lambda text: set(re.findall(r"^\[\d\] (\S+)", text, re.M))  # noqa: E731
    assert handles(first)
    assert handles(second)
    assert handles(first).isdisjoint(handles(second))

    hits = await agent("search", query="invoice consulting", limit=5)
    hit = re.search(r"^\[1\] id=(\S+)", hits, re.M)
    assert hit, hits
    document = orjson.loads(await agent("fetch", id=hit.group(1)))
    assert document["id"] == hit.group(1)
    assert document["title"]

    # a subject shown whole offers no read; a passage of a long body offers the read around it
    assert "read more:" not in hits
    passages = await agent("search", query="booking confirmation code", limit=5)
    window = await agent("read_record_field", **_json_after("read more: read_record_field", passages))
    assert "chars" in window.splitlines()[0]
    assert "QX7P2M" in window

    counts = await agent(
        "aggregate",
        stream="messages",
        connection_id=work,
        metric="count",
        group_by_time=time_field.group(1),
        granularity="quarter",
    )
    assert re.search(r"\d{4}-\d{2}-\d{2}=\d+", counts)
    assert "other_count=" in counts
    assert agent.calls == [
        "schema",
        "schema",
        "query_records",
        "query_records",
        "search",
        "fetch",
        "search",
        "read_record_field",
        "aggregate",
    ]


# (question, search query, key words, answer). Every key word occurs several times in the
# long body, first far from the answer: a window at a key word's first occurrence does not
# answer, only the window at the previewed match does (asserted below, outside the agent).
QUESTIONS = [
    (
        "How much is the security deposit for the Lisbon apartment?",
        "Lisbon apartment deposit",
        ("deposit", "lisbon apartment"),
        "1,850 EUR",
    ),
    (
        "What is the locker code of the storage unit?",
        "storage unit locker code",
        ("locker code", "storage unit"),
        "4417-B",
    ),
    (
        "What is the Porto booking confirmation code?",
        "Porto booking confirmation code",
        ("porto", "booking", "confirmation"),
        "QX7P2M",
    ),
]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


@pytest.mark.parametrize(("question", "query", "key_words", "answer"), QUESTIONS)
async def test_evidence_agent_answers_from_long_bodies_without_fetch(
    stdio_gateway: Client, question: str, query: str, key_words: tuple[str, ...], answer: str
) -> None:
    agent = TextOnly(stdio_gateway)
    hits = await agent("search", query=query, limit=5)
    arguments = _json_after("read more: read_record_field", hits)
    window = await agent("read_record_field", **arguments)
    header = window.splitlines()[0]
    total = int(re.search(r"of (\d+)", header).group(1))  # type: ignore[union-attr]
    assert total > 10_000  # the body is long: the answer came from a bounded window, not the record
    # The agent's quote: the first sentence of a window it read that has every key word.
    quote = next(
        (
            sentence
            for text in agent.read_windows
            for sentence in _sentences(text)
            if all(word in sentence.lower() for word in key_words)
        ),
        None,
    )
    assert quote is not None, f"{question}: no sentence with {key_words} in the windows read"
    assert answer in quote
    assert any(quote in text for text in agent.read_windows)  # verbatim in a window it read
    assert "fetch" not in agent.calls

    # Not circular: each key word recurs in the body, and the window at its FIRST occurrence
    # (what a read-more built from the bare matched term lands on) does not hold the answer.
    for word in key_words:
        naive = await stdio_gateway.call_tool(
            "read_record_field",
            {
                "id": arguments["id"],
                "field": arguments["field"],
                "q": word,
                "before_chars": 300,
                "after_chars": 300,
            },
        )
        assert not naive.is_error, naive.content
        assert answer not in naive.structured_content["window"]["text"], word
