"""In a package, "no record holds every word of the question" is decided package-wide
(``package.first_pages``): a member whose first lexical page is empty (or holds a two-word
question's words only apart) searches by meaning only when every member's page is so. Both
members are real grants on a real sandbox (the Work mail and the Acme Slack), called through the
real pipeline; the RS reads each made are counted by the sandbox, by token.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.package.first_pages import FirstPages
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import mail_and_chat
from tests.upstreams import Fault, upstream_proxy

LUNCH = "where are we having the team lunch on Friday"  # the words are in a Slack message only
LUNCH_FACT = "Tasca do Chico"
GYM = "when does my gym membership renew"  # no record of either member holds every word


async def _ask(sandbox: Any, question: str) -> tuple[Any, dict[str, list[str]]]:
    """The package's answer, and the RS paths each member's token read."""
    async with RsClient(sandbox.url) as mail, RsClient(sandbox.url) as chat:
        context = mail_and_chat(mail, chat, sandbox.tokens, sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall("search", {"query": question}, context))
    reads: dict[str, list[str]] = {}
    for call in sandbox.calls:
        reads.setdefault(call.token_name, []).append(call.path)
    return result, reads


async def test_a_member_whose_page_is_empty_stays_empty_when_another_found_the_words(
    shared_sandbox: Any,
) -> None:
    result, reads = await _ask(shared_sandbox, LUNCH)
    assert not result.is_error, result.text
    # the mail grant read its lexical page, found nothing, and read nothing more: no
    # meaning-based search, no schema, no body beside the Slack message that holds the words
    assert reads["client_work_mail"] == ["/v1/search"]
    assert reads["client_chat"] == ["/v1/search"]
    assert {hit["connection_id"] for hit in result.structured["results"]} == {"cin_slack_acme"}
    assert result.structured["retrieval"]["mode"] == "lexical"
    assert "(fused)" not in result.text.splitlines()[0]
    assert LUNCH_FACT in result.text


async def test_every_member_searches_by_meaning_when_none_found_the_words(shared_sandbox: Any) -> None:
    result, reads = await _ask(shared_sandbox, GYM)
    assert not result.is_error, result.text
    for token in ("client_work_mail", "client_chat"):
        assert reads[token][0] == "/v1/search"
        assert "/v1/search/hybrid" in reads[token], token
    assert result.structured["retrieval"]["mode"] == "fused"
    assert "(fused)" in result.text.splitlines()[0]
    assert "39 EUR" in result.text  # the mail's body, found by meaning
    # about as many approximate hits as one grant's fused page: each member's share of ten
    sources = result.structured["data"]["meta"]["package"]["source_mix"]
    assert [source["count"] for source in sources] == [5, 5]


async def test_a_limit_the_caller_set_is_shared_as_on_any_page(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as mail, RsClient(shared_sandbox.url) as chat:
        context = mail_and_chat(mail, chat, shared_sandbox.tokens, shared_sandbox.url)
        result = await build_pipeline()(ToolCall("search", {"query": GYM, "limit": 16}, context))
    assert len(result.structured["results"]) == 16


class _RefusesSearch(Fault):
    """The RS failing every search of the member that reads through the proxy."""

    async def answer(self, request: web.Request) -> web.StreamResponse | None:
        return await super().answer(request) if request.path.startswith("/v1/search") else None


async def test_a_member_that_fails_its_page_does_not_hold_the_others(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # members may take 30 s, so the others would wait 10 s for a page never reported
    monkeypatch.setenv("PDPP_PACKAGE_MEMBER_SECONDS", "30")
    async with (
        upstream_proxy(shared_sandbox.url, fault=_RefusesSearch("status", 500)) as failing,
        RsClient(shared_sandbox.url) as mail,
        RsClient(failing.url) as chat,
    ):
        context = mail_and_chat(mail, chat, shared_sandbox.tokens, shared_sandbox.url)
        async with asyncio.timeout(8):  # the failed member reported its page: nobody waits for it
            result = await build_pipeline()(ToolCall("search", {"query": GYM}, context))
    assert not result.is_error, result.text
    # the mail grant went on to search by meaning: the failed member counted as no words found
    assert result.structured["retrieval"]["mode"] == "fused"
    assert "39 EUR" in result.text
    (missing,) = result.structured["data"]["unavailable_connections"]
    assert missing["connection_id"] == "cin_slack_acme"


async def test_first_pages_answer_once_every_member_reported_or_the_wait_is_over() -> None:
    pages = FirstPages(3, wait=30)
    pages.report(False)  # a member that failed before its page
    waiting = asyncio.ensure_future(pages.any_found(False))
    await asyncio.sleep(0)
    assert not waiting.done()  # one member has not reported yet
    pages.report(True)
    assert await waiting is True
    assert await FirstPages(2, wait=0.01).any_found(False) is False  # the other never reported


async def test_a_member_meeting_two_words_only_apart_counts_as_finding_none(shared_sandbox: Any) -> None:
    # the mail's only record with "receipt" and "ordered" is a handover note that says them in
    # two sentences: a coincidence, so the package searches by meaning, and the mail's receipts
    # are in the answer beside the note
    result, reads = await _ask(shared_sandbox, "the receipt for something I ordered")
    assert not result.is_error, result.text
    assert "/v1/search/hybrid" in reads["client_work_mail"]
    assert result.structured["retrieval"]["mode"] == "fused"
    ids = [hit["id"] for hit in result.structured["results"]]
    assert "cin_mail_work/message_bodies:body_spare_key" in ids
    assert "Receipt for order 20" in result.text
