"""A question asking who sent something, or when it came, shows where the answer's first hit comes
from (``retrieval.hit_origin`` through ``retrieval.search``): a mail's message its own sender and
date, a mail's body the message it belongs to (subject, sender, date), pinned at the level of the
RS reads and the answer text; any other question reads nothing more. ``retrieval.linked_streams``
finds these fields by the roles a schema declares, in this gateway's flags and in the reference's
vocabulary, and never by a field's name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.retrieval.linked_streams import body_streams, origin_fields, parent_link
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.upstreams import Fault, upstream_proxy

LEASE = "who sent the Lisbon lease"  # many messages carry that subject
GYM = "who sent me the membership renewal"  # the body ranks first, its message second
GYM_MESSAGE = "/v1/streams/messages/records/msg_long_gym"
CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "rs"


async def _ask(
    sandbox: Any, query: str, rs_url: str | None = None
) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    async with RsClient(rs_url or sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall("search", {"query": query}, context))
    return result, [(call.path, parse_qs(call.query)) for call in sandbox.calls]


async def test_a_body_hit_shows_the_mail_it_belongs_to_when_asked_who_sent_it(shared_sandbox: Any) -> None:
    result, reads = await _ask(shared_sandbox, GYM)
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_gym"
    # the body's message_id, then that message's subject, sender and date: two reads
    records = [(path, query) for path, query in reads if "/records/" in path and "field-window" not in path]
    assert records == [
        (
            "/v1/streams/message_bodies/records/body_gym",
            {"fields": ["message_id"], "connection_id": ["cin_mail_work"]},
        ),
        (
            GYM_MESSAGE,
            {"fields": ["subject,from_name,from_email,received_at"], "connection_id": ["cin_mail_work"]},
        ),
    ]
    origin = first["origin"]
    assert origin["id"] == "cin_mail_work/messages:msg_long_gym"
    assert origin["title"] == "Membership renewal"
    assert origin["fields"]["from_name"] == "FitLab"
    assert set(origin["fields"]) == {"from_name", "from_email", "received_at"}
    block = result.text.split("\n[1] ")[1]
    assert (
        'belongs to messages cin_mail_work/messages:msg_long_gym "Membership renewal": from_name: FitLab '
        "· from_email: members@fitlab.test · received_at: 20"
    ) in block


async def test_a_message_hit_shows_its_own_sender_and_date(shared_sandbox: Any) -> None:
    result, reads = await _ask(shared_sandbox, LEASE)
    first = result.structured["results"][0]
    assert first["stream"] == "messages"
    own = f"/v1/streams/messages/records/{first['record_id']}"
    assert [query for path, query in reads if path == own] == [
        {"fields": ["from_name,from_email,received_at"], "connection_id": [first["connection_id"]]}
    ]
    assert set(first["origin"]["fields"]) == {"from_name", "from_email", "received_at"}
    assert "title" not in first["origin"]  # its own title is the hit's
    assert f"    from_name: {first['origin']['fields']['from_name']} · from_email: " in result.text


async def test_a_question_asking_when_a_mail_came_shows_its_date(shared_sandbox: Any) -> None:
    result, _ = await _ask(shared_sandbox, "when did my pension statement come in")
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_pension"
    assert first["origin"]["fields"]["from_name"] == "Northstar Pensions"
    assert "received_at: 2026-" in result.text.split("\n[2] ")[0]


async def test_a_question_that_asks_neither_who_nor_when_reads_nothing_more(shared_sandbox: Any) -> None:
    result, reads = await _ask(shared_sandbox, "the new lease for Lisbon")
    # searches and windows of long texts, a body's link to fold it with its message
    # (retrieval.linked_hits), but no record read for where a hit came from
    records = [query for path, query in reads if "/records/" in path and "field-window" not in path]
    assert all(query["fields"] == ["message_id"] for query in records)
    assert not any(path.startswith("/v1/streams/messages/records/") for path, _ in reads)
    assert "origin" not in result.structured["results"][0]
    assert "belongs to" not in result.text


class _RefusesTheMessage(Fault):
    """The RS failing the read of the gym mail's message, and only it."""

    async def answer(self, request: web.Request) -> web.StreamResponse | None:
        return await super().answer(request) if request.path == GYM_MESSAGE else None


async def test_a_failed_read_leaves_the_hit_as_it_was(shared_sandbox: Any) -> None:
    async with upstream_proxy(shared_sandbox.url, fault=_RefusesTheMessage("status", 500)) as proxy:
        result, _ = await _ask(shared_sandbox, GYM, rs_url=proxy.url)
    assert GYM_MESSAGE in proxy.paths()
    assert not result.is_error, result.text
    assert "origin" not in result.structured["results"][0]
    assert "belongs to messages" not in result.text  # no origin line (the fold names the mail only)
    evidence = result.structured["results"][0]["evidence"]  # the hit's own evidence stands
    assert evidence
    assert f"evidence {evidence[0]['field']}" in result.text.split("\n[2] ")[0]


def _schema(streams: dict[str, dict[str, str]]) -> dict[str, Any]:
    rows = [{"name": name, "field_capabilities": flags} for name, flags in streams.items()]
    connector = {
        "connector_key": "mail",
        "granted_connections": [{"connection_id": "cin_mail"}],
        "streams": rows,
    }
    return {"object": "schema", "connectors": [connector]}


def test_the_reference_s_role_vocabulary_names_the_origin_too() -> None:
    schema = _schema(
        {
            "messages": {
                "id": "t=string",
                "subject": "t=string,role=primary-title,lex",
                "sender": "t=person,role=actor,lex",
                "sent_on": "t=timestamp,role=event-time",
                "hidden": "t=string,role=actor,g=false",
            },
            "message_bodies": {"id": "t=string", "message_id": "t=string,eq", "text": "t=string,lex"},
        }
    )
    origin = origin_fields(schema, "messages", "cin_mail")
    assert origin is not None
    assert origin.title == "subject"
    assert origin.fields == ("sender", "sent_on")  # a field not granted is never read
    link = parent_link(schema, "message_bodies", "cin_mail")
    assert link is not None
    assert (link.stream, link.key) == ("messages", "message_id")
    assert [body.name for body in body_streams(schema, "messages", "cin_mail")] == ["message_bodies"]


def test_a_schema_that_declares_no_roles_names_no_origin() -> None:
    """The public reference RS's captured compact schema: every flag ``declared``, no role."""
    captured = CAPTURES / "06-schema-compact-client.json"
    if not captured.exists():
        pytest.skip(f"reference capture {captured.name} is not on this machine")
    schema = json.loads(captured.read_text(encoding="utf-8"))["body"]
    (connection,) = schema["connectors"][0]["granted_connections"]
    cid = connection["connection_id"]
    assert origin_fields(schema, "messages", cid) is None
    assert parent_link(schema, "message_bodies", cid) is None
    # its bodies are still found: they name the message and declare nothing to refuse
    assert "message_bodies" in [body.name for body in body_streams(schema, "messages", cid)]
