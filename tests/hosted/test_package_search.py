"""Hosted package search: fan-out per child grant, stream filters intersected, scoped routing.

The sandbox package bundles two child grants: ``client_work_mail`` (Work mail: messages,
threads, message_bodies, attachments) and ``client_chat`` (Acme Slack: channels, messages).
The sandbox's call log names the token each RS read carried, so each scenario can show
which child was asked for what.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qs

import pytest

from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings


async def search(sandbox: Any, arguments: dict[str, Any]) -> tuple[Any, dict[str, list[list[str]]]]:
    async with (
        start_gateway(sandbox_settings(sandbox.url)) as url,
        mcp_http(url, sandbox.tokens["package"]) as client,
    ):
        sandbox.calls.clear()
        result = await client.call_tool("search", arguments)
    by_child: dict[str, list[list[str]]] = {}
    for call in sandbox.calls:
        if call.path.startswith("/v1/search"):
            by_child.setdefault(str(call.token_name), []).append(
                sorted(parse_qs(call.query).get("streams", []))
            )
    return result, by_child


async def test_unscoped_search_merges_every_childs_hits_with_attribution(shared_sandbox: Any) -> None:
    result, by_child = await search(shared_sandbox, {"query": "Lisbon invoice", "limit": 20})
    assert not result.is_error
    assert set(by_child) == {"client_work_mail", "client_chat"}
    hits = result.structured_content["results"]
    sources = {hit["id"].split("/", 1)[0] for hit in hits}
    assert sources == {"cin_mail_work", "cin_slack_acme"}, hits


async def test_stream_filter_is_intersected_with_each_child_grant(shared_sandbox: Any) -> None:
    # lexical pinned: an empty lexical page would also ask the child by meaning (test_search_fallback)
    result, by_child = await search(
        shared_sandbox, {"query": "deposit", "streams": ["threads", "channels"], "mode": "lexical"}
    )
    assert not result.is_error
    assert by_child == {"client_work_mail": [["threads"]], "client_chat": [["channels"]]}


async def test_children_outside_the_stream_filter_are_not_called(shared_sandbox: Any) -> None:
    result, by_child = await search(
        shared_sandbox, {"query": "deposit", "streams": ["threads"], "mode": "lexical"}
    )
    assert not result.is_error
    assert by_child == {"client_work_mail": [["threads"]]}


@pytest.mark.parametrize(
    ("connection", "child"), [("cin_slack_acme", "client_chat"), ("cin_mail_work", "client_work_mail")]
)
async def test_scoped_search_goes_to_the_selected_child_only(
    shared_sandbox: Any, connection: str, child: str
) -> None:
    result, by_child = await search(shared_sandbox, {"query": "deposit", "connection_id": connection})
    assert not result.is_error
    assert set(by_child) == {child}
    assert {hit["id"].split("/", 1)[0] for hit in result.structured_content["results"]} <= {connection}


async def test_merged_pages_followed_to_the_end_interleave_every_childs_hits_once(
    shared_sandbox: Any,
) -> None:
    # pinned lexical: an unpinned search is fused, and a fused page has no cursor
    query = {"query": "Lisbon", "mode": "lexical"}  # 30 mail hits, 5 chat hits in the sandbox
    async with (
        start_gateway(sandbox_settings(shared_sandbox.url)) as url,
        mcp_http(url, shared_sandbox.tokens["package"]) as client,
    ):
        alone = {}
        for connection in ("cin_mail_work", "cin_slack_acme"):  # member order of the sandbox package
            result = await client.call_tool("search", {**query, "connection_id": connection, "limit": 100})
            assert not result.is_error
            alone[connection] = [hit["id"] for hit in result.structured_content["results"]]
        pages = [await client.call_tool("search", {**query, "limit": 3})]
        while cursor := pages[-1].structured_content["data"].get("next_cursor"):
            assert len(pages) < 50
            pages.append(await client.call_tool("search", {**query, "limit": 3, "cursor": cursor}))
    assert not any(page.is_error for page in pages)
    shown = [hit["id"] for page in pages for hit in page.structured_content["results"]]
    mail, chat = alone["cin_mail_work"], alone["cin_slack_acme"]
    assert len(mail) > 3 * len(chat) >= 6, alone  # both children page, at unequal lengths
    expected = [
        ids[rank] for rank in range(max(len(mail), len(chat))) for ids in (mail, chat) if rank < len(ids)
    ]
    assert shown == expected
    cursors = " ".join(str(page.structured_content["data"].get("next_cursor")) for page in pages)
    decoded = " ".join(
        base64.urlsafe_b64decode(c.removeprefix("pkg1.") + "==").decode()
        for c in cursors.split()
        if c != "None"
    )
    assert not any(token in cursors or token in decoded for token in shared_sandbox.tokens.values())
    assert "order: round-robin by each source's own rank" in pages[0].content[0].text
