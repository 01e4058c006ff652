"""The sandbox's schema, blob, aggregate and introspection routes."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.sandbox.rs_http import WORK, basic, get


async def test_schema_declares_relation_cardinality_like_the_reference(shared_sandbox: Any) -> None:
    status, body, _ = await get(shared_sandbox, "/v1/schema?stream=messages&connection_id=cin_mail_work")
    assert status == 200
    [stream] = body["connectors"][0]["streams"]
    relations = {r["name"]: r for r in stream["expand_capabilities"]}
    assert relations["message_bodies"]["cardinality"] == "has_one"
    assert "max_limit" not in relations["message_bodies"]
    assert (relations["attachments"]["cardinality"], relations["attachments"]["max_limit"]) == (
        "has_many",
        50,
    )


async def test_schema_detail_full_for_one_stream_and_connection(shared_sandbox: Any) -> None:
    status, body, _ = await get(
        shared_sandbox, "/v1/schema?detail=full&stream=messages&connection_id=cin_mail_work"
    )
    assert status == 200
    [connector] = body["connectors"]
    [stream] = connector["streams"]
    assert (connector["connector_key"], stream["name"]) == ("gmail", "messages")
    assert [c["connection_id"] for c in stream["granted_connections"]] == ["cin_mail_work"]
    capability = stream["field_capabilities"]["received_at"]
    assert isinstance(capability, dict)
    assert capability["granted"] is True
    assert stream["expand_capabilities"][0]["name"] == "message_bodies"


async def test_blob_bytes_with_headers_only_through_a_readable_record(shared_sandbox: Any) -> None:
    status, body, headers = await get(shared_sandbox, "/v1/blobs/blob_receipt_png")
    assert status == 200
    assert body.startswith(b"\x89PNG")
    assert headers["Content-Type"] == "image/png"
    assert headers["Cache-Control"] == "private, no-store"


@pytest.mark.parametrize(
    ("query", "check"),
    [
        ("metric=count", lambda v: isinstance(v, int) and v > 100),
        ("metric=sum&field=size_bytes", lambda v: isinstance(v, float | int) and v > 0),
        ("metric=min&field=received_at", lambda v: v.startswith("2025-05")),
        ("metric=max&field=received_at", lambda v: v.startswith("2026-")),
        ("metric=count_distinct&field=from_email", lambda v: 5 <= v <= 20),
    ],
)
async def test_scalar_aggregates(shared_sandbox: Any, query: str, check: Any) -> None:
    status, body, _ = await get(shared_sandbox, f"/v1/streams/messages/aggregate?{query}&{WORK}")
    assert status == 200
    assert check(body["value"]), body


async def test_grouped_aggregate_counts_add_up(shared_sandbox: Any) -> None:
    _, body, _ = await get(
        shared_sandbox, f"/v1/streams/messages/aggregate?metric=count&group_by=from_email&limit=3&{WORK}"
    )
    counts = [g["count"] for g in body["groups"]]
    assert counts == sorted(counts, reverse=True)
    assert sum(counts) + body["other_count"] == body["filtered_record_count"]


async def test_introspection(shared_sandbox: Any) -> None:
    config = shared_sandbox.config
    auth = basic(config.introspection_client_id, config.introspection_client_secret)
    async with aiohttp.ClientSession() as session:

        async def introspect(token: str, credentials: str = auth) -> tuple[int, Any]:
            async with session.post(
                shared_sandbox.url + "/introspect",
                data={"token": token},
                headers={"Authorization": credentials},
            ) as r:
                return r.status, await r.json()

        status, _bad = await introspect(shared_sandbox.tokens["client_broad"], basic("x", "y"))
        assert status == 401
        _, client = await introspect(shared_sandbox.tokens["client_narrow"])
        assert client["active"] is True
        assert client["pdpp_token_kind"] == "client"
        assert client["iss"] == client["aud"] == shared_sandbox.url
        assert client["authorization_details"][0]["streams"][0]["instance_ids"] == ["cin_mail_work"]
        _, owner = await introspect(shared_sandbox.tokens["owner"])
        assert owner["pdpp_token_kind"] == "owner"
        _, package = await introspect(shared_sandbox.tokens["package"])
        members = package["package"]["members"]
        assert package["pdpp_token_kind"] == "mcp_package"
        assert {m["access_token"] for m in members} == {
            shared_sandbox.tokens["client_work_mail"],
            shared_sandbox.tokens["client_chat"],
        }
        _, revoked = await introspect(shared_sandbox.tokens["client_revoked"])
        assert revoked == {"active": False, "inactive_reason": "grant_revoked"}
        _, unknown = await introspect("nope")
        assert unknown["active"] is False
