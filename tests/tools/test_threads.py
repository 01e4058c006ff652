"""A hit that heads a thread leads to the part of it that answers, pinned at the level of the
answer text over the sandbox's fresh corpus (dev questions of ``benchmarks/questions_fresh.json``).

An issue is found by its title; the comment that answers shares few of the question's words. The
search reads the comment stream's newest page once and joins the best-answering comment of the
first hit's thread, marked with the thread it belongs to. A chat's post leads the same way to the
reply in its thread, and a question put to an assistant to the turn that answers it. A mail's body
(one record per message) is no thread: it is still found by the body search."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

import pytest
from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.question.asked import Question
from pdpp_gateway.retrieval import threads
from pdpp_gateway.retrieval.linked_streams import ReplyLink, body_streams, reply_link
from pdpp_gateway.retrieval.pages import granted_schema
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.args import parse_search
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.tools.calls import without_words_apart

ISSUE = "cin_github_orbit/issues:OI0004"
COMMENT = "cin_github_orbit/issue_comments:OC0021"
ASKED = "how did priya fix the widget crash on android 14?"
FACT = "PendingIntent.getForegroundService"


async def _search(sandbox: Any, arguments: dict[str, Any], token: str = "client_life") -> ToolResult:
    """One search through the pipeline with ``token``'s grant, the sandbox's log of RS calls
    cleared first."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens[token]), sandbox.url)
        sandbox.calls.clear()
        return await build_pipeline()(ToolCall("search", arguments, context))


def _block(text: str, hit_id: str) -> str:
    """The lines a page shows of one hit, from its row to the next hit's."""
    return text[text.index(f"id={hit_id}") :].split("\n[", 1)[0]


def _joined(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hits a page shows because they belong to its first hit's thread."""
    return [hit for hit in hits if "thread" in (hit.get("found_by") or ())]


def _pages_read(sandbox: Any, stream: str) -> list[list[tuple[str, str]]]:
    """The queries of the search's reads of ``stream``'s records pages, each sorted."""
    return [
        sorted(parse_qsl(call.query))
        for call in sandbox.calls
        if call.path == f"/v1/streams/{stream}/records"
    ]


async def test_an_issue_hit_leads_to_the_comment_that_answers(shared_sandbox: Any) -> None:
    result = await _search(shared_sandbox, {"query": ASKED})
    assert not result.is_error, result.text
    text = result.text or ""
    block = _block(text, COMMENT)
    assert f"in thread {ISSUE}" in block.splitlines()[0]
    assert FACT in block.replace("<mark>", "").replace("</mark>", "")
    assert "the first hit's thread in issue_comments (3 parts judged with the page)" in text
    pages = [
        dict(parse_qsl(call.query))
        for call in shared_sandbox.calls
        if call.path == "/v1/streams/issue_comments/records"
    ]
    assert len(pages) == 1  # one page of the part stream, whatever the number of threads
    assert pages[0]["limit"] == "100"


async def test_a_chat_post_leads_to_the_reply_that_answers(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tomasz offered the rack for €90 in a post; his reply in its thread says 65. No message
    # holds "tomasz sell": the words one by one would lead with every message Tomasz wrote
    without_words_apart(monkeypatch)
    asked, post, reply = (
        "how much did tomasz sell me the bike rack for?",
        "cin_slack_orbit/messages:OM00015",
        "cin_slack_orbit/messages:OM00017",
    )
    result = await _search(shared_sandbox, {"query": asked})
    assert not result.is_error, result.text
    text = (result.text or "").replace("<mark>", "").replace("</mark>", "")
    assert "the first hit's thread in messages (" in text
    block = _block(text, reply)
    assert f"in thread {post}" in block.splitlines()[0]
    assert "yours for 65 euros" in block
    pages = _pages_read(shared_sandbox, "messages")
    assert pages == [  # one page of the stream itself: each message's thread and its text
        sorted(
            [
                ("limit", "100"),
                ("connection_id", "cin_slack_orbit"),
                ("fields", "thread_ts"),
                ("fields", "text"),
            ]
        )
    ]


async def test_a_reply_leads_to_the_other_replies_of_its_thread(shared_sandbox: Any) -> None:
    # the first hit is itself a reply (to "How do I get access to the staging database?"): the
    # thread read is its first message's, and the other replies join the page marked with it
    asked, question = "which teleport role do i need for the staging db", "cin_slack_orbit/messages:OM00006"
    result = await _search(shared_sandbox, {"query": asked})
    assert not result.is_error, result.text
    hits = result.structured["results"]
    assert hits[0]["id"] == "cin_slack_orbit/messages:OM00007"  # the reply that answers
    joined = _joined(hits)
    assert {hit["id"] for hit in joined} >= {"cin_slack_orbit/messages:OM00008"}
    assert {hit["thread_of"] for hit in joined} == {question}
    assert question not in {hit["id"] for hit in joined}  # the first message is no part of its own thread
    assert f"in thread {question}" in (result.text or "")


async def test_a_chat_message_without_replies_adds_no_part_and_says_so(shared_sandbox: Any) -> None:
    asked = "where are we having lunch with the team this friday?"  # a Slack post nobody replied to
    result = await _search(shared_sandbox, {"query": asked}, "client_broad")
    assert not result.is_error, result.text
    assert result.structured["results"][0]["id"] == "cin_slack_acme/messages:M90000"
    assert "the first hit's thread in messages (no part to add)" in (result.text or "")
    assert "0 parts" not in (result.text or "")
    assert not _joined(result.structured["results"])


async def test_a_question_put_to_an_assistant_leads_to_the_turn_that_answers_it(shared_sandbox: Any) -> None:
    # the search finds the person's own question to ChatGPT; the answer is the turn whose
    # parent_id names it, which no search list returned: it joins the page, marked with the question
    asked, question, answer = (
        "what's the best way to run go handlers in parallel",
        "cin_chatgpt/messages:cgm_0039",
        "cin_chatgpt/messages:cgm_0040",
    )
    result = await _search(shared_sandbox, {"query": asked})
    assert not result.is_error, result.text
    hits = result.structured["results"]
    assert hits[0]["id"] == question
    joined = _joined(hits)
    assert [(hit["id"], hit["thread_of"]) for hit in joined] == [(answer, question)]
    text = (result.text or "").replace("<mark>", "").replace("</mark>", "")
    block = _block(text, answer)
    assert f"in thread {question}" in block.splitlines()[0]
    assert "cancelled as soon as **any** function returns a non-nil error" in block
    pages = _pages_read(shared_sandbox, "messages")
    assert pages == [  # one page of the turns: the turn each answers, its text and who wrote it
        sorted(
            [
                ("limit", "100"),
                ("connection_id", "cin_chatgpt"),
                ("fields", "parent_id"),
                ("fields", "content"),
                ("fields", "role"),
            ]
        )
    ]


async def test_an_answer_found_first_leads_to_no_next_question(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the assistant's answer about the rent is found first; the turn that names it is the
    # person's next question ("is it ok to just reply to the agency by email?"): no answer, not joined
    without_words_apart(monkeypatch)  # the fused order's first hit is the answer, as pinned here
    asked, answer, follow_up = (
        "what did chatgpt tell me about the rent going up when we renew",
        "cin_chatgpt/messages:cgm_0026",
        "cin_chatgpt/messages:cgm_0027",
    )
    result = await _search(shared_sandbox, {"query": asked})
    assert not result.is_error, result.text
    hits = result.structured["results"]
    assert hits[0]["id"] == answer
    assert follow_up not in {hit["id"] for hit in _joined(hits)}
    assert "the first hit's thread in messages (no part to add)" in (result.text or "")
    assert len(_pages_read(shared_sandbox, "messages")) == 1  # the page says who wrote each turn


def test_a_reply_names_its_first_message_by_ts_where_the_stream_has_one() -> None:
    def schema(fields: dict[str, str]) -> dict[str, Any]:
        stream = {"name": "messages", "field_capabilities": fields, "expand_capabilities": []}
        connector = {
            "connector_key": "slack",
            "granted_connections": [{"connection_id": "cin_slack"}],
            "streams": [stream],
        }
        return {"object": "schema", "connectors": [connector]}

    sandbox = schema({"id": "t=string", "text": "t=string,role=text,lex", "thread_ts": "t=string,eq"})
    reference = schema(  # the reference's Slack: a ts, and the text flagged as its title
        {
            "ts": "t=string,eq",
            "thread_ts": "t=string|null,eq",
            "subtype": "t=string|null,eq,lex",
            "text": "t=string|null,role=primary-title,eq,lex,sem",
        }
    )
    assert reply_link(sandbox, "messages", "cin_slack") == ReplyLink("thread_ts", None, "text")
    assert reply_link(reference, "messages", "cin_slack") == ReplyLink("thread_ts", "ts", "text")
    assert (
        reply_link(schema({"id": "t=string", "text": "t=string,role=text"}), "messages", "cin_slack") is None
    )
    # a conversation's turns name the turn they answer: the reference's ChatGPT messages, whose
    # content is flagged as their primary title, and the sandbox's, flagged as text
    chatgpt = {
        "id": "t=string,eq",
        "conversation_id": "t=string,eq",
        "parent_id": "t=string|null,eq",
        "role": "t=string|null,role=actor,eq,lex",
        "content": "t=string|null,role=primary-title,eq,lex,sem",
    }
    assert reply_link(schema(chatgpt), "messages", "cin_slack") == ReplyLink(
        "parent_id", None, "content", True, "role"
    )
    sandbox_turns = {
        "id": "t=string",
        "parent_id": "t=string,eq",
        "role": "t=string,role=metadata,eq",
        "content": "t=string,role=text,lex",
    }
    assert reply_link(schema(sandbox_turns), "messages", "cin_slack") == ReplyLink(
        "parent_id", None, "content", True, "role"
    )
    # Slack's replies name their thread's first message: who wrote one does not matter
    assert reply_link(schema({**chatgpt, "thread_ts": "t=string,eq"}), "messages", "cin_slack") == ReplyLink(
        "thread_ts", None, "content"
    )


async def test_a_mail_body_is_no_thread_and_an_issue_comment_stream_is(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        reader = rs.bind(shared_sandbox.tokens["client_life"])
        schema = (await reader.get_json("/v1/schema", [("view", "compact")])).body
    assert [(b.name, b.whole) for b in body_streams(schema, "issues", "cin_github_orbit")] == [
        ("issue_comments", False)
    ]
    mail = body_streams(schema, "messages", "cin_mail_home")
    assert mail
    assert all(body.whole for body in mail)


async def test_a_search_whose_hits_head_no_thread_reads_no_part_page(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_home_mail"]), shared_sandbox.url
        )
        shared_sandbox.calls.clear()
        result = await build_pipeline()(
            ToolCall("search", {"query": "how much did we pay for the travel insurance?"}, context)
        )
    assert not result.is_error, result.text
    assert not [call for call in shared_sandbox.calls if call.path.endswith("/records")]
    assert "in thread " not in (result.text or "")


async def test_a_thread_older_than_the_newest_page_is_said_with_the_search_that_finds_it(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a page of one comment: the newest, which is not of this issue's thread
    monkeypatch.setattr(threads, "THREAD_PAGE", 1)
    pipeline = build_pipeline()
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_life"]), shared_sandbox.url)
        result = await pipeline(ToolCall("search", {"query": ASKED}, context))
        text = result.text or ""
        assert "in thread " not in text
        assert "its parts are older than the newest 1)" in text
        line = next(line for line in text.splitlines() if line.startswith("The first hit's thread is older"))
        call = json.loads(line.split("search ", 1)[1].rsplit(" finds them", 1)[0])
        assert call == {"query": ASKED, "streams": ["issue_comments"]}
        found = await pipeline(ToolCall("search", call, context))  # the call as printed
    assert not found.is_error, found.text
    assert COMMENT in [hit["id"] for hit in found.structured["results"]]


async def test_a_search_scoped_to_other_streams_reads_no_thread(shared_sandbox: Any) -> None:
    result = await _search(shared_sandbox, {"query": ASKED, "streams": ["issues"]})
    assert not result.is_error, result.text
    assert not [call for call in shared_sandbox.calls if call.path == "/v1/streams/issue_comments/records"]
    assert "thread" not in (result.text or "")


def test_the_comment_that_answers_joins_though_longer_ones_repeat_the_question() -> None:
    # five comments repeat "printer", "crash", "laptops"; the short one that says what fixed it
    # shares only "fixed" with the question. Scored each against its own words, it ranked
    # below all five and was left out of the four that join; scored against its thread by the
    # page's judge, where "fixed" is said once, it leads them
    stream = threads.PartStream("issue_comments", "issues", "issue_id", "body", "cin_code")
    texts = [
        "Still seeing the printer crash on the office laptops after the driver update. The crash "
        "happens when printing from the browser. Same crash on three laptops, all on the new driver.",
        "Printer crash again this morning on the reception laptop. The crash log points at the "
        "spooler. Could the driver be the cause of the crash?",
        "I can reproduce the printer crash too: print two pages from the browser and the crash "
        "follows. The driver version on my laptop is the same.",
        "The crash is in the spooler, not the printer. Logs attached from two crashing laptops.",
        "Fixed by rolling the spooler back on every laptop, no crash since.",
        "Adding the finance team: their laptops show the same printer crash after the driver update.",
    ]
    parts = [threads.Part(stream, f"C{number}", "I1", "I1", text) for number, text in enumerate(texts)]
    best = threads._best_parts(Question.parse("what fixed the printer crash on the laptops"), parts)
    assert len(best) == threads.THREAD_PARTS
    assert best[0][0].text.startswith("Fixed by rolling the spooler back")


@pytest.mark.parametrize(
    "asked",
    [
        "what did priya change to stop the widget crashing on android 14",
        "how was the quick ride widget crash resolved",
        "what was done about the foreground service exception from the widget",
    ],
)
async def test_an_issue_first_joins_the_comment_that_answers_in_other_words(
    shared_sandbox: Any, asked: str
) -> None:
    # the mechanism alone, given its first hit: the issue found by its title heads the page, and
    # whatever words the question uses, the comment that names the fix joins it, marked with
    # the issue (which hit comes first is the fused order's business, not this step's; which
    # window of the comment is shown, the scorer's)
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_life"]), shared_sandbox.url)
        found = await build_pipeline()(
            ToolCall(
                "search", {"query": "home screen widget", "mode": "lexical", "streams": ["issues"]}, context
            )
        )
        hits = [hit for hit in found.structured["results"] if hit["id"] == ISSUE]
        assert hits, found.text
        searched: list[dict[str, Any]] = []
        schema = await granted_schema(context)
        await threads.add_thread_parts(context, hits, parse_search({"query": asked}), schema, searched)
    assert hits[0]["id"] == ISSUE
    joined = {hit["id"]: hit for hit in _joined(hits)}
    assert COMMENT in joined
    assert joined[COMMENT]["thread_of"] == ISSUE
    assert searched == [{"mode": "thread", "streams": ["issue_comments"], "hits": len(joined)}]
