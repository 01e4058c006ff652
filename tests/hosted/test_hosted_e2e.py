"""The hosted door end to end: the SDK's real HTTP client, both eras, a real sandbox RS."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import TextContent, TextResourceContents

from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.tools.specs import TOOL_NAMES
from tests.conftest import ERAS


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("introspection", [True, False], ids=["introspection", "schema-probe"])
async def test_client_token_reads_through_hosted_mcp(
    shared_sandbox: Any, era: str, introspection: bool
) -> None:
    settings = sandbox_settings(shared_sandbox.url, introspection=introspection)
    async with (
        start_gateway(settings, public_self=True) as url,
        mcp_http(url, shared_sandbox.tokens["client_broad"], era) as client,
    ):
        expected_version = "2025-11-25" if era == "legacy" else "2026-07-28"
        assert client.protocol_version == expected_version
        origin = url.removesuffix("/mcp")
        icons = client.server_info.icons or []
        assert [(i.src, i.mime_type, i.sizes) for i in icons] == [
            (f"{origin}/icon.svg", "image/svg+xml", ["any"])
        ]
        assert client.instructions
        assert "schema" in client.instructions
        assert [tool.name for tool in (await client.list_tools()).tools] == list(TOOL_NAMES)

        shared_sandbox.calls.clear()
        found = await client.call_tool("search", {"query": "Lisbon apartment deposit", "limit": 5})
        assert not found.is_error
        assert "1,850 EUR" in text_of(found)  # the buried fact, as bounded evidence in the text
        handle = found.structured_content["results"][0]["id"]
        fetched = await client.call_tool("fetch", {"id": handle})
        assert not fetched.is_error
        assert fetched.structured_content["id"] == handle
        assert "/v1/search" in [call.path for call in shared_sandbox.calls]
        # Every read carried the caller's own token, whichever way the bearer was validated.
        assert {call.token_name for call in shared_sandbox.calls} == {"client_broad"}


@pytest.mark.parametrize("era", ERAS)
async def test_resources_are_forwarded_reads(shared_sandbox: Any, era: str) -> None:
    settings = sandbox_settings(shared_sandbox.url)
    async with (
        start_gateway(settings) as url,
        mcp_http(url, shared_sandbox.tokens["client_narrow"], era) as client,
    ):
        templates = (await client.list_resource_templates()).resource_templates
        assert {t.uri_template.split("{", 1)[0] for t in templates} >= {"pdpp://stream/", "pdpp://record/"}
        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["pdpp://stream/messages"]
        read = await client.read_resource("pdpp://stream/messages")
        content = read.contents[0]
        assert isinstance(content, TextResourceContents)
        assert "messages" in content.text


@pytest.mark.parametrize("era", ERAS)
async def test_narrow_grant_sees_no_more_than_its_grant(shared_sandbox: Any, era: str) -> None:
    settings = sandbox_settings(shared_sandbox.url)
    async with (
        start_gateway(settings) as url,
        mcp_http(url, shared_sandbox.tokens["client_narrow"], era) as client,
    ):
        schema = await client.call_tool("schema", {})
        assert "messages" in text_of(schema)
        assert "repositories" not in text_of(schema)
        refused = await client.call_tool("query_records", {"stream": "repositories"})
        assert refused.is_error
        assert "stream_not_allowed" in text_of(refused) or "not" in text_of(refused).lower()


@pytest.mark.parametrize("era", ERAS)
async def test_package_token_fans_out_with_each_childs_own_token(shared_sandbox: Any, era: str) -> None:
    settings = sandbox_settings(shared_sandbox.url)
    async with start_gateway(settings) as url, mcp_http(url, shared_sandbox.tokens["package"], era) as client:
        shared_sandbox.calls.clear()
        schema = await client.call_tool("schema", {})
        assert not schema.is_error
        text = text_of(schema)
        assert "cin_mail_work" in text
        assert "cin_slack_acme" in text
        assert "cin_mail_personal" not in text  # not in any child grant

        search = await client.call_tool("search", {"query": "deposit", "limit": 5})
        assert not search.is_error
        sources = {hit["id"].split("/", 1)[0] for hit in search.structured_content["results"]}
        assert sources <= {"cin_mail_work", "cin_slack_acme"}

        ambiguous = await client.call_tool("query_records", {"stream": "messages", "limit": 2})
        assert ambiguous.is_error
        assert "connection_id" in text_of(ambiguous)
        routed = await client.call_tool(
            "query_records", {"stream": "messages", "limit": 2, "connection_id": "cin_slack_acme"}
        )
        assert not routed.is_error
    # The package token itself never reaches /v1: each child is read with its own token.
    assert {call.token_name for call in shared_sandbox.calls} == {"client_work_mail", "client_chat"}
