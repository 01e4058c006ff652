"""A header and the text it stands for are one hit, pinned at the level of the answer text over the
sandbox's fresh corpus (dev questions of ``benchmarks/questions_fresh.json``).

A mail's message (subject and first line) and its body are two records; shown apart, the message
ranks first on its subject with "no text evidence" and a ``fetch`` that answers its first line
again. When the page holds the body too, the body takes the message's place and its subject, and
says whose body it is, before any passage is read; a body only the body search finds folds the same
way. A conversation's title folds into its turn the same way; an issue, which
has a text of its own, stays beside its comments."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

import pytest

from tests.tools.calls import call_tool, without_words_apart

MESSAGE = "cin_mail_home/messages:hm_0022"
BODY = "cin_mail_home/message_bodies:hb_0022"


async def _search(sandbox: Any, query: str, token: str = "client_life") -> str:
    return (await call_tool(sandbox, "search", {"query": query}, token)).text or ""


def _hit_ids(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] id=(\S+)", text, re.M)


async def test_a_message_and_its_body_on_one_page_are_one_hit_with_the_subject(shared_sandbox: Any) -> None:
    text = await _search(shared_sandbox, "how much is the meal allowance per day at Orbit?")
    ids = _hit_ids(text)
    assert MESSAGE not in ids  # the header left the page: no fetch that answers its first line again
    assert ids[0] == BODY
    block = text[text.index(f"id={BODY}") :].split("\n[", 1)[0]
    assert f"belongs to {MESSAGE}" in block.splitlines()[0]
    assert "title: Welcome to Orbit Labs! Your first day tomorrow" in block
    assert "no text evidence" not in block
    reads = [
        dict(parse_qsl(call.query))
        for call in shared_sandbox.calls
        if call.path == "/v1/streams/message_bodies/records/hb_0022"
    ]
    assert reads == [{"fields": "message_id", "connection_id": "cin_mail_home"}]  # the link, one read
    assert "10,20 €" in block  # the fact, in the body's passage
    assert len(ids) == len(set(ids)) == 10  # the place it freed is taken by the next hit


async def test_a_conversation_title_folds_into_its_turn(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_words_apart(monkeypatch)  # the title found by "orange" alone would lead, unfolded
    text = await _search(
        shared_sandbox, "the nut free orange cake came out dry, what's the main thing to change"
    )
    ids = _hit_ids(text)
    assert "cin_chatgpt/conversations:cg_0002" not in ids
    first = text[text.index("\n[1] ") :].split("\n[2] ", 1)[0]
    assert "in thread cin_chatgpt/conversations:cg_0002" in first
    assert "title: Nut-free version of orange almond cake" in first


async def test_an_issue_with_a_text_of_its_own_stays_beside_its_comments(shared_sandbox: Any) -> None:
    text = await _search(shared_sandbox, "how long was the worst nightly telemetry gap in parque das nações?")
    ids = _hit_ids(text)
    assert "cin_github_orbit/issues:OI0008" in ids
    assert "in thread cin_github_orbit/issues:OI0008" in text  # its comment joined beside it


async def test_a_message_whose_body_the_page_shows_needs_no_body_search(shared_sandbox: Any) -> None:
    # meaning-based search ranks the gym mail's message first and its body lower on the page:
    # one read of the body's link folds them, and no search of the body streams is made for it
    text = await _search(shared_sandbox, "when does my gym membership renew", "client_broad")
    first = text.split("\n[2] ", 1)[0].replace("<mark>", "").replace("</mark>", "")
    assert "[1] id=cin_mail_work/message_bodies:body_gym " in first
    assert "belongs to cin_mail_work/messages:msg_long_gym" in first
    assert "renews on 1 June at 39 EUR a month" in first
    assert "cin_mail_work/messages:msg_long_gym" not in _hit_ids(text)
    assert not [call for call in shared_sandbox.calls if "streams=message_bodies" in call.query]
    links = [
        call.query
        for call in shared_sandbox.calls
        if call.path == "/v1/streams/message_bodies/records/body_gym"
    ]
    assert links == ["fields=message_id&connection_id=cin_mail_work"]


async def test_a_body_only_the_body_search_finds_folds_into_its_message(shared_sandbox: Any) -> None:
    # the message ranks first on its subject; its body is not on the fused page but is what the
    # body search finds: shown as one hit, whose first call (its whole text) holds the office's address
    text = await _search(shared_sandbox, "whats the address of the orbit labs office")
    ids = _hit_ids(text)
    assert MESSAGE not in ids
    assert ids[0] == BODY
    first = text.split("\n[2] ", 1)[0]
    assert f"belongs to {MESSAGE}" in first
    assert "no text evidence" not in first
    assert len(ids) == len(set(ids))
    call = next(line.strip() for line in first.splitlines() if ": fetch {" in line)
    assert call.startswith("its whole text (")
    arguments = json.loads(call.split(": fetch ", 1)[1])
    assert arguments == {"id": BODY}
    document = await call_tool(shared_sandbox, "fetch", arguments, "client_life")
    assert "Rua da Boavista, 71" in (document.text or "")
