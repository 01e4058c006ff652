"""The sandbox's routes on one record: detail (ambiguity, projection) and field windows."""

from __future__ import annotations

from typing import Any

from tests.sandbox.rs_http import WINDOW, get


async def test_ambiguous_record_resolves_with_connection_id(shared_sandbox: Any) -> None:
    status, _, _ = await get(shared_sandbox, "/v1/streams/messages/records/msg_shared_0001")
    assert status == 409
    for connection in ("cin_mail_work", "cin_mail_personal"):
        status, record, _ = await get(
            shared_sandbox, f"/v1/streams/messages/records/msg_shared_0001?connection_id={connection}"
        )
        assert status == 200
        assert (record["id"], record["connection_id"]) == ("msg_shared_0001", connection)


async def test_record_detail_projects_granted_fields(shared_sandbox: Any) -> None:
    status, record, _ = await get(
        shared_sandbox, "/v1/streams/messages/records/msg_work_0001?fields=subject,is_seen", "client_narrow"
    )
    assert status == 200
    assert set(record["data"]) == {"subject", "is_seen"}


async def test_record_detail_drops_ungranted_fields_like_the_reference(shared_sandbox: Any) -> None:
    status, record, _ = await get(
        shared_sandbox, "/v1/streams/messages/records/msg_work_0001?fields=subject,thread_id", "client_narrow"
    )
    assert status == 200
    assert set(record["data"]) == {"subject"}


async def test_field_window_pages_and_finds_matches(shared_sandbox: Any) -> None:
    _, first, _ = await get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=1000")
    window = first["window"]
    assert (window["start_chars"], window["end_chars"], window["complete"]) == (0, 1000, False)
    assert window["total_chars"] > 30_000
    _, second, _ = await get(
        shared_sandbox,
        WINDOW + f"&field=body_text&offset_chars={window['next_offset_chars']}&limit_chars=1000",
    )
    assert second["window"]["start_chars"] == 1000
    assert second["window"]["previous_offset_chars"] == 0
    _, match, _ = await get(
        shared_sandbox, WINDOW + "&field=body_text&q=security+deposit&before_chars=20&after_chars=60"
    )
    hit = match["window"]
    assert "security deposit for the Lisbon apartment" in hit["text"]
    assert hit["end_chars"] - hit["start_chars"] == 20 + len("security deposit") + 60
    _, clamped, _ = await get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=20000")
    assert clamped["window"]["end_chars"] == 16_384
    assert clamped["meta"]["warnings"][0]["code"] == "limit_clamped"


async def test_field_window_limit_chars_is_the_limit_applied(shared_sandbox: Any) -> None:
    _, first, _ = await get(shared_sandbox, WINDOW + "&field=body_text")
    total = first["window"]["total_chars"]
    assert first["window"]["limit_chars"] == 4096
    _, tail, _ = await get(shared_sandbox, WINDOW + f"&field=body_text&offset_chars={total - 10}")
    assert (len(tail["window"]["text"]), tail["window"]["limit_chars"]) == (10, 4096)
    _, explicit, _ = await get(
        shared_sandbox, WINDOW + f"&field=body_text&offset_chars={total - 10}&limit_chars=1000"
    )
    assert (len(explicit["window"]["text"]), explicit["window"]["limit_chars"]) == (10, 1000)
    assert explicit["window"]["previous_offset_chars"] == total - 1010
    _, context, _ = await get(
        shared_sandbox, WINDOW + "&field=body_text&q=security+deposit&before_chars=20&after_chars=60"
    )
    assert context["window"]["limit_chars"] == 20 + len("security deposit") + 60
    _, clamped, _ = await get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=20000")
    assert clamped["window"]["limit_chars"] == 16_384
