"""Every aimed ``near`` read a search offers can work, pinned at the level of the answer text over
the sandbox's fresh corpus (dev questions of ``benchmarks/questions_fresh.json``; the test split
stays unread): it is offered only on a text longer than what the page shows of it, aimed with the
question's most distinctive words (not the whole question), and the read it spells out answers a
window that holds the sentence it chose whole, never ``words_not_found`` on a paraphrase."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import sentences
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline

FRESH = Path(__file__).resolve().parents[2] / "benchmarks" / "questions_fresh.json"
ASKED = [
    item["q"] for item in json.loads(FRESH.read_text(encoding="utf-8"))["questions"] if item["split"] == "dev"
][:24]


async def test_every_near_read_offered_is_aimed_and_lands_on_a_whole_sentence(shared_sandbox: Any) -> None:
    pipeline = build_pipeline()
    offered = 0
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_life"]), shared_sandbox.url)
        for asked in ASKED:
            result = await pipeline(ToolCall("search", {"query": asked}, context))
            for hit in result.structured["results"]:
                near = hit.get("read_near")
                if near is None:
                    continue
                offered += 1
                arguments = near["arguments"]
                assert arguments["near"] == " ".join(Question.parse(asked).distinctive())
                assert arguments["near"] != asked
                assert not any(
                    item.get("provenance") == "meaning_match" for item in hit.get("evidence") or ()
                )
                read = await pipeline(ToolCall("read_record_field", arguments, context))
                assert not read.is_error, read.text
                window = read.structured["window"]
                assert window["total_chars"] > len(str(hit.get("snippet") or "").strip("…"))
                text, start = window["text"], window["start_chars"]
                first, last = window["match_start_chars"] - start, window["match_end_chars"] - start
                assert 0 <= first < last <= len(text)
                assert (first, last) in sentences(text) or text[first:last] in {
                    text[a:b] for a, b in sentences(text)
                }
    assert offered >= 5  # the corpus offers enough aimed reads for the rule to be tried
