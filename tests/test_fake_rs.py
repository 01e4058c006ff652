"""The in-memory RS keeps the RS's promises, so tests built on it mean something.

Shapes and refusals are the ones rs-contract.md documents; the handlers run on it through
the real pipeline exactly as on the sandbox, without a socket.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext, RsReader
from pdpp_gateway.rs.errors import RsStatusError, RsUnavailableError
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.fake_rs import FakeRs, hit

RECORDS = {
    "messages": [
        {"id": f"m{n}", "data": {"subject": f"Invoice {n}", "body_text": "x" * 50 + " invoice paid", "n": n}}
        for n in range(5)
    ]
}


def mail() -> FakeRs:
    hits = [hit("messages", f"m{n}", "cin_mail", f"<mark>Invoice</mark> {n}") for n in range(7)]
    return FakeRs("grt_mail", connection_id="cin_mail", connector_key="gmail", records=RECORDS, hits=hits)


async def test_search_pages_with_an_opaque_cursor_bound_to_its_grant() -> None:
    rs = mail()
    first = await rs.get_json("/v1/search", [("q", "invoice"), ("limit", "5")])
    assert first.body["has_more"] is True
    assert [h["record_key"] for h in first.body["data"]] == ["m0", "m1", "m2", "m3", "m4"]
    cursor = first.body["next_cursor"]
    second = await rs.get_json("/v1/search", [("q", "invoice"), ("limit", "5"), ("cursor", cursor)])
    assert [h["record_key"] for h in second.body["data"]] == ["m5", "m6"]
    assert second.body["has_more"] is False
    assert "next_cursor" not in second.body
    other = FakeRs("grt_other", hits=rs.hits)
    with pytest.raises(RsStatusError) as refused:
        await other.get_json("/v1/search", [("q", "invoice"), ("cursor", cursor)])
    assert (refused.value.status, refused.value.code) == (400, "invalid_cursor")


async def test_limit_over_100_is_clamped_with_a_warning_and_hybrid_never_pages() -> None:
    rs = FakeRs("g", hits=[hit("messages", f"r{n}", "cin", "x") for n in range(120)])
    clamped = await rs.get_json("/v1/search", [("q", "x"), ("limit", "500")])
    assert len(clamped.body["data"]) == 100
    assert clamped.body["meta"]["warnings"][0]["code"] == "limit_clamped"
    hybrid = await rs.get_json("/v1/search/hybrid", [("q", "x")])
    assert hybrid.body["has_more"] is True
    assert "next_cursor" not in hybrid.body
    with pytest.raises(RsStatusError):
        await rs.get_json("/v1/search/hybrid", [("q", "x"), ("cursor", "abc")])


async def test_a_stream_outside_the_grant_is_403_and_an_unknown_record_404() -> None:
    rs = mail()
    with pytest.raises(RsStatusError) as outside:
        await rs.get_json("/v1/search", [("q", "x"), ("streams", "contacts")])
    assert (outside.value.status, outside.value.code) == (403, "grant_stream_not_allowed")
    assert outside.value.envelope["type"] == "permission_error"
    with pytest.raises(RsStatusError) as missing:
        await rs.get_json("/v1/streams/messages/records/nope")
    assert (missing.value.status, missing.value.code) == (404, "record_not_found")


async def test_failures_are_scripted_by_call_number_and_every_call_is_recorded() -> None:
    rs = mail()
    rs.fail_with(RsUnavailableError("connection refused"), on_calls={2})
    await rs.get_json("/v1/schema")
    with pytest.raises(RsUnavailableError):
        await rs.get_json("/v1/search", [("q", "x")])
    await rs.get_json("/v1/search", [("q", "x")])
    assert [(c.path, c.param("q")) for c in rs.calls] == [
        ("/v1/schema", None),
        ("/v1/search", "x"),
        ("/v1/search", "x"),
    ]


async def test_the_delay_is_per_call_and_concurrent_calls_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    rs = FakeRs(
        "g", hits=[hit("messages", "r", "cin", "x")], delay=lambda call: 5 if call.param("q") == "slow" else 0
    )
    slow = [asyncio.create_task(rs.get_json("/v1/search", [("q", "slow")])) for _ in range(3)]
    await asyncio.sleep(0)
    assert len(rs.calls) == 3  # all three received and waiting at once
    assert not any(task.done() for task in slow)
    for task in slow:
        task.cancel()
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("tests.fake_rs.asyncio.sleep", record)
    await rs.get_json("/v1/search", [("q", "fast")])
    await rs.get_json("/v1/search", [("q", "slow")])
    assert slept == [5]


async def test_handlers_run_on_it_through_the_pipeline_without_a_socket() -> None:
    rs = mail()
    reader: RsReader = rs
    context = GatewayContext.for_client(reader, "https://rs.example.test")
    pipeline = build_pipeline()
    fetched = await pipeline(ToolCall("fetch", {"id": "cin_mail/messages:m3"}, context))
    assert not fetched.is_error, fetched.text
    assert fetched.structured["id"] == "cin_mail/messages:m3"
    assert fetched.structured["url"].startswith("https://rs.example.test/")
    window = await pipeline(
        ToolCall(
            "read_record_field",
            {"id": "cin_mail/messages:m3", "field": "body_text", "offset_chars": 51},
            context,
        )
    )
    assert not window.is_error, window.text
    assert window.structured["window"]["text"] == "invoice paid"
    found = await pipeline(ToolCall("search", {"query": "invoice", "mode": "lexical", "limit": 2}, context))
    assert [h["id"] for h in found.structured["results"]] == ["cin_mail/messages:m0", "cin_mail/messages:m1"]
    assert "next_cursor=" in str(found.text)
    index = await pipeline(ToolCall("schema", {}, context))
    assert not index.is_error, index.text
    assert "messages" in str(index.text)
    assert [c.path for c in rs.calls] == [
        "/v1/streams/messages/records/m3",
        "/v1/schema",  # whether the record heads a thread (retrieval.thread_below), once a minute
        "/v1/streams/messages/records/m3/field-window",
        "/v1/search",
        "/v1/schema",
    ]
