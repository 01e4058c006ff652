"""The sandbox's search routes: lexical evidence, semantic and hybrid shapes, filters, times."""

from __future__ import annotations

from typing import Any

import pytest

from pdpp_gateway.question.meaning import embedding_model
from pdpp_gateway.sandbox import store as store_module
from pdpp_gateway.sandbox import vectors
from pdpp_gateway.sandbox.data import generate
from pdpp_gateway.sandbox.dataset import EMITTED_AT
from pdpp_gateway.sandbox.runner import start_sandbox
from pdpp_gateway.sandbox.sample_facts import MAIL_FACTS
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


async def test_meaning_search_ranks_by_embeddings_as_the_reference_does(shared_sandbox: Any) -> None:
    """A question sharing no word with the mail about it finds that mail first, its body (on its
    subject throughout) and its message (a gym membership, asked after as a "fitness club"),
    where lexical search finds nothing; hits come nearest first, and records whose nearest field
    says the same thing tie at one distance, in the reference's order (connection, then record
    key): no folding of near-duplicates."""
    asked = "fitness+club+fee+every+month"
    _, lexical, _ = await get(shared_sandbox, f"/v1/search?q={asked}&" + WORK)
    assert lexical["data"] == []
    _, gym, _ = await get(shared_sandbox, f"/v1/search/semantic?q={asked}&limit=3&" + WORK)
    found = {hit["record_key"]: hit for hit in gym["data"][:2]}
    assert set(found) == {"msg_long_gym", "body_gym"}
    assert set(found["msg_long_gym"]["matched_fields"]) <= {"subject", "snippet"}
    assert found["body_gym"]["matched_fields"] == ["body_text"]
    top = gym["data"][0]
    assert top["score"]["kind"] == "semantic_distance"
    assert top["score"]["order"] == "lower_is_better"
    _, porto, _ = await get(shared_sandbox, "/v1/search/semantic?q=baggage+allowance+for+my+weekend+in+Porto")
    hits = porto["data"]
    distances = [hit["score"]["value"] for hit in hits]
    assert distances == sorted(distances)
    assert 0 <= distances[0] < distances[-1] <= 2
    same_title = [hit for hit in hits if hit["snippet"]["text"] == "Porto weekend trip booking"]
    assert len(same_title) > 5
    assert len({hit["score"]["value"] for hit in same_title}) == 1
    assert [(h["connection_id"], h["record_key"]) for h in same_title] == sorted(
        (h["connection_id"], h["record_key"]) for h in same_title
    )


async def test_meaning_search_sees_a_field_s_first_2048_characters_and_lexical_the_whole(
    shared_sandbox: Any,
) -> None:
    """The reference RS embeds only a semantic field's first 2,048 characters: a long body's
    distance is that of its opening, whatever lies deeper, and its buried fact 12k characters
    in is found by lexical search, which indexes whole fields."""
    body = next(r.data["body_text"] for r in generate().rows if r.record_id == "body_spare_key")
    model = embedding_model()
    assert model is not None
    asked = "The spare key for the apartment is hidden in the blue flowerpot"
    opening, whole, question = model.embed([semantic_input(body), body, asked], norm=True)
    path = f"/v1/search/semantic?q={asked.replace(' ', '+')}&streams=message_bodies&limit=100&" + WORK
    _, semantic, _ = await get(shared_sandbox, path)
    hit = next(h for h in semantic["data"] if h["record_key"] == "body_spare_key")
    assert hit["score"]["value"] == pytest.approx(1 - float(opening @ question), abs=1e-5)
    assert hit["score"]["value"] != pytest.approx(1 - float(whole @ question), abs=1e-3)
    _, lexical, _ = await get(shared_sandbox, "/v1/search?q=flowerpot&" + WORK)
    assert [h["record_key"] for h in lexical["data"]] == ["body_spare_key"]
    _, hybrid, _ = await get(shared_sandbox, "/v1/search/hybrid?q=flowerpot&" + WORK)
    assert hybrid["data"][0]["record_key"] == "body_spare_key"
    assert hybrid["data"][0]["retrieval_sources"][0] == "lexical"


def test_the_meaning_search_cap_counts_characters_as_javascript_does() -> None:
    """The reference cuts with ``value.slice(0, 2048)``: UTF-16 code units, so a character
    outside the BMP counts two, and one that the cut would halve is left out."""
    assert semantic_input("é" * 2048) == "é" * 2048
    assert semantic_input("é" * 2049) == "é" * 2048
    assert semantic_input("🙂" * 1024 + "x") == "🙂" * 1024
    assert semantic_input("x" + "🙂" * 1024) == "x" + "🙂" * 1023


async def test_a_long_mail_is_found_by_meaning_through_its_opening(shared_sandbox: Any) -> None:
    """A long mail holding a buried fact opens as its sender wrote it, on its subject: a
    meaning-based question finds the message first by that subject and opening, and the
    snippet, the opening, holds nothing of the fact 10k+ characters into its body."""
    asked = {
        "msg_long_spare_key": ("what do I need to know about the apartment handover", "flowerpot"),
        "msg_long_school_trip": ("consent for my child to go on the school day trip", "Sintra"),
        "msg_long_porto_trip": ("baggage allowance for my weekend in Porto", "QX7P2M"),
    }
    for message, (question, fact_word) in asked.items():
        _, found, _ = await get(shared_sandbox, f"/v1/search/semantic?q={question.replace(' ', '+')}&{WORK}")
        top = found["data"][0]
        assert top["record_key"] == message, question
        assert set(top["matched_fields"]) == {"subject", "snippet"}
        assert fact_word not in top["snippet"]["text"]
    _, bodies, _ = await get(
        shared_sandbox,
        f"/v1/search/semantic?q=consent+for+my+child+to+go+on+the+school+day+trip&streams=message_bodies&{WORK}",
    )
    top = bodies["data"][0]
    opening = next(item.opening for item in MAIL_FACTS if item.key == "school_trip")
    assert (top["record_key"], top["matched_fields"]) == ("body_school_trip", ["body_text"])
    assert top["snippet"]["text"].startswith(opening[:60])
    assert "Sintra" not in top["snippet"]["text"]


async def test_a_long_body_on_its_subject_ranks_by_meaning_with_its_message(shared_sandbox: Any) -> None:
    """A long body reads on its subject for the 2,048 characters a meaning-based search sees,
    as a real one does: asked about that subject, the body and its message are the first two
    hits, ahead of every other record (filler text no longer dilutes the body's meaning)."""
    asked = {
        "spare_key": "what do I need to know about the apartment handover",
        "insurance": "what is covered by my travel insurance",
        "car_service": "what did the garage do to my car",
    }
    for key, question in asked.items():
        _, found, _ = await get(shared_sandbox, f"/v1/search/semantic?q={question.replace(' ', '+')}&{WORK}")
        assert {hit["record_key"] for hit in found["data"][:2]} == {f"msg_long_{key}", f"body_{key}"}, (
            question
        )


async def test_without_the_embedding_model_meaning_search_says_so_and_lexical_still_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox whose model cannot load (a broken install) refuses meaning-based and hybrid
    search with a typed error that names the search that still works."""
    monkeypatch.setattr(store_module, "_templates", {})  # build this sandbox's data afresh
    monkeypatch.setattr(vectors, "embedding_model", lambda: None)
    async with start_sandbox() as sandbox:
        for mode in ("semantic", "hybrid"):
            status, body, _ = await get(sandbox, f"/v1/search/{mode}?q=apartment+handover")
            assert status == 503
            assert body["error"]["code"] == "semantic_unavailable"
            assert "/v1/search" in body["error"]["message"]
        status, lexical, _ = await get(sandbox, "/v1/search?q=flowerpot&" + WORK)
        assert status == 200
        assert [h["record_key"] for h in lexical["data"]] == ["body_spare_key"]
