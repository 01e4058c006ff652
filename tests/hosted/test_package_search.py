"""Hosted package search: fan-out per child grant, stream filters intersected, scoped routing.

The sandbox package bundles two child grants: ``client_work_mail`` (Work mail: messages,
threads, message_bodies, attachments) and ``client_chat`` (Acme Slack: channels, messages).
The sandbox's call log names the token each RS read carried, so each scenario can show
which child was asked for what.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest

from pdpp_gateway.hosted.testing import mcp_http, sandbox_settings, start_gateway


async def search(sandbox: Any, arguments: dict[str, Any]) -> tuple[Any, dict[str, list[list[str]]]]:
    async with (
        start_gateway(sandbox_settings(sandbox.url)) as url,
        mcp_http(url, sandbox.tokens["package"]) as client,
    ):
        sandbox.reset_calls()
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
    result, by_child = await search(shared_sandbox, {"query": "deposit", "streams": ["threads", "channels"]})
    assert not result.is_error
    assert by_child == {"client_work_mail": [["threads"]], "client_chat": [["channels"]]}


async def test_children_outside_the_stream_filter_are_not_called(shared_sandbox: Any) -> None:
    result, by_child = await search(shared_sandbox, {"query": "deposit", "streams": ["threads"]})
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
