"""Words no record holds together are searched apart, pinned at the level of the answer text over
the sandbox's fresh corpus, in questions of our own.

The RS's lexical search wants every word of its query. A fused search asks it for the question's
two most distinctive words together beside the meaning-based search; when they never meet in one
record ("bibs" is in the mail about Sunday football, which never says "football"), that list was
empty and the lexical side of the page was lost. Now each word is searched alone and the two lists,
interleaved, stand in the pair's place: one lexical list beside the meaning's, as before. A
package member's empty list says the words are in another source, so members never do this."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import life_package
from tests.tools.calls import call_tool

FOOTBALL = "cin_mail_home/message_bodies:hb_0016"  # Sunday football: the pitch, bibs duty, money owed


def _lexical_queries(sandbox: Any) -> list[str]:
    return [parse_qs(call.query)["q"][0] for call in sandbox.calls if call.path == "/v1/search"]


async def test_a_pair_no_record_holds_is_searched_word_by_word(shared_sandbox: Any) -> None:
    page = await call_tool(
        shared_sandbox, "search", {"query": "who is doing bibs this week at football"}, token="client_life"
    )
    text = page.text or ""
    assert page.structured["results"][0]["id"] == FOOTBALL
    assert "Sam, you're on <mark>bibs</mark> duty this <mark>week</mark>" in text
    assert 'lexical "bibs football" (0) + lexical "bibs" (1) + lexical "football" (' in text
    assert 'page its lexical hits with search {"query":"bibs","mode":"lexical"}' in text  # not the empty pair
    assert sorted(_lexical_queries(shared_sandbox)) == ["bibs", "bibs football", "football"]


async def test_a_pair_a_record_holds_is_not_searched_apart(shared_sandbox: Any) -> None:
    page = await call_tool(
        shared_sandbox,
        "search",
        {"query": "what does the travel insurance cover if our baggage is delayed"},
        token="client_life",
    )
    assert 'lexical "insurance baggage" (1) + hybrid on the question' in (page.text or "")
    assert _lexical_queries(shared_sandbox) == ["insurance baggage"]


async def test_a_package_member_does_not_search_apart(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        package = life_package(rs, shared_sandbox.tokens, shared_sandbox.url)
        shared_sandbox.calls.clear()
        result = await build_pipeline()(
            ToolCall("search", {"query": "who is doing bibs this week at football"}, package)
        )
    assert not result.is_error, result.text
    assert set(_lexical_queries(shared_sandbox)) == {"bibs football"}  # once per member
