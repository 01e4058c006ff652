"""Questions in a person's words reach their fact (``tools.search_in_words``), pinned at the level
of the RS reads made and the answer text a model reads: the question's content words first; after
an empty page, meaning-based and fewer-word hits fused; the passage of a long field found by the
gateway where the RS shows only the field's opening. A pinned mode is exactly that mode.
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import parse_qs

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline

QUESTION = "when does my flight to Porto leave booking"  # no record holds every word
LISBON = "what did I pay for the Lisbon apartment deposit"
SEAT = "seat number on my Porto flight"  # meaning finds the body; no lexical search does
PORTO_BODY = "/v1/streams/message_bodies/records/body_porto_trip/field-window"


async def _search(sandbox: Any, **arguments: Any) -> tuple[Any, list[tuple[str, str]]]:
    """The result and the RS reads it made: (path, q or field-window offset)."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall("search", arguments, context))
    reads = []
    for call in sandbox.calls:
        query = parse_qs(call.query)
        reads.append((call.path, (query.get("q") or query.get("offset_chars") or [""])[0]))
    return result, reads


async def test_a_question_searches_its_content_words_first(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="what is on the agenda for the team offsite")
    assert reads == [("/v1/search", "agenda team offsite")]  # one read: stop and question words dropped
    assert result.structured["retrieval"] == {"mode": "lexical", "searched": "agenda team offsite"}
    assert "Team offsite agenda" in result.structured["results"][0]["title"]
    assert 'Searched the question\'s content words: "agenda team offsite"' in result.text


async def test_the_lisbon_deposit_is_found_in_a_person_s_words(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=LISBON)
    # the content words, then (together) meaning-based search and the two most distinctive words
    assert reads[0] == ("/v1/search", "pay Lisbon apartment deposit")
    assert sorted(reads[1:]) == [("/v1/search", "apartment deposit"), ("/v1/search/hybrid", LISBON)]
    retrieval = result.structured["retrieval"]
    assert retrieval["mode"] == "fused"
    assert retrieval["order"] == "reciprocal_rank_fusion"
    assert [(s["mode"], s["query"]) for s in retrieval["searched"]] == [
        ("lexical", "apartment deposit"),
        ("hybrid", LISBON),
    ]
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_lisbon_lease"
    assert first["found_by"] == ["lexical", "hybrid"]  # both found it: it ranks first
    assert "1,850 EUR" in result.text  # the fact, in the first answer's text
    assert 'these hits fuse lexical "apartment deposit"' in result.text
    assert 'page its lexical hits with search {"query":"apartment deposit","mode":"lexical"}' in result.text
    assert len(result.structured["results"]) == 10  # a fused page shows ten unless limit says more


async def test_a_meaning_based_hit_shows_the_passage_of_its_long_field(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=SEAT)
    assert reads[0] == ("/v1/search", "seat number Porto flight")
    assert sorted(reads[1:3]) == [("/v1/search", "number flight"), ("/v1/search/hybrid", SEAT)]
    # the RS showed only the body's opening: the gateway read the field (its first two windows:
    # the first alone holds no passage with every word) to find where
    assert reads[3:] == [(PORTO_BODY, "0"), (PORTO_BODY, "16384")]
    # meaning-based search found the body by its opening (the RS embeds a field's first 2,048
    # characters), among message subjects that share the question's words
    (body,) = [hit for hit in result.structured["results"] if hit["id"].endswith(":body_porto_trip")]
    assert body["found_by"] == ["hybrid"]
    (evidence,) = body["evidence"]
    assert evidence["provenance"] == "passage"
    assert evidence["at_chars"] > 20_000  # deep in the body, past the decoys
    assert evidence["read"]["arguments"]["offset_chars"] == evidence["at_chars"] - 300
    assert "22A" in evidence["preview"]
    assert f"evidence body_text (passage at char {evidence['at_chars']} of 57069)" in result.text
    assert "<mark>seat</mark> 22A" in result.text


async def test_read_record_field_near_lands_on_the_passage(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        arguments = {"id": "cin_mail_work/message_bodies:body_porto_trip", "field": "body_text", "near": SEAT}
        result = await build_pipeline()(ToolCall("read_record_field", arguments, context))
        absent = await build_pipeline()(
            ToolCall("read_record_field", {**arguments, "near": "zebra"}, context)
        )
    window = result.structured["window"]
    assert window["end_chars"] - window["start_chars"] == 1200
    assert window["start_chars"] < window["match_start_chars"] < window["end_chars"]
    assert "seat 22A" in window["text"]
    assert f"match at {window['match_start_chars']}" in result.text
    assert absent.is_error
    assert absent.text.startswith("Error words_not_found: None of the words zebra occurs in body_text")


async def test_a_pinned_mode_is_exactly_that_mode(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=QUESTION, mode="lexical")
    assert reads == [("/v1/search", QUESTION)]
    assert result.structured["results"] == []
    assert "retrieval" not in result.structured
    assert "needs every word of the query in one record" in result.text
    assert 'search {"query":"flight booking","mode":"lexical"}' in result.text  # a ready call


async def test_a_search_with_lexical_hits_costs_one_read(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="invoice")
    assert reads == [("/v1/search", "invoice")]
    assert result.structured["results"]
    assert "retrieval" not in result.structured  # nothing dropped, nothing fused


async def test_each_member_of_a_package_fuses_on_its_own(sandbox: Any, tmp_path: Any) -> None:
    from pdpp_gateway.local.credentials import load_credentials
    from pdpp_gateway.local.package import MemberStart
    from pdpp_gateway.local.readers import caller_context
    from tests.grants import approve

    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")
    members = [MemberStart(c.provider_url, c) for c in load_credentials(sandbox.url, tmp_path)]
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, tmp_path)
        merged = await build_pipeline()(ToolCall("search", {"query": QUESTION}, context))
        seat = await build_pipeline()(ToolCall("search", {"query": SEAT}, context))
        pinned = await build_pipeline()(ToolCall("search", {"query": QUESTION, "mode": "lexical"}, context))
        schema = await build_pipeline()(ToolCall("schema", {}, context))
    # a local package of client grants says what its caller is (it said mcp_package)
    assert schema.structured["data"]["bearer"]["token_kind"] == "client"
    assert not merged.is_error, merged.text
    assert merged.structured["retrieval"]["mode"] == "fused"
    assert merged.structured["retrieval"]["sources"]
    assert "no record holds every word of the question, so these hits fuse" in merged.text
    # the Porto booking leads, from the mail member; its opening holds the question's words as
    # its deep passage does, and a question with the passage's own words reaches that passage
    assert merged.structured["results"][0]["id"] == "cin_mail_work/message_bodies:body_porto_trip"
    assert "QX7P2M for <mark>seat</mark> 22A" in seat.text
    assert pinned.structured["results"] == []
    assert "retrieval" not in pinned.structured
