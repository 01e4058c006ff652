"""A mail's message hit is a preview of a long body: the question finds the body that answers
(``retrieval.body_search`` through ``retrieval.search`` step 3), pinned at the level of the RS
reads made and the answer text a model reads: one meaning-based search of the body streams on
the question (within the caller's streams and connection), the best body read for its passage
and shown at the message's rank, with a read call that runs as printed; when one read of its
link shows it is that message's own, the two are one hit; it is found even in another
connection than the message's, when filler messages share its subject (and stays a hit of its
own); a grant without a body stream, or a search that fails, changes nothing. The fold of a
message with a body the page already shows (``retrieval.linked_hits``, which makes this search
needless: ``tests/tools/test_linked_hits.py``) is off here, and so is the search of a pair's words
one by one (``retrieval.fused``: it finds these bodies by a word of the question), so the body
search is what is seen.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.retrieval import linked_hits
from pdpp_gateway.retrieval.body_search import BODY_CANDIDATES
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.tools.calls import without_words_apart
from tests.upstreams import Fault, upstream_proxy

GYM = "when does my gym membership renew"  # meaning-based search ranks the message first
GYM_FACT = "Your gym membership renews on 1 June at 39 EUR a month."
GYM_BODY = "cin_mail_work/message_bodies:body_gym"
PORTO = "confirmation number for my trip to Porto"  # filler messages share the mail's subject
BODY_SEARCH = "/v1/search/hybrid"


@pytest.fixture(autouse=True)
def _no_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linked_hits, "HEADS", 0)
    without_words_apart(monkeypatch)


async def _ask(sandbox: Any, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call through the gateway's pipeline, the sandbox's log of RS calls cleared first."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens[token]), sandbox.url)
        sandbox.calls.clear()
        return await build_pipeline()(ToolCall(tool, arguments, context))


def _reads(sandbox: Any) -> list[tuple[str, dict[str, list[str]]]]:
    """The RS reads made since the log was cleared: (path, query parameters)."""
    return [(call.path, parse_qs(call.query)) for call in sandbox.calls]


def _body_searches(reads: list[tuple[str, dict[str, list[str]]]]) -> list[dict[str, list[str]]]:
    return [
        query for path, query in reads if path == BODY_SEARCH and "message_bodies" in query.get("streams", ())
    ]


def _printed_read(text: str, record: str) -> dict[str, Any]:
    """The read_record_field call the text prints after the passage of hit ``record``, as a
    model would copy it."""
    block = text.split(f"] id={record} ")[1].split("\n[")[0]
    call = next(line.strip() for line in block.splitlines() if "read more: read_record_field {" in line)
    arguments: dict[str, Any] = json.loads(call.removeprefix("read more: read_record_field "))
    return arguments


async def test_the_question_finds_the_message_s_own_body_and_shows_them_as_one_hit(
    shared_sandbox: Any,
) -> None:
    result = await _ask(shared_sandbox, "client_broad", "search", {"query": GYM})
    reads = _reads(shared_sandbox)
    # one search of the body stream on the question as asked, in every connection, then the
    # body's text for the passage and its link to its message: no read of the message's opening
    (search,) = _body_searches(reads)
    assert search == {"q": [GYM], "streams": ["message_bodies"], "limit": [str(BODY_CANDIDATES)]}
    after = reads[[query for _, query in reads].index(search) + 1 :]
    assert sorted((path, query.get("fields")) for path, query in after) == [
        ("/v1/streams/message_bodies/records/body_gym", ["message_id"]),
        ("/v1/streams/message_bodies/records/body_gym/field-window", None),
    ]
    # the link names the message ranked first: the body takes its place and its subject, and the
    # message, whose fetch would answer its first line again, leaves the page
    ids = [hit["id"] for hit in result.structured["results"]]
    assert ids[0] == GYM_BODY
    assert "cin_mail_work/messages:msg_long_gym" not in ids
    first = result.structured["results"][0]
    assert first["body_of"] == "cin_mail_work/messages:msg_long_gym"
    assert "belongs to cin_mail_work/messages:msg_long_gym" in result.text.split("\n[2] ")[0]
    evidence = first["evidence"][0]
    assert evidence["provenance"] == "passage"
    assert evidence["at_chars"] > 10_000  # deep in the body, past its opening
    assert "39 EUR" in evidence["preview"]
    searched = result.structured["retrieval"]["searched"]
    assert {
        "mode": "hybrid",
        "query": GYM,
        "streams": ["message_bodies"],
        "hits": BODY_CANDIDATES,
    } in searched
    assert (
        f"message_bodies by hybrid for a short hit's long text ({BODY_CANDIDATES}, the best at that hit's rank)"
        in result.text
    )
    # the body's opening is no snippet line of its own: its passage is shown
    assert "snippet: Hi, your membership" not in result.text
    # the read call, run as printed, returns the window holding the fact
    arguments = _printed_read(result.text, GYM_BODY)
    assert arguments["id"] == GYM_BODY
    read = await _ask(shared_sandbox, "client_broad", "read_record_field", arguments)
    assert not read.is_error, read.text
    assert GYM_FACT in read.structured["window"]["text"]
    assert GYM_FACT in read.text


async def test_a_body_in_another_connection_answers_when_filler_messages_share_the_subject(
    shared_sandbox: Any,
) -> None:
    result = await _ask(shared_sandbox, "client_broad", "search", {"query": PORTO})
    hits = result.structured["results"]
    # a filler message of the Personal mail ranks first; the mail that answers is in Work
    assert hits[1]["id"] == "cin_mail_personal/messages:msg_personal_0000"
    assert hits[0]["id"] == "cin_mail_work/message_bodies:body_porto_trip"
    assert "QX7P2M" in hits[0]["evidence"][0]["preview"]
    assert "QX7P2M" in result.text.split("\n[2] ")[0]
    assert len(hits) == 10  # the body took a place in the page: still ten hits
    assert result.structured["data"]["has_more"] is True
    assert len({hit["id"] for hit in hits}) == len(hits)  # each record once


async def test_the_caller_s_streams_and_connection_bound_the_body_search(shared_sandbox: Any) -> None:
    only_messages = await _ask(
        shared_sandbox, "client_broad", "search", {"query": GYM, "streams": ["messages"]}
    )
    assert not _body_searches(_reads(shared_sandbox))  # the caller did not ask for bodies
    assert all(hit["stream"] == "messages" for hit in only_messages.structured["results"])
    within = await _ask(
        shared_sandbox, "client_broad", "search", {"query": GYM, "connection_id": "cin_mail_work"}
    )
    (search,) = _body_searches(_reads(shared_sandbox))
    assert search["connection_id"] == ["cin_mail_work"]
    assert within.structured["results"][0]["id"] == GYM_BODY


async def test_a_grant_without_a_body_stream_makes_no_extra_read(shared_sandbox: Any) -> None:
    result = await _ask(shared_sandbox, "client_narrow", "search", {"query": GYM})  # messages only
    reads = _reads(shared_sandbox)
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/messages:msg_long_gym"
    assert not first["evidence"]
    assert "no text evidence" in result.text.split("[2]")[0]
    # the question's searches, the schema and the hits' own text windows: no body search, no
    # record read for a body
    assert {path for path, _ in reads if not path.endswith("/field-window")} <= {
        "/v1/search",
        "/v1/search/hybrid",
        "/v1/schema",
        "/.well-known/oauth-protected-resource",
    }
    assert not any("streams" in query for _, query in reads)


class _RefusesBodySearch(Fault):
    """The RS failing the search restricted to the body streams, and only it."""

    async def answer(self, request: web.Request) -> web.StreamResponse | None:
        if request.path == BODY_SEARCH and "message_bodies" in request.query.getall("streams", ()):
            return await super().answer(request)
        return None


async def test_a_failed_body_search_leaves_the_hits_as_they_were(shared_sandbox: Any) -> None:
    fault = _RefusesBodySearch("status", 500)
    async with upstream_proxy(shared_sandbox.url, fault=fault) as proxy, RsClient(proxy.url) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), proxy.url)
        result = await build_pipeline()(ToolCall("search", {"query": GYM}, context))
    assert proxy.paths().count(BODY_SEARCH) == 2  # the question's own, and the failed one
    assert not result.is_error, result.text
    # the question's own meaning search found the body: the page answers all the same
    ids = [hit["id"] for hit in result.structured["results"]]
    assert ids[:2] == ["cin_mail_work/message_bodies:body_gym", "cin_mail_work/messages:msg_long_gym"]
    assert "1 June" in result.text.split("\n[2] ")[0]
