"""A package's page is ordered by one relevance judge for every source (``package.search``): a
relevant hit of a later member outranks an unrelated first hit of an earlier one, and the text
says how the page was ordered. A pinned mode keeps the round-robin (RS scores of different
sources are not comparable)."""

from __future__ import annotations

from typing import Any

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import life_package, mail_and_chat, members_alone

LUNCH = "where r we going for the team lunch on friday?"  # the answer is a Slack message


async def test_a_relevant_hit_of_the_second_member_leads_the_page(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = mail_and_chat(rs, rs, shared_sandbox.tokens, shared_sandbox.url)
        result = await build_pipeline()(ToolCall("search", {"query": LUNCH}, context))
        pinned = await build_pipeline()(ToolCall("search", {"query": LUNCH, "mode": "hybrid"}, context))
    assert not result.is_error, result.text
    hits = result.structured["results"]
    # the mail member is first in member order; its hits are unrelated office chatter
    assert hits[0]["connection_id"] == "cin_slack_acme"
    assert "Tasca do Chico" in result.text.split("\n[2] ")[0]
    scores = [hit["relevance"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    package = result.structured["data"]["meta"]["package"]
    assert package["order"] == "relevance"
    assert "Ordered by best sentence and search rank, one judge for every source." in result.text
    assert "order: " not in result.text  # the fused line says it; the round-robin line is for a pinned mode
    assert "next_cursor" not in result.structured["data"]  # a fused page does not page on
    # a pinned mode's page: each member's own rank, taken in turn, member order first
    assert pinned.structured["data"]["meta"]["package"]["order"] == "round_robin_by_child_rank"
    assert pinned.structured["results"][0]["connection_id"] == "cin_mail_work"
    assert "order: round-robin by each source's own rank" in (pinned.text or "")


async def test_a_fused_package_page_says_what_every_source_found(shared_sandbox: Any) -> None:
    # the first member (Home mail) holds no record with the question's fewer words; the code
    # member does: the page's account of its searches counts every member's hits, not the first's
    question = "how was the reconnect backoff of the docks fixed"
    pipeline = build_pipeline()
    async with RsClient(shared_sandbox.url) as rs:
        package = life_package(rs, shared_sandbox.tokens, shared_sandbox.url)
        result = await pipeline(ToolCall("search", {"query": question}, package))
        alone = [
            await pipeline(ToolCall("search", {"query": question, "limit": 3}, member_context))
            for member_context in members_alone(rs, shared_sandbox.tokens, shared_sandbox.url)
        ]
    assert not result.is_error, result.text
    searched = result.structured["retrieval"]["searched"]
    (lexical,) = [entry for entry in searched if entry["mode"] == "lexical"]
    counts = [
        next(
            entry["hits"] for entry in each.structured["retrieval"]["searched"] if entry["mode"] == "lexical"
        )
        for each in alone
    ]
    assert counts[0] == 0
    assert lexical["hits"] == sum(counts) > 0
    assert f'lexical "{lexical["query"]}" ({sum(counts)})' in (result.text or "")
    threads = [entry for entry in searched if entry["mode"] == "thread"]
    assert len(threads) <= 1  # the members' threads read, on one account
    if threads:
        assert "each source's first hit's threads in" in (result.text or "")
