"""An RS that publishes no meaning-based search (``pages.meaning_mode`` answers ``None``): a page
that found nothing says which words the gateway searched, offers no search it has just made, and
claims no search by meaning it did not make, pinned at the level of the RS reads and the answer
text."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.retrieval import fused, search
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline


@pytest.fixture
def no_meaning_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    async def none(context: GatewayContext) -> None:
        return None

    monkeypatch.setattr(search, "meaning_mode", none)
    monkeypatch.setattr(fused, "meaning_mode", none)


async def _asked(sandbox: Any, query: str) -> tuple[str, list[str]]:
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall("search", {"query": query}, context))
    assert not result.is_error, result.text
    assert result.structured["results"] == []
    searched = [parse_qs(call.query)["q"][0] for call in sandbox.calls if call.path.startswith("/v1/search")]
    return result.text or "", searched


async def test_an_empty_page_of_the_question_s_words_offers_no_search_it_made(
    shared_sandbox: Any, no_meaning_mode: None
) -> None:
    text, searched = await _asked(shared_sandbox, "where is the zebra giraffe?")
    assert searched == ["zebra giraffe"]
    assert 'Searched the question\'s content words: "zebra giraffe".' in text
    assert "every one in a hit" not in text
    offered = [
        json.loads(line.split("search ", 1)[1].split(";")[0])
        for line in text.splitlines()
        if "search {" in line
    ]
    assert {"query": "zebra giraffe"} not in offered  # the search just made is no next step
    assert "query_records on the likely stream" in text  # what to try instead
    assert "guesses by meaning" not in text  # no hit, and no search by meaning


async def test_an_empty_fused_page_claims_no_search_by_meaning(
    shared_sandbox: Any, no_meaning_mode: None
) -> None:
    text, searched = await _asked(shared_sandbox, "which zebra giraffe lion did we see at the zoo?")
    # every word, then fewer, then each of those alone: no record holds them together
    assert searched == ["zebra giraffe lion see zoo", "zebra giraffe", "zebra", "giraffe"]
    assert "No record holds these words;" in text
    assert "near this meaning" not in text
    assert "guesses by meaning" not in text
