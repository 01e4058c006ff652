"""A package member that stalls is cut off at the member deadline: the merged search answers with
what the others found and names the member that did not answer, instead of waiting out the RS
client's 20-second read bound; ``schema()`` names it too, with its error and next step, and a
member whose grant is gone is named with its own reconnect command. Both members are real grants
on a real sandbox; the stalled one reads through a proxy that holds every ``/v1`` read for a minute.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.package.fan_out import MEMBER_SECONDS, member_seconds
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import mail_and_chat
from tests.sandbox_fixtures import set_grant_status
from tests.upstreams import Fault, upstream_proxy


async def test_a_stalled_member_is_cut_off_and_named(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PDPP_PACKAGE_MEMBER_SECONDS", "1")
    tokens = shared_sandbox.tokens
    async with (
        upstream_proxy(shared_sandbox.url, fault=Fault("delay", 60)) as stalled,
        RsClient(shared_sandbox.url) as mail_rs,
        RsClient(stalled.url) as chat_rs,
    ):
        context = mail_and_chat(mail_rs, chat_rs, tokens, shared_sandbox.url)
        async with asyncio.timeout(30):  # the proxy holds the stalled member's read for 60 s
            result = await build_pipeline()(ToolCall("search", {"query": "invoice"}, context))
        stalled.down = True  # now every read of that member answers 503, its schema's too
        schema = await build_pipeline()(ToolCall("schema", {}, context))
    assert not result.is_error, result.text
    assert result.structured["results"]  # the Work mail's hits
    assert {hit["connection_id"] for hit in result.structured["results"]} == {"cin_mail_work"}
    (missing,) = result.structured["data"]["unavailable_connections"]
    assert missing["connection_id"] == "cin_slack_acme"
    assert missing["error_code"] == "upstream_timeout"
    assert "Source cin_slack_acme failed with upstream_timeout" in result.text
    # schema() does not claim every granted stream is listed: it names the member that did not answer
    assert "Every granted stream is listed" not in schema.text
    assert "1 source(s) of this package did not answer" in schema.text
    assert "not answering: cin_slack_acme (slack): upstream_unavailable." in schema.text


def test_the_member_deadline_is_shorter_than_an_rs_read_and_configurable() -> None:
    assert member_seconds({}) == MEMBER_SECONDS < 20  # the RS client's read bound
    assert member_seconds({"PDPP_PACKAGE_MEMBER_SECONDS": "2.5"}) == 2.5
    assert member_seconds({"PDPP_PACKAGE_MEMBER_SECONDS": "nonsense"}) == MEMBER_SECONDS
    assert member_seconds({"PDPP_PACKAGE_MEMBER_SECONDS": "0"}) == MEMBER_SECONDS


async def test_a_member_whose_grant_is_gone_is_named_with_its_own_reconnect_command(sandbox: Any) -> None:
    tokens = sandbox.tokens
    async with RsClient(sandbox.url) as rs:
        context = mail_and_chat(rs, rs, tokens, sandbox.url)
        set_grant_status(sandbox, "client_chat", "revoked")
        schema = await build_pipeline()(ToolCall("schema", {}, context))
        search = await build_pipeline()(ToolCall("search", {"query": "invoice"}, context))
    command = f"pdpp-gateway connect {sandbox.url} --connector slack"  # no <provider-url> placeholder
    assert (
        f"not answering: cin_slack_acme (slack): grant_revoked. Ask the person to approve a new grant for this app: the app's sign-in, or `{command}`."
        in schema.text
    )
    assert command in search.text
    assert "<provider-url>" not in schema.text + search.text
