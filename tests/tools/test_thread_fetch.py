"""A thread's head's fetch shows its thread below it, pinned at the level of the answer text over
the sandbox's fresh corpus.

The comment that names the release with the fix is a record of its own; a fetch of the issue
answered the issue's body alone, and a model that fetched the issue a search listed first read
the crash report, never the fix. Now a head's fetch (an issue, a chat message with replies, a
person's turn to an assistant, a conversation) shows the parts that answer it below its own text,
oldest first, within the fetch's bound; a part's fetch answers the part alone."""

from __future__ import annotations

import json
from typing import Any

from pdpp_gateway.documents import FETCH_TEXT_CHARS
from pdpp_gateway.retrieval import thread_below
from pdpp_gateway.retrieval.threads import Part, PartStream
from tests.tools.calls import call_tool

CRASH = "cin_github_orbit/issues:OI0004"  # the widget crash report; its fix ships two comments later
SHIPPED = "Fix shipped in 5.8.2"  # the thread's last comment, OC0022
TIMEOUTS = "cin_github_orbit/issues:OI0001"  # a long issue whose cause is in a 4,296-char comment


async def _fetch(sandbox: Any, handle: str) -> dict[str, Any]:
    fetched = await call_tool(sandbox, "fetch", {"id": handle}, token="client_life")
    assert not fetched.is_error, fetched.text
    document: dict[str, Any] = json.loads(fetched.text or "")  # the text a model reads
    assert document == fetched.structured
    return document


async def test_an_issue_fetch_shows_its_comments_below_it_oldest_first(shared_sandbox: Any) -> None:
    document = await _fetch(shared_sandbox, CRASH)
    text = document["text"]
    assert text.startswith("Top crash in Play Console")  # the issue's own body first
    assert SHIPPED in text
    order = [text.index(f"--- cin_github_orbit/issue_comments:OC00{n} ---") for n in (19, 20, 21, 22)]
    assert order == sorted(order)
    metadata = document["metadata"]
    assert (metadata["thread_stream"], metadata["thread_shown"], metadata["thread_left"]) == (
        "issue_comments",
        4,
        0,
    )
    paths = [call.path for call in shared_sandbox.calls if call.path != "/v1/schema"]  # once a minute
    assert paths == ["/v1/streams/issues/records/OI0004", "/v1/streams/issue_comments/records"]
    assert all(call.method == "GET" for call in shared_sandbox.calls)


async def test_a_long_thread_stays_within_the_fetch_bound_and_names_what_it_cuts(shared_sandbox: Any) -> None:
    text = (await _fetch(shared_sandbox, TIMEOUTS))["text"]
    assert len(text) <= FETCH_TEXT_CHARS
    assert "blocks until the dock ACKs" in text  # the cause, early in the long comment
    assert 'showing 2000 of 4296 chars: fetch {"id":"cin_github_orbit/issue_comments:OC0003"}' in text
    assert "Released as v2.31.4 this afternoon." in text  # the last comment, whole


async def test_a_part_fetch_answers_the_part_alone(shared_sandbox: Any) -> None:
    comment = await _fetch(shared_sandbox, "cin_github_orbit/issue_comments:OC0021")
    assert SHIPPED not in comment["text"]
    assert "thread_stream" not in comment["metadata"]
    reply = await _fetch(shared_sandbox, "cin_slack_orbit/messages:OM00017")
    assert "Selling my Thule" not in reply["text"]
    assert "thread_stream" not in reply["metadata"]


async def test_a_post_shows_its_replies_and_a_question_its_answer(shared_sandbox: Any) -> None:
    post = await _fetch(shared_sandbox, "cin_slack_orbit/messages:OM00015")  # a bike rack for sale
    assert "yours for 65 euros" in post["text"]
    asked = await _fetch(shared_sandbox, "cin_chatgpt/messages:cgm_0001")  # a person's turn
    assert "--- cin_chatgpt/messages:cgm_0002 (assistant) ---" in asked["text"]  # its answer, by whom
    answer = await _fetch(shared_sandbox, "cin_chatgpt/messages:cgm_0002")  # the assistant's turn
    assert "thread_stream" not in answer["metadata"]  # the turn after it is the next question
    conversation = await _fetch(shared_sandbox, "cin_chatgpt/conversations:cg_0001")
    assert conversation["text"].index("cgm_0001 ---") < conversation["text"].index("cgm_0002 ---")


def test_parts_past_the_bound_are_named_by_id_for_their_own_fetch() -> None:
    stream = PartStream("issue_comments", "issues", "issue_id", "body", "cin_code")
    parts = [Part(stream, f"C{number}", "I1", "I1", "a comment " * 50) for number in range(14)]
    below = thread_below._lines(stream, parts, FETCH_TEXT_CHARS - 1_200)  # room for two
    assert (below.shown, below.left) == (2, 12)
    assert below.text.count("\n--- cin_code/issue_comments:C") == 2
    closing = below.text.rsplit("\n\n", 1)[-1]
    assert closing.startswith("--- 12 more in its thread (issue_comments), not shown: fetch each by id: ")
    assert "cin_code/issue_comments:C2, " in closing
    assert "cin_code/issue_comments:C11 and 2 more ---" in closing
