"""Questions in a person's words: a search that did not pin a mode never answers "nothing" when
the RS's meaning-based search has the answer (one more RS read, only after an empty lexical page).
"""

from __future__ import annotations

from typing import Any

from middleware import ToolCall
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline

QUESTION = "when does my flight to Porto leave booking"  # no record holds every word


async def _search(sandbox: Any, **arguments: Any) -> tuple[Any, list[str]]:
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        sandbox.reset_calls()
        result = await build_pipeline()(ToolCall("search", arguments, context))
    return result, [call.path for call in sandbox.calls]


async def test_an_empty_lexical_page_is_answered_by_meaning(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=QUESTION)
    assert reads == ["/v1/search", "/v1/search/hybrid"]  # one more read, after the empty page
    assert not result.is_error
    assert result.structured["retrieval"]["mode"] == "hybrid"
    assert result.structured["retrieval"]["instead_of"] == "lexical"
    assert any("Porto" in hit["title"] for hit in result.structured["results"][:3])
    first, second = result.text.splitlines()[:2]
    assert first.startswith(f'search "{QUESTION}" (hybrid):')
    assert second.startswith("No record holds every word of the query, so these are meaning-based matches")
    assert "page through them with lexical" not in result.text  # lexical found nothing to page


async def test_a_pinned_mode_is_exactly_that_mode(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=QUESTION, mode="lexical")
    assert reads == ["/v1/search"]
    assert result.structured["results"] == []
    assert "retrieval" not in result.structured
    assert "needs every word of the query in one record" in result.text
    assert 'search {"query":"flight booking","mode":"lexical"}' in result.text  # a ready call


async def test_a_search_with_lexical_hits_costs_one_read(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="invoice")
    assert reads == ["/v1/search"]
    assert result.structured["results"]
    assert "retrieval" not in result.structured


async def test_each_member_of_a_package_falls_back_on_its_own(sandbox: Any, tmp_path: Any) -> None:
    import contextlib

    from pdpp_gateway.credentials import load_credentials
    from pdpp_gateway.local_package import MemberStart
    from pdpp_gateway.local_readers import caller_context
    from tests.grants import approve

    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")
    members = [MemberStart(c.provider_url, c) for c in load_credentials(sandbox.url, tmp_path)]
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, tmp_path)
        merged = await build_pipeline()(ToolCall("search", {"query": QUESTION}, context))
        pinned = await build_pipeline()(ToolCall("search", {"query": QUESTION, "mode": "lexical"}, context))
        schema = await build_pipeline()(ToolCall("schema", {}, context))
    # a local package of client grants says what its caller is (it said mcp_package)
    assert schema.structured["data"]["bearer"]["token_kind"] == "client"
    assert not merged.is_error, merged.text
    assert merged.structured["retrieval"]["mode"] == "hybrid"
    assert merged.structured["retrieval"]["sources"]
    assert "no record holds every word of the query, so their hits are meaning-based" in merged.text
    assert any("Porto" in hit["title"] for hit in merged.structured["results"])
    assert pinned.structured["results"] == []
    assert "retrieval" not in pinned.structured
