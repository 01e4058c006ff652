"""Package routing and merging (``package.py``) on in-memory child grants.

Each child is a ``FakeRs`` recording its reads, so every test can say which child was asked
what, and that a refused call reached no child at all.
"""

from __future__ import annotations

import pytest

from pdpp_gateway.context import PackageMember
from pdpp_gateway.rs.errors import RsTimeoutError, RsUnavailableError, TimeoutPhase
from tests.fake_rs import FakeCall, FakeRs
from tests.package.helpers import call, child, error_code, hit_ids, ids, interleave, package, searches


def asked(*fakes: FakeRs) -> dict[str, list[str]]:
    return {fake.grant: [c.path for c in fake.calls] for fake in fakes if fake.calls}


# --- routing -----------------------------------------------------------------------


async def test_connection_id_routes_to_the_member_granting_it_only() -> None:
    mail, chat = child("mail", 3), child("chat", 3)
    result = await call(
        package(mail, chat), "query_records", {"stream": "messages", "connection_id": "cin_chat", "limit": 2}
    )
    assert not result.is_error, result.text
    assert asked(mail, chat) == {"grt_chat": ["/v1/streams/messages/records"]}
    assert chat.calls[0].param("connection_id") == "cin_chat"


async def test_a_shared_connection_prefers_the_member_granting_the_stream() -> None:
    mail, archive = child("mail", 1), child("archive", 1)
    members = [
        PackageMember(rs=mail, grant_id="grt_mail", connection_ids=("cin_shared",), streams=("threads",)),
        PackageMember(
            rs=archive, grant_id="grt_archive", connection_ids=("cin_shared",), streams=("messages",)
        ),
    ]
    await call(
        package(members=members), "query_records", {"stream": "messages", "connection_id": "cin_shared"}
    )
    assert asked(mail, archive) == {"grt_archive": ["/v1/streams/messages/records"]}


async def test_an_unknown_connection_is_connection_not_found_listing_members_without_any_read() -> None:
    mail, chat = child("mail", 1), child("chat", 1)
    result = await call(package(mail, chat), "search", {"query": "x", "connection_id": "cin_nope"})
    assert error_code(result) == "connection_not_found"
    listed = {entry["connection_id"] for entry in result.structured["error"]["available_connections"]}
    assert listed == {"cin_mail", "cin_chat"}
    assert asked(mail, chat) == {}


async def test_a_record_handle_routes_by_its_embedded_connection() -> None:
    mail, chat = child("mail", 1), child("chat", 1)
    result = await call(package(mail, chat), "fetch", {"id": "cin_chat/messages:chat_001"})
    assert not result.is_error, result.text
    assert result.structured["id"] == "cin_chat/messages:chat_001"
    # the record, and the grant's schema (read once a minute): whether the record heads a thread
    assert asked(mail, chat) == {"grt_chat": ["/v1/streams/messages/records/chat_001", "/v1/schema"]}


async def test_search_fans_out_with_streams_narrowed_to_each_members_grant() -> None:
    mail, chat, files = child("mail", 2), child("chat", 2), child("files", 2)
    members = [
        mail.member(streams=["messages", "threads"]),
        chat.member(streams=["messages", "channels"]),
        files.member(streams=["documents"]),
    ]
    result = await call(
        package(members=members), "search", {"query": "invoice", "streams": ["threads", "messages"]}
    )
    assert not result.is_error, result.text
    assert {fake.grant: [c.params("streams") for c in searches(fake)] for fake in (mail, chat, files)} == {
        "grt_mail": [["threads", "messages"]],
        "grt_chat": [["messages"]],
        "grt_files": [],
    }


async def test_an_unrouted_read_is_ambiguous_connection_without_any_read() -> None:
    mail, chat = child("mail", 1), child("chat", 1)
    result = await call(package(mail, chat), "query_records", {"stream": "messages"})
    assert error_code(result) == "ambiguous_connection"
    assert result.structured["error"]["available_connection_count"] == 2
    assert asked(mail, chat) == {}


async def test_a_one_member_package_always_routes() -> None:
    mail = child("mail", 1)
    result = await call(package(mail), "query_records", {"stream": "messages"})
    assert not result.is_error, result.text
    assert asked(mail) == {"grt_mail": ["/v1/streams/messages/records"]}


async def test_schema_index_fans_out_and_tags_each_connector_with_its_source() -> None:
    mail, chat = child("mail", 1), child("chat", 1)
    result = await call(package(mail, chat), "schema", {})
    assert not result.is_error, result.text
    document = result.annotations["schema_index"]
    assert [c["source"]["connection_id"] for c in document["connectors"]] == ["cin_mail", "cin_chat"]
    assert document["package"] == {"member_count": 2, "partial": False}


async def test_schema_of_a_stream_asks_only_members_granting_it() -> None:
    mail, files = child("mail", 1), child("files", 1, stream="documents")
    result = await call(package(mail, files), "schema", {"stream": "documents"})
    assert not result.is_error, result.text
    assert asked(mail, files) == {"grt_files": ["/v1/schema"]}


async def test_full_schema_detail_held_by_several_members_is_ambiguous_without_any_read() -> None:
    mail, chat, files = child("mail", 1), child("chat", 1), child("files", 1, stream="documents")
    context = package(mail, chat, files)
    result = await call(context, "schema", {"stream": "messages", "detail": "full"})
    assert error_code(result) == "ambiguous_schema_detail"
    assert {e["connection_id"] for e in result.structured["error"]["available_connections"]} == {
        "cin_mail",
        "cin_chat",
    }
    assert asked(mail, chat, files) == {}
    routed = await call(context, "schema", {"stream": "documents", "detail": "full"})
    assert not routed.is_error, routed.text
    assert asked(mail, chat, files) == {"grt_files": ["/v1/schema"]}


# --- merging -----------------------------------------------------------------------


async def test_a_failed_member_is_a_warning_and_the_others_answer() -> None:
    mail, chat, files = child("mail", 2), child("chat", 2), child("files", 2)
    chat.fail_with(RsUnavailableError("connection refused"))
    result = await call(package(mail, chat, files), "search", {"query": "invoice"})
    assert ids(result) == interleave(hit_ids(mail), hit_ids(files))
    data = result.structured["data"]
    assert [w["code"] for w in data["meta"]["warnings"]] == ["source_unavailable"]
    assert "cin_chat" in data["meta"]["warnings"][0]["message"]
    assert [u["connection_id"] for u in data["unavailable_connections"]] == ["cin_chat"]
    assert data["meta"]["package"]["partial"] is True
    assert "warning source_unavailable: Source cin_chat failed with upstream_unavailable" in str(result.text)


async def test_a_failed_members_next_step_fits_its_failure() -> None:
    mail, chat = child("mail", 2), child("chat", 2)
    chat.fail_with(RsTimeoutError(TimeoutPhase.READ, 20))
    result = await call(package(mail, chat), "schema", {})
    [unavailable] = result.structured["data"]["unavailable_connections"]
    assert unavailable["error_code"] == "upstream_timeout"
    assert unavailable["next_step"].startswith("Retry in a moment")  # not "re-approve": nothing was revoked


async def test_when_every_member_fails_the_first_members_error_is_the_answer() -> None:
    mail, chat = child("mail", 2), child("chat", 2)
    mail.fail_with(RsTimeoutError(TimeoutPhase.READ, 20))
    chat.fail_with(RsUnavailableError("connection refused"))
    result = await call(package(mail, chat), "search", {"query": "invoice"})
    assert error_code(result) == "upstream_timeout"


async def test_a_hit_reachable_through_two_members_is_shown_once() -> None:
    first, second = child("mail", 3), child("mail", 3)
    second.grant = "grt_mail_again"
    result = await call(package(first, second), "search", {"query": "invoice"})
    assert ids(result) == hit_ids(first)


@pytest.mark.parametrize("limit", [1, 4, 100])
async def test_a_merged_page_holds_at_most_the_callers_limit(limit: int) -> None:
    fakes = [child(name, 60) for name in ("a", "b", "c")]
    result = await call(package(*fakes), "search", {"query": "invoice", "limit": limit})
    assert len(ids(result)) == limit
    assert result.structured["data"]["result_count"] == limit
    assert result.structured["data"]["has_more"] is True


async def test_the_default_page_is_25_hits_and_each_child_is_asked_for_its_share() -> None:
    log: list[FakeCall] = []
    fakes = [child(name, 40, log=log) for name in ("a", "b")]
    result = await call(package(*fakes), "search", {"query": "invoice"})
    assert len(ids(result)) == 25
    assert [c.param("limit") for c in log if c.path == "/v1/search"] == ["13", "13"]
