"""A mail message's fetch leads to its body, pinned at the level of the answer text over the
sandbox's fresh corpus.

A message record holds a subject and a snippet; the mail's text is its body, a record of
``message_bodies`` whose ``message_id`` names it. Fetched alone, a message answered its snippet
again. Now its fetch finds the body (the body stream searched by the snippet's words, each
candidate read until its link names the message) and answers the body's text, the body named
in its metadata. A reply that quotes the message holds the same words: it is read and passed
over, never answered in the message's place."""

from __future__ import annotations

import json
from typing import Any

from tests.tools.calls import call_tool

MESSAGE = "cin_mail_home/messages:hm_0020"  # a request for a late arrival at a guesthouse
BODY = "cin_mail_home/message_bodies:hb_0020"
IN_BODY_ONLY = "Is a late arrival possible?"  # past the snippet's 90 characters


async def test_a_message_fetch_answers_its_body(shared_sandbox: Any) -> None:
    fetched = await call_tool(shared_sandbox, "fetch", {"id": MESSAGE}, token="client_life")
    document = fetched.structured
    assert document["id"] == MESSAGE
    assert document["title"] == "Late arrival on 3 August — Carvalho"  # the message's subject
    assert IN_BODY_ONLY in document["text"]
    assert IN_BODY_ONLY in json.loads(fetched.text or "")["text"]  # the text a model reads
    assert document["metadata"]["body_id"] == BODY
    assert document["metadata"]["text_field"] == "body_text"
    paths = [call.path for call in shared_sandbox.calls if call.path != "/v1/schema"]  # once a minute
    assert paths[:2] == ["/v1/streams/messages/records/hm_0020", "/v1/search"]
    assert paths[-1] == "/v1/streams/message_bodies/records/hb_0020"
    assert all(call.method == "GET" for call in shared_sandbox.calls)
    searched = next(call for call in shared_sandbox.calls if call.path == "/v1/search")
    assert "streams=message_bodies" in searched.query  # the body stream only
    assert "connection_id=cin_mail_home" in searched.query


async def test_a_projected_fetch_and_a_record_without_a_body_read_once(shared_sandbox: Any) -> None:
    projected = await call_tool(
        shared_sandbox, "fetch", {"id": MESSAGE, "fields": ["subject", "snippet"]}, token="client_life"
    )
    assert IN_BODY_ONLY not in projected.structured["text"]
    assert "body_id" not in projected.structured["metadata"]
    assert [call.path for call in shared_sandbox.calls] == ["/v1/streams/messages/records/hm_0020"]

    issue = await call_tool(
        shared_sandbox, "fetch", {"id": "cin_github_orbit/issues:OI0004"}, token="client_life"
    )
    assert "body_id" not in issue.structured["metadata"]
    assert "/v1/search" not in [call.path for call in shared_sandbox.calls]
