"""The sandbox's search routes: lexical evidence, semantic and hybrid shapes, filters, times."""

from __future__ import annotations

from typing import Any

from pdpp_gateway.sandbox.dataset import EMITTED_AT
from pdpp_gateway.sandbox.sample_facts import MAIL_FACTS
from pdpp_gateway.sandbox.sample_mail import OPENINGS
from pdpp_gateway.sandbox.store import semantic_input
from tests.sandbox.rs_http import WORK, get


async def test_search_proves_text_matches_and_not_metadata_matches(shared_sandbox: Any) -> None:
    _, text_hit, _ = await get(shared_sandbox, "/v1/search?q=locker+code&" + WORK)
    hit = text_hit["data"][0]
    excerpt = hit["evidence_excerpts"][0]
    assert "<mark>" in excerpt["preview_text"]
    assert excerpt["read"]["route"].endswith("/field-window")
    _, metadata, _ = await get(shared_sandbox, "/v1/search?q=citystorage")  # only in from_email (metadata)
    for result in metadata["data"]:
        assert result["matched_fields"] == ["from_email"]
        assert "evidence_excerpts" not in result
        # the matched value, as the reference's snippet of the best field match
        assert result["snippet"]["field"] == "from_email"
        assert "<mark>citystorage</mark>" in result["snippet"]["text"].lower()
    assert metadata["data"]
    _, paged, _ = await get(shared_sandbox, "/v1/search?q=invoice&limit=2")
    _, more, _ = await get(shared_sandbox, f"/v1/search?q=invoice&limit=2&cursor={paged['next_cursor']}")
    first_keys = {(h["connection_id"], h["record_key"]) for h in paged["data"]}
    assert first_keys.isdisjoint({(h["connection_id"], h["record_key"]) for h in more["data"]})


async def test_semantic_and_hybrid_shapes(shared_sandbox: Any) -> None:
    _, semantic, _ = await get(shared_sandbox, "/v1/search/semantic?q=lisbon+apartment+lease&limit=3")
    assert all(
        h["retrieval_mode"] == "semantic" and h["score"]["kind"] == "semantic_distance"
        for h in semantic["data"]
    )
    _, hybrid, _ = await get(shared_sandbox, "/v1/search/hybrid?q=lisbon+apartment+lease&limit=3")
    assert "next_cursor" not in hybrid
    assert all(
        h["retrieval_mode"] == "hybrid" and set(h["retrieval_sources"]) <= {"lexical", "semantic"}
        for h in hybrid["data"]
    )
    # the reference's merge keeps identity, sources, scores and one snippet: no excerpts, no authored_at
    assert all("evidence_excerpts" not in h and "authored_at" not in h for h in hybrid["data"])
    assert all(h["snippet"]["text"] for h in hybrid["data"])


async def test_search_hits_carry_the_ingest_time_and_authored_time_as_the_reference_does(
    shared_sandbox: Any,
) -> None:
    _, body, _ = await get(shared_sandbox, "/v1/search?q=invoice&limit=100")
    hits = body["data"]
    assert {hit["emitted_at"] for hit in hits} == {EMITTED_AT}  # one ingest time for every seeded record
    mail = [hit for hit in hits if hit["connector_id"] == "gmail"]
    chat = [hit for hit in hits if hit["connector_id"] == "slack"]
    assert mail
    assert chat
    assert all("authored_at" not in hit for hit in mail)  # received_at is no authored-time field there
    for hit in chat:  # slack messages have sent_at
        _, record, _ = await get(shared_sandbox, f"{hit['record_url']}?connection_id={hit['connection_id']}")
        assert hit["authored_at"] == record["data"]["sent_at"]
        assert record["emitted_at"] == EMITTED_AT


async def test_semantic_and_hybrid_search_apply_filters(shared_sandbox: Any) -> None:
    base = f"q=lisbon+apartment+lease&streams=messages&{WORK}&limit=100"
    for mode in ("semantic", "hybrid"):
        _, everything, _ = await get(shared_sandbox, f"/v1/search/{mode}?{base}")
        assert everything["data"]
        _, nothing, _ = await get(
            shared_sandbox, f"/v1/search/{mode}?{base}&filter[received_at][lt]=2000-01-01T00:00:00Z"
        )
        assert nothing["data"] == []
        _, unseen, _ = await get(shared_sandbox, f"/v1/search/{mode}?{base}&filter[is_seen]=false")
        assert 0 < len(unseen["data"]) < len(everything["data"])
        for hit in unseen["data"]:
            _, record, _ = await get(shared_sandbox, f"{hit['record_url']}?{WORK}")
            assert record["data"]["is_seen"] is False


async def test_meaning_search_finds_longer_forms_of_a_word_and_weighs_titles(shared_sandbox: Any) -> None:
    """ "quarter" is in no record, "quarterly" in many: meaning-based search finds the longer form
    (as an embedding would), and a subject that says the thing asked outranks bodies of filler that
    repeat the question's words (a title passage weighs more, as in BM25F)."""
    _, lexical, _ = await get(shared_sandbox, "/v1/search?q=quarter&" + WORK)
    assert lexical["data"] == []
    _, quarter, _ = await get(shared_sandbox, "/v1/search/semantic?q=quarter&limit=5&" + WORK)
    assert quarter["data"]
    _, meeting, _ = await get(
        shared_sandbox, "/v1/search/semantic?q=notes+from+the+budget+meeting+this+quarter&limit=3&" + WORK
    )
    top = meeting["data"][0]
    assert (top["stream"], top["matched_fields"], top["snippet"]["text"]) == (
        "messages",
        ["subject"],
        "Quarterly budget review",
    )


async def test_meaning_search_sees_a_field_s_first_2048_characters_and_lexical_the_whole(
    shared_sandbox: Any,
) -> None:
    """The reference RS embeds only a semantic field's first 2,048 characters: a word 1.5k
    characters into a long body is found by meaning, its buried fact 12k characters in only by
    lexical search, which indexes whole fields."""
    _, early, _ = await get(shared_sandbox, "/v1/search/semantic?q=concierge&" + WORK)
    assert [(h["record_key"], h["matched_fields"]) for h in early["data"]] == [
        ("body_spare_key", ["body_text"])
    ]
    _, deep, _ = await get(shared_sandbox, "/v1/search/semantic?q=flowerpot&" + WORK)
    assert deep["data"] == []
    _, lexical, _ = await get(shared_sandbox, "/v1/search?q=flowerpot&" + WORK)
    assert [h["record_key"] for h in lexical["data"]] == ["body_spare_key"]
    _, hybrid, _ = await get(shared_sandbox, "/v1/search/hybrid?q=flowerpot&" + WORK)
    assert [(h["record_key"], h["retrieval_sources"]) for h in hybrid["data"]] == [
        ("body_spare_key", ["lexical"])
    ]


def test_the_meaning_search_cap_counts_characters_as_javascript_does() -> None:
    """The reference cuts with ``value.slice(0, 2048)``: UTF-16 code units, so a character
    outside the BMP counts two, and one that the cut would halve is left out."""
    assert semantic_input("é" * 2048) == "é" * 2048
    assert semantic_input("é" * 2049) == "é" * 2048
    assert semantic_input("🙂" * 1024 + "x") == "🙂" * 1024
    assert semantic_input("x" + "🙂" * 1024) == "x" + "🙂" * 1023


async def test_a_long_mail_is_found_by_meaning_through_its_opening(shared_sandbox: Any) -> None:
    """A long mail holding a buried fact opens as its sender wrote it, on its subject: a
    meaning-based question finds the body by that opening (all of it the RS embeds), and the
    snippet, the body's opening, holds nothing of the fact 10k+ characters in."""
    asked = {
        "body_spare_key": ("what do I need to know about the apartment handover", "flowerpot"),
        "body_school_trip": ("consent for my child to go on the school day trip", "Sintra"),
        "body_porto_trip": ("baggage allowance for my weekend in Porto", "QX7P2M"),
    }
    openings = {**OPENINGS, **{f"body_{item.key}": item.opening for item in MAIL_FACTS}}
    for body, (question, fact_word) in asked.items():
        path = f"/v1/search/semantic?q={question.replace(' ', '+')}&streams=message_bodies&{WORK}"
        _, found, _ = await get(shared_sandbox, path)
        top = found["data"][0]
        assert (top["record_key"], top["matched_fields"]) == (body, ["body_text"]), question
        assert top["snippet"]["text"].startswith(openings[body][:60])
        assert fact_word not in top["snippet"]["text"]
