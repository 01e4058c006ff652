"""Sandbox RS routes over HTTP: grant enforcement, bad input, paging, changes, windows, blobs.

Every refusal is the reference RS's status and code; no input (junk cursors, unknown
fields, bad limits, traversal in ids) produces a 500.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import orjson
import pytest

Q = "/v1/streams/messages/records"
WORK = "connection_id=cin_mail_work"


async def _get(
    sandbox: Any, path: str, token: str | None = "client_broad", **headers: str
) -> tuple[int, Any, Any]:
    if token is not None:
        headers["Authorization"] = f"Bearer {sandbox.tokens.get(token, token)}"
    async with (
        aiohttp.ClientSession() as session,
        session.get(sandbox.url + path, headers=headers) as response,
    ):
        raw = await response.read()
        body = orjson.loads(raw) if response.content_type == "application/json" else raw
        return response.status, body, response.headers


def _basic(user: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()


def _token(payload: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).decode().rstrip("=")


REFUSALS = [
    # authentication and grant lifecycle
    (None, "/v1/schema", 401, "authentication_error"),
    ("not-a-token", "/v1/schema", 401, "context.active_false"),
    ("client_revoked", "/v1/schema", 403, "grant_revoked"),
    ("client_expired", Q, 403, "grant_expired"),
    ("package", "/v1/schema", 404, "not_found"),
    # grant enforcement
    ("client_narrow", "/v1/streams/issues/records", 401, "context.stream_not_allowed"),
    ("client_narrow", f"{Q}?connection_id=cin_mail_personal", 401, "context.instance_mismatch"),
    ("client_narrow", f"{Q}?fields=thread_id", 403, "field_not_granted"),
    ("client_narrow", f"{Q}?filter[thread_id]=x", 403, "field_not_granted"),
    ("client_narrow", "/v1/search?q=invoice&streams=issues", 403, "grant_stream_not_allowed"),
    ("client_broad", "/v1/streams?connection_id=cin_nope", 404, "connection_not_found"),
    ("client_narrow", "/v1/blobs/blob_receipt_png", 404, "blob_not_found"),
    # bad input
    ("client_broad", f"{Q}?bogus=1", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&cursor=junk!!", 400, "invalid_cursor"),
    ("client_broad", f"{Q}?{WORK}&order=sideways", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&sort=subject", 400, "invalid_sort"),
    ("client_broad", f"{Q}?{WORK}&sort=-received_at&order=asc", 400, "invalid_sort"),
    ("client_broad", f"{Q}?{WORK}&fields=nope", 400, "unknown_field"),
    ("client_broad", f"{Q}?{WORK}&count=lots", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&filter[subject][gte]=a", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&filter[is_seen]=maybe", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&expand=nope", 400, "invalid_expand"),
    (
        "client_broad",
        f"{Q}?{WORK}&expand=message_bodies&expand_limit[message_bodies]=99",
        400,
        "invalid_expand",
    ),
    ("client_broad", f"{Q}?{WORK}&changes_since=junk", 400, "invalid_cursor"),
    (
        "client_broad",
        f"{Q}?{WORK}&changes_since={_token({'v': 1, 'epoch': 'e1999', 'seq': 3})}",
        410,
        "cursor_expired",
    ),
    ("client_broad", f"{Q}?changes_since=beginning", 400, "invalid_argument"),
    ("client_broad", f"{Q}?{WORK}&changes_since=beginning&order=asc", 400, "invalid_request"),
    ("client_broad", "/v1/streams/messages/records/..%2F..%2Fetc%2Fpasswd", 404, "not_found"),
    ("client_broad", "/v1/streams/messages/records/a%00b", 404, "not_found"),
    ("client_broad", "/v1/streams/messages/records/msg_shared_0001", 409, "ambiguous_connection"),
    ("client_broad", "/v1/schema?detail=full", 400, "invalid_request"),
    ("client_broad", "/v1/schema?detail=full&stream=messages", 409, "ambiguous_schema_detail"),
    (
        "client_broad",
        "/v1/streams/messages/aggregate?metric=count&group_by=subject&" + WORK,
        400,
        "invalid_request",
    ),
    (
        "client_broad",
        "/v1/streams/messages/aggregate?metric=count&group_by_time=received_at&" + WORK,
        400,
        "invalid_request",
    ),
    (
        "client_broad",
        "/v1/streams/messages/aggregate?metric=count&group_by=is_seen&limit=0&" + WORK,
        400,
        "invalid_request",
    ),
    ("client_broad", "/v1/streams/messages/aggregate?metric=median&" + WORK, 400, "invalid_request"),
    (
        "client_broad",
        "/v1/streams/message_bodies/aggregate?metric=count_distinct&field=message_id",
        400,
        "invalid_request",
    ),
    ("client_broad", "/v1/search?limit=5", 400, "invalid_request"),
    ("client_broad", "/v1/search/hybrid?q=invoice&cursor=x", 400, "invalid_request"),
    (
        "client_broad",
        "/v1/search?q=invoice&cursor=" + _token({"off": 5, "snap": "other"}),
        400,
        "invalid_cursor",
    ),
    ("client_broad", "/v1/blobs/blob_nope", 404, "blob_not_found"),
]
WINDOW = "/v1/streams/message_bodies/records/body_lisbon_lease/field-window?" + WORK
WINDOW_REFUSALS = [
    ("", 400, "invalid_field_path"),
    ("&field=body_text&q=deposit&offset_chars=3", 400, "invalid_window"),
    ("&field=body_text&before_chars=10", 400, "invalid_window"),
    ("&field=body_text&offset_chars=-1", 400, "invalid_window"),
    ("&field=body_text_bytes", 422, "field_not_text"),
    ("&field=nope", 404, "field_not_found"),
    ("&field=body_text&q=zebra-crossing-xyz", 404, "query_not_found"),
]


@pytest.mark.parametrize(("token", "path", "status", "code"), REFUSALS)
async def test_refusals_use_the_reference_status_and_code(
    shared_sandbox: Any, token: str | None, path: str, status: int, code: str
) -> None:
    got, body, headers = await _get(shared_sandbox, path, token)
    assert (got, body["error"]["code"]) == (status, code), body
    assert body["error"]["request_id"] == headers["Request-Id"]
    assert body["error"]["message"]


@pytest.mark.parametrize(("query", "status", "code"), WINDOW_REFUSALS)
async def test_field_window_refusals(shared_sandbox: Any, query: str, status: int, code: str) -> None:
    got, body, _ = await _get(shared_sandbox, WINDOW + query)
    assert (got, body["error"]["code"]) == (status, code)


async def test_unsupported_pdpp_version_is_refused(shared_sandbox: Any) -> None:
    status, body, headers = await _get(shared_sandbox, "/v1/schema", **{"PDPP-Version": "1999-01-01"})
    assert (status, body["error"]["code"]) == (400, "unsupported_version")
    assert headers["PDPP-Version"] == "2026-04-06"


async def test_limits_default_and_clamp(shared_sandbox: Any) -> None:
    _, junk, _ = await _get(shared_sandbox, f"{Q}?{WORK}&limit=abc")
    assert len(junk["data"]) == 25
    _, big, _ = await _get(shared_sandbox, f"{Q}?{WORK}&limit=500")
    assert len(big["data"]) == 100
    assert big["meta"]["warnings"][0]["code"] == "limit_clamped"
    assert big["meta"]["warnings"][0]["detail"] == {"requested_limit": 500, "max_limit": 100}


async def test_paging_covers_the_stream_once_in_order(shared_sandbox: Any) -> None:
    seen: list[str] = []
    path = f"{Q}?{WORK}&limit=40&order=asc&count=exact"
    cursor = None
    total = None
    while True:
        _, page, _ = await _get(shared_sandbox, path + (f"&cursor={cursor}" if cursor else ""))
        total = page["meta"]["count"]["value"]
        times = [r["data"]["received_at"] for r in page["data"]]
        assert times == sorted(times)
        seen.extend(r["id"] for r in page["data"])
        cursor = page.get("next_cursor")
        assert bool(cursor) == page["has_more"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == total
    _, desc, _ = await _get(shared_sandbox, f"{Q}?{WORK}&limit=5")
    status, mismatch, _ = await _get(
        shared_sandbox, f"{Q}?{WORK}&limit=5&order=asc&cursor={desc['next_cursor']}"
    )
    assert (status, mismatch["error"]["code"]) == (400, "invalid_cursor")


async def test_fan_in_pages_have_no_cursor_and_say_so(shared_sandbox: Any) -> None:
    _, page, _ = await _get(shared_sandbox, f"{Q}?limit=10")
    assert page["has_more"] is True
    assert "next_cursor" not in page
    assert {w["code"] for w in page["meta"]["warnings"]} == {"partial_results"}
    assert len({r["connection_id"] for r in page["data"]}) >= 2


async def test_typed_filters_and_projection_are_honoured_for_clients(shared_sandbox: Any) -> None:
    _, page, _ = await _get(
        shared_sandbox,
        f"{Q}?{WORK}&filter[is_seen]=false&filter[received_at][gte]=2026-01-01T00:00:00Z&fields=id,is_seen,received_at",
    )
    assert page["data"]
    for record in page["data"]:
        assert set(record["data"]) == {"id", "is_seen", "received_at"}
        assert record["data"]["is_seen"] is False
        assert record["data"]["received_at"] >= "2026-01-01"
    _, narrow, _ = await _get(shared_sandbox, Q, "client_narrow")
    granted = {"id", "subject", "from_name", "received_at", "snippet", "is_seen"}
    assert all(set(r["data"]) <= granted for r in narrow["data"])


async def test_changes_feed_bootstraps_pages_and_reports_tombstones(shared_sandbox: Any) -> None:
    path = f"{Q}?{WORK}&changes_since=beginning&limit=100"
    records: list[dict[str, Any]] = []
    _, page, _ = await _get(shared_sandbox, path)
    token = page["next_changes_since"]
    while True:
        records.extend(page["data"])
        if not page.get("next_cursor"):
            break
        _, page, _ = await _get(shared_sandbox, f"{path}&cursor={page['next_cursor']}")
        assert page["next_changes_since"] == token
    tombstones = [r for r in records if r.get("deleted")]
    assert {t["id"] for t in tombstones} == {"msg_deleted_0007", "msg_deleted_0008"}
    assert all("data" not in t and t["deleted_at"] for t in tombstones)
    _, again, _ = await _get(shared_sandbox, f"{Q}?{WORK}&changes_since={token}")
    assert again["data"] == []  # nothing changed since the terminal token


async def test_field_window_pages_and_finds_matches(shared_sandbox: Any) -> None:
    _, first, _ = await _get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=1000")
    window = first["window"]
    assert (window["start_chars"], window["end_chars"], window["complete"]) == (0, 1000, False)
    assert window["total_chars"] > 30_000
    _, second, _ = await _get(
        shared_sandbox,
        WINDOW + f"&field=body_text&offset_chars={window['next_offset_chars']}&limit_chars=1000",
    )
    assert second["window"]["start_chars"] == 1000
    assert second["window"]["previous_offset_chars"] == 0
    _, match, _ = await _get(
        shared_sandbox, WINDOW + "&field=body_text&q=security+deposit&before_chars=20&after_chars=60"
    )
    hit = match["window"]
    assert "security deposit for the Lisbon apartment" in hit["text"]
    assert hit["end_chars"] - hit["start_chars"] == 20 + len("security deposit") + 60
    _, clamped, _ = await _get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=20000")
    assert clamped["window"]["end_chars"] == 16_384
    assert clamped["meta"]["warnings"][0]["code"] == "limit_clamped"


async def test_search_proves_text_matches_and_not_metadata_matches(shared_sandbox: Any) -> None:
    _, text_hit, _ = await _get(shared_sandbox, "/v1/search?q=locker+code&" + WORK)
    hit = text_hit["data"][0]
    excerpt = hit["evidence_excerpts"][0]
    assert "<mark>" in excerpt["preview_text"]
    assert excerpt["read"]["route"].endswith("/field-window")
    _, metadata, _ = await _get(shared_sandbox, "/v1/search?q=citystorage")  # only in from_email (metadata)
    for result in metadata["data"]:
        assert result["matched_fields"] == ["from_email"]
        assert "evidence_excerpts" not in result
        assert "snippet" not in result
    assert metadata["data"]
    _, paged, _ = await _get(shared_sandbox, "/v1/search?q=invoice&limit=2")
    _, more, _ = await _get(shared_sandbox, f"/v1/search?q=invoice&limit=2&cursor={paged['next_cursor']}")
    first_keys = {(h["connection_id"], h["record_key"]) for h in paged["data"]}
    assert first_keys.isdisjoint({(h["connection_id"], h["record_key"]) for h in more["data"]})


async def test_semantic_and_hybrid_shapes(shared_sandbox: Any) -> None:
    _, semantic, _ = await _get(shared_sandbox, "/v1/search/semantic?q=lisbon+apartment+lease&limit=3")
    assert all(
        h["retrieval_mode"] == "semantic" and h["score"]["kind"] == "semantic_distance"
        for h in semantic["data"]
    )
    _, hybrid, _ = await _get(shared_sandbox, "/v1/search/hybrid?q=lisbon+apartment+lease&limit=3")
    assert "next_cursor" not in hybrid
    assert all(
        h["retrieval_mode"] == "hybrid" and set(h["retrieval_sources"]) <= {"lexical", "semantic"}
        for h in hybrid["data"]
    )


async def test_blob_bytes_with_headers_only_through_a_readable_record(shared_sandbox: Any) -> None:
    status, body, headers = await _get(shared_sandbox, "/v1/blobs/blob_receipt_png")
    assert status == 200
    assert body.startswith(b"\x89PNG")
    assert headers["Content-Type"] == "image/png"
    assert headers["Cache-Control"] == "private, no-store"


async def test_introspection(shared_sandbox: Any) -> None:
    config = shared_sandbox.config
    auth = _basic(config.introspection_client_id, config.introspection_client_secret)
    async with aiohttp.ClientSession() as session:

        async def introspect(token: str, credentials: str = auth) -> tuple[int, Any]:
            async with session.post(
                shared_sandbox.url + "/introspect",
                data={"token": token},
                headers={"Authorization": credentials},
            ) as r:
                return r.status, await r.json()

        status, _bad = await introspect(shared_sandbox.tokens["client_broad"], _basic("x", "y"))
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


async def test_expand_embeds_bounded_children(shared_sandbox: Any) -> None:
    status, page, _ = await _get(
        shared_sandbox, f"{Q}?{WORK}&limit=3&expand=message_bodies&expand_limit[message_bodies]=1"
    )
    assert status == 200
    for record in page["data"]:
        children = record["expanded"]["message_bodies"]
        assert children["object"] == "list"
        assert len(children["data"]) == 1
        assert children["data"][0]["data"]["message_id"] == record["id"]


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
    status, body, _ = await _get(shared_sandbox, f"/v1/streams/messages/aggregate?{query}&{WORK}")
    assert status == 200
    assert check(body["value"]), body


async def test_grouped_aggregate_counts_add_up(shared_sandbox: Any) -> None:
    _, body, _ = await _get(
        shared_sandbox, f"/v1/streams/messages/aggregate?metric=count&group_by=from_email&limit=3&{WORK}"
    )
    counts = [g["count"] for g in body["groups"]]
    assert counts == sorted(counts, reverse=True)
    assert sum(counts) + body["other_count"] == body["filtered_record_count"]
