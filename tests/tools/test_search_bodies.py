"""A mail's message hit whose long text is its body record shows the body's passage
(``tools.body_link`` through ``tools.search_in_words`` step 3), pinned at the level of the RS
reads made and the answer text a model reads: the body found by the message's opening within
its body stream and connection, proven by the body's own ``message_id`` (never another
message's body), its passage shown naming the body record with a read call that runs as
printed; a grant without a body stream makes no extra read.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.upstreams import Fault, upstream_proxy

GYM = "when does my gym membership renew"  # meaning-based search ranks the message first
GYM_FACT = "Your gym membership renews on 1 June at 39 EUR a month."
STORAGE = "how do I get into the storage place"  # a filler message ranks first
GYM_BODY = "cin_mail_work/message_bodies:body_gym"


async def _ask(sandbox: Any, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call through the gateway's pipeline, the sandbox's log of RS calls cleared first."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens[token]), sandbox.url)
        sandbox.calls.clear()
        return await build_pipeline()(ToolCall(tool, arguments, context))


def _reads(sandbox: Any) -> list[tuple[str, dict[str, list[str]]]]:
    """The RS reads made since the log was cleared: (path, query parameters)."""
    return [(call.path, parse_qs(call.query)) for call in sandbox.calls]


def _printed_read(text: str, record: str) -> dict[str, Any]:
    """The read_record_field call the text prints after the evidence of ``record``, as a model
    would copy it."""
    lines = text.splitlines()
    (at,) = [n for n, line in enumerate(lines) if f"of body record {record} (passage at char" in line]
    call = lines[at + 1].strip()
    assert call.startswith("read more: read_record_field {"), call
    arguments: dict[str, Any] = json.loads(call.removeprefix("read more: read_record_field "))
    return arguments


async def test_a_message_hit_shows_its_body_s_passage_with_a_read_that_lands_on_it(
    shared_sandbox: Any,
) -> None:
    result = await _ask(shared_sandbox, "client_broad", "search", {"query": GYM})
    reads = _reads(shared_sandbox)
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/messages:msg_long_gym"
    assert first["stream"] == "messages"
    # the body: the message's opening read, searched within the body stream and the message's
    # connection, each candidate's own message_id read, then the body's text for the passage
    paths = [path for path, _ in reads]
    lookup = reads[paths.index("/v1/streams/messages/records/msg_long_gym/field-window") :]
    assert lookup[0][1] == {
        "connection_id": ["cin_mail_work"],
        "field": ["snippet"],
        "offset_chars": ["0"],
        "limit_chars": ["512"],
    }
    assert lookup[1][0] == "/v1/search"
    assert lookup[1][1]["streams"] == ["message_bodies"]
    assert lookup[1][1]["connection_id"] == ["cin_mail_work"]
    # the opening's content words; its last, "price", is "prices" cut off by the snippet
    assert lookup[1][1]["q"] == ["Hi membership coming renewal find plan new"]
    assert lookup[2] == (
        "/v1/streams/message_bodies/records/body_gym",
        {"fields": ["message_id"], "connection_id": ["cin_mail_work"]},
    )
    window = "/v1/streams/message_bodies/records/body_gym/field-window"
    assert [(path, query["offset_chars"]) for path, query in lookup[3:]] == [(window, ["0"])]
    # the passage, in the message hit's evidence, naming the body record
    evidence = first["evidence"][0]
    assert evidence["record"] == GYM_BODY
    assert evidence["field"] == "body_text"
    assert evidence["at_chars"] > 10_000  # deep in the body, past its opening
    assert "39 EUR" in evidence["preview"]
    assert (
        f"evidence body_text of body record {GYM_BODY} (passage at char {evidence['at_chars']}" in result.text
    )
    assert "no text evidence" not in result.text.split("[2]")[0]
    # the read call, run as printed, returns the window holding the fact
    arguments = _printed_read(result.text, GYM_BODY)
    assert arguments["id"] == GYM_BODY
    read = await _ask(shared_sandbox, "client_broad", "read_record_field", arguments)
    assert not read.is_error, read.text
    assert GYM_FACT in read.structured["window"]["text"]
    assert GYM_FACT in read.text


async def test_another_message_s_body_holding_the_same_words_is_never_shown(shared_sandbox: Any) -> None:
    result = await _ask(shared_sandbox, "client_broad", "search", {"query": STORAGE})
    reads = _reads(shared_sandbox)
    first = result.structured["results"][0]
    # a filler message titled as the storage unit's mail, matched on its subject: the words of
    # its opening (its snippet) are all in other messages' bodies, ranked before its own
    assert first["id"] == "cin_mail_personal/messages:msg_personal_0006"
    (search,) = [query for path, query in reads if path == "/v1/search" and "streams" in query]
    assert search["streams"] == ["message_bodies"]
    assert search["connection_id"] == ["cin_mail_personal"]
    verified = sorted(path for path, query in reads if path.startswith("/v1/streams/message_bodies/records/"))
    # the candidate's own message_id was read: it is another message's body, so it is neither
    # read for a passage (no field-window read of it) nor shown
    assert verified == ["/v1/streams/message_bodies/records/body_personal_0031"]
    assert not first["evidence"]
    block = result.text.split("\n[1] ")[1].split("\n[2] ")[0]  # the first hit's lines
    assert "body_personal_0031" not in block
    assert "no text evidence" in block  # the hit as it was: nothing read for it is shown


async def test_a_grant_without_a_body_stream_makes_no_extra_read(shared_sandbox: Any) -> None:
    result = await _ask(shared_sandbox, "client_narrow", "search", {"query": GYM})  # messages only
    reads = _reads(shared_sandbox)
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/messages:msg_long_gym"
    assert not first["evidence"]
    assert "no text evidence" in result.text.split("[2]")[0]
    # the question's searches and the schema only: no record read, no restricted search
    assert {path for path, _ in reads} <= {
        "/v1/search",
        "/v1/search/hybrid",
        "/v1/schema",
        "/.well-known/oauth-protected-resource",
    }
    assert not any("streams" in query for _, query in reads)


class _RefusesBodyRecords(Fault):
    """The RS failing every read of one body record but its text windows: the verify read."""

    async def answer(self, request: web.Request) -> web.StreamResponse | None:
        if request.path == "/v1/streams/message_bodies/records/body_gym":
            return await super().answer(request)
        return None


async def test_a_failed_verify_read_leaves_the_hit_as_it_was(shared_sandbox: Any) -> None:
    fault = _RefusesBodyRecords("status", 500)
    async with upstream_proxy(shared_sandbox.url, fault=fault) as proxy, RsClient(proxy.url) as rs:
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), proxy.url)
        result = await build_pipeline()(ToolCall("search", {"query": GYM}, context))
    assert "/v1/streams/message_bodies/records/body_gym" in proxy.paths()  # the verify read failed
    assert not result.is_error, result.text
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/messages:msg_long_gym"
    assert not first["evidence"]  # not the body's passage: its owner could not be proven
    assert "no text evidence (matched subject, snippet)" in result.text.split("\n[2] ")[0]
