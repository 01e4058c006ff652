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

from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.sandbox.dataset import EMITTED_AT

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


_PAGE: dict[str, Any] = {
    "kind": "page",
    "session": "records",
    "stream": "messages",
    "order": "DESC",
    "cursor_value": "2026-01-01T00:00:00.000Z",
    "primary_key": ["msg_work_0001"],
}
_CHANGES: dict[str, Any] = {
    "kind": "page",
    "session": "changes",
    "stream": "messages",
    "connection_id": "cin_mail_work",
    "after": 0,
    "horizon": 1,
}

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
    # decodable cursors with junk inside: 400 invalid_cursor, never a 500
    *[
        ("client_broad", f"{Q}?{WORK}&cursor={_token(junk)}", 400, "invalid_cursor")
        for junk in (
            {**_PAGE, "primary_key": 5},
            {**_PAGE, "primary_key": []},
            {**_PAGE, "primary_key": [7]},
            {**_PAGE, "cursor_value": {"a": 1}},
            {**_PAGE, "stream": "threads"},
            {"kind": "page", "session": "changes", "after": 0, "horizon": 1},
        )
    ],
    *[
        ("client_broad", f"{Q}?{WORK}&changes_since=beginning&cursor={_token(junk)}", 400, "invalid_cursor")
        for junk in (
            {"kind": "page", "session": "changes", "after": "x"},
            {**_CHANGES, "after": -1},
            {**_CHANGES, "after": 5, "horizon": 2},
            {**_CHANGES, "horizon": 10**9},
            {**_CHANGES, "stream": "threads"},
            _PAGE,
        )
    ],
    # malformed changes_since tokens: 400 invalid_cursor (another epoch is 410, above)
    *[
        ("client_broad", f"{Q}?{WORK}&changes_since={_token(junk)}", 400, "invalid_cursor")
        for junk in (
            {"v": 1, "epoch": "e2026", "seq": -5},
            {"v": 1, "epoch": "e2026", "seq": "3"},
            {"v": 1, "epoch": "e2026", "seq": True},
            {"v": True, "epoch": "e2026", "seq": 3},
            {"v": 1, "epoch": 2026, "seq": 3},
            {"v": 1, "epoch": "e2026", "seq": 10**9},  # a position this history never reached
        )
    ],
    # typed filter values are checked against the field's type
    ("client_broad", f"{Q}?{WORK}&filter[received_at][gte]=banana", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&filter[received_at][lt]=2026-13-45", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&filter[size_bytes][gte]=1.5", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&filter[size_bytes][gte]=nan", 400, "invalid_request"),
    # window is none|exact, and not a changes parameter
    ("client_broad", f"{Q}?{WORK}&window=all", 400, "invalid_request"),
    ("client_broad", f"{Q}?{WORK}&changes_since=beginning&window=exact", 400, "invalid_request"),
    # the changes feed checks filter and fields like a list
    ("client_broad", f"{Q}?{WORK}&changes_since=beginning&fields=nope", 400, "unknown_field"),
    ("client_broad", f"{Q}?{WORK}&changes_since=beginning&filter[nope]=1", 400, "unknown_field"),
    ("client_narrow", f"{Q}?changes_since=beginning&fields=thread_id", 403, "field_not_granted"),
    # detail fields: unknown names are refused (ungranted ones are dropped, see below)
    ("client_broad", f"/v1/streams/messages/records/msg_work_0001?{WORK}&fields=nope", 400, "unknown_field"),
    # field window: grant and existence
    (
        "client_narrow",
        "/v1/streams/messages/records/msg_work_0001/field-window?field=thread_id",
        403,
        "field_not_granted",
    ),
    (
        "client_broad",
        f"/v1/streams/message_bodies/records/nope/field-window?{WORK}&field=body_text",
        404,
        "not_found",
    ),
    # unknown query keys are refused on aggregate and every search mode
    ("client_broad", f"/v1/streams/messages/aggregate?metric=count&bogus=1&{WORK}", 400, "invalid_request"),
    ("client_broad", "/v1/search?q=invoice&bogus=1", 400, "invalid_request"),
    ("client_broad", "/v1/search/semantic?q=invoice&bogus=1", 400, "invalid_request"),
    ("client_broad", "/v1/search/hybrid?q=invoice&bogus=1", 400, "invalid_request"),
    ("client_broad", "/v1/search?q=invoice&connection_id=cin_nope", 404, "connection_not_found"),
    ("client_broad", "/v1/search/semantic?q=invoice&connection_id=cin_nope", 404, "connection_not_found"),
    # traversal in blob ids and stream names
    ("client_broad", "/v1/blobs/..%2F..%2Fetc%2Fpasswd", 404, "blob_not_found"),
    ("client_broad", "/v1/blobs/blob_receipt_png%2F..%2F..", 404, "blob_not_found"),
    ("client_broad", "/v1/streams/..%2F..%2Fetc%2Fpasswd/records", 401, "context.stream_not_allowed"),
    ("owner", "/v1/streams/..%2F..%2Fetc%2Fpasswd/records", 404, "not_found"),
    ("owner", "/v1/streams/messages%2F..%2Fthreads", 404, "not_found"),
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
    assert body["error"]["type"] == error_type_for(status)  # the table the gateway reads with
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
        # the matched value, as the reference's snippet of the best field match
        assert result["snippet"]["field"] == "from_email"
        assert "<mark>citystorage</mark>" in result["snippet"]["text"].lower()
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
    # the reference's merge keeps identity, sources, scores and one snippet: no excerpts, no authored_at
    assert all("evidence_excerpts" not in h and "authored_at" not in h for h in hybrid["data"])
    assert all(h["snippet"]["text"] for h in hybrid["data"])


async def test_search_hits_carry_the_ingest_time_and_authored_time_as_the_reference_does(
    shared_sandbox: Any,
) -> None:
    _, body, _ = await _get(shared_sandbox, "/v1/search?q=invoice&limit=100")
    hits = body["data"]
    assert {hit["emitted_at"] for hit in hits} == {EMITTED_AT}  # one ingest time for every seeded record
    mail = [hit for hit in hits if hit["connector_id"] == "gmail"]
    chat = [hit for hit in hits if hit["connector_id"] == "slack"]
    assert mail
    assert chat
    assert all("authored_at" not in hit for hit in mail)  # received_at is no authored-time field there
    for hit in chat:  # slack messages have sent_at
        _, record, _ = await _get(shared_sandbox, f"{hit['record_url']}?connection_id={hit['connection_id']}")
        assert hit["authored_at"] == record["data"]["sent_at"]
        assert record["emitted_at"] == EMITTED_AT


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


async def test_expand_has_one_embeds_one_record(shared_sandbox: Any) -> None:
    status, page, _ = await _get(shared_sandbox, f"{Q}?{WORK}&limit=3&expand=message_bodies")
    assert status == 200
    for record in page["data"]:
        body = record["expanded"]["message_bodies"]
        assert body["object"] == "record"
        assert body["data"]["message_id"] == record["id"]


async def test_expand_has_many_embeds_a_bounded_list(shared_sandbox: Any) -> None:
    status, record, _ = await _get(
        shared_sandbox,
        f"/v1/streams/messages/records/msg_work_0003?{WORK}&expand=attachments&expand_limit[attachments]=1",
    )
    assert status == 200
    children = record["expanded"]["attachments"]
    assert (children["object"], children["has_more"]) == ("list", False)
    assert [child["data"]["message_id"] for child in children["data"]] == ["msg_work_0003"]


async def test_expand_has_one_takes_no_limit(shared_sandbox: Any) -> None:
    status, body, _ = await _get(
        shared_sandbox, f"{Q}?{WORK}&expand=message_bodies&expand_limit[message_bodies]=1"
    )
    assert (status, body["error"]["code"], body["error"]["param"]) == (400, "invalid_expand", "expand_limit")


async def test_schema_declares_relation_cardinality_like_the_reference(shared_sandbox: Any) -> None:
    status, body, _ = await _get(shared_sandbox, "/v1/schema?stream=messages&connection_id=cin_mail_work")
    assert status == 200
    [stream] = body["connectors"][0]["streams"]
    relations = {r["name"]: r for r in stream["expand_capabilities"]}
    assert relations["message_bodies"]["cardinality"] == "has_one"
    assert "max_limit" not in relations["message_bodies"]
    assert (relations["attachments"]["cardinality"], relations["attachments"]["max_limit"]) == (
        "has_many",
        50,
    )


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


async def test_links_next_repeats_the_request_with_the_next_cursor(shared_sandbox: Any) -> None:
    # search (lexical and semantic) and the changes feed, the way captures 28/30/32 show it
    for path in (
        "/v1/search?q=invoice&limit=2",
        "/v1/search/semantic?q=lisbon+apartment+lease&limit=2",
        f"{Q}?{WORK}&changes_since=beginning&limit=5",
        f"{Q}?{WORK}&limit=5&filter[received_at][gte]=2026-01-01T00:00:00Z",
    ):
        _, first, _ = await _get(shared_sandbox, path)
        sent = first["links"]["self"]  # the query as it arrived (the client encodes brackets)
        assert first["links"]["next"] == f"{sent}&cursor={first['next_cursor']}"
        _, second, _ = await _get(shared_sandbox, first["links"]["next"])
        assert second["links"]["self"] == first["links"]["next"]
        assert second["links"]["next"] == f"{sent}&cursor={second['next_cursor']}"
        assert {r.get("id") or r.get("record_key") for r in first["data"]}.isdisjoint(
            {r.get("id") or r.get("record_key") for r in second["data"]}
        )
    _, hybrid, _ = await _get(shared_sandbox, "/v1/search/hybrid?q=invoice&limit=2")
    assert hybrid["has_more"] is True
    assert hybrid["links"]["next"] is None


async def test_semantic_and_hybrid_search_apply_filters(shared_sandbox: Any) -> None:
    base = f"q=lisbon+apartment+lease&streams=messages&{WORK}&limit=100"
    for mode in ("semantic", "hybrid"):
        _, everything, _ = await _get(shared_sandbox, f"/v1/search/{mode}?{base}")
        assert everything["data"]
        _, nothing, _ = await _get(
            shared_sandbox, f"/v1/search/{mode}?{base}&filter[received_at][lt]=2000-01-01T00:00:00Z"
        )
        assert nothing["data"] == []
        _, unseen, _ = await _get(shared_sandbox, f"/v1/search/{mode}?{base}&filter[is_seen]=false")
        assert 0 < len(unseen["data"]) < len(everything["data"])
        for hit in unseen["data"]:
            _, record, _ = await _get(shared_sandbox, f"{hit['record_url']}?{WORK}")
            assert record["data"]["is_seen"] is False


async def _changes(sandbox: Any, path: str) -> tuple[list[dict[str, Any]], str]:
    records: list[dict[str, Any]] = []
    _, page, _ = await _get(sandbox, path)
    token = page["next_changes_since"]
    while True:
        records.extend(page["data"])
        if not page["links"]["next"]:
            return records, token
        _, page, _ = await _get(sandbox, page["links"]["next"])


async def test_changes_feed_applies_filter_and_projection(shared_sandbox: Any) -> None:
    path = f"{Q}?{WORK}&changes_since=beginning&limit=100"
    everything, token = await _changes(shared_sandbox, path)
    seen, _ = await _changes(shared_sandbox, f"{path}&filter[is_seen]=true&fields=id,is_seen")
    live = [r for r in seen if not r.get("deleted")]
    assert live
    assert all(set(r["data"]) == {"id", "is_seen"} and r["data"]["is_seen"] is True for r in live)
    assert {r["id"] for r in seen} < {r["id"] for r in everything}
    assert len(live) == sum(1 for r in everything if not r.get("deleted") and r["data"]["is_seen"])
    none, none_token = await _changes(shared_sandbox, f"{path}&filter[received_at][lt]=2000-01-01T00:00:00Z")
    assert none == []  # tombstones too: a deleted record shows only if it matched
    assert none_token == token


async def test_window_exact_reports_the_span_of_the_matching_records(shared_sandbox: Any) -> None:
    _, page, _ = await _get(shared_sandbox, f"{Q}?{WORK}&window=exact&count=exact&limit=1")
    window = page["meta"]["window"]
    assert window["total"] == page["meta"]["count"]["value"]
    _, oldest, _ = await _get(shared_sandbox, f"{Q}?{WORK}&order=asc&limit=1")
    _, newest, _ = await _get(shared_sandbox, f"{Q}?{WORK}&order=desc&limit=1")
    assert window["earliest_at"] == oldest["data"][0]["data"]["received_at"]
    assert window["latest_at"] == newest["data"][0]["data"]["received_at"]
    since = "2026-01-01T00:00:00Z"
    _, narrowed, _ = await _get(
        shared_sandbox, f"{Q}?{WORK}&window=exact&count=exact&filter[received_at][gte]={since}"
    )
    assert narrowed["meta"]["window"]["total"] == narrowed["meta"]["count"]["value"] < window["total"]
    assert narrowed["meta"]["window"]["earliest_at"] >= "2026-01-01"
    _, none, _ = await _get(shared_sandbox, f"{Q}?{WORK}&window=none")
    assert "window" not in none["meta"]
    _, fan_in, _ = await _get(shared_sandbox, f"{Q}?window=exact&count=exact")
    assert fan_in["meta"]["window"]["total"] == fan_in["meta"]["count"]["value"] > window["total"]


async def test_field_window_limit_chars_is_the_limit_applied(shared_sandbox: Any) -> None:
    _, first, _ = await _get(shared_sandbox, WINDOW + "&field=body_text")
    total = first["window"]["total_chars"]
    assert first["window"]["limit_chars"] == 4096
    _, tail, _ = await _get(shared_sandbox, WINDOW + f"&field=body_text&offset_chars={total - 10}")
    assert (len(tail["window"]["text"]), tail["window"]["limit_chars"]) == (10, 4096)
    _, explicit, _ = await _get(
        shared_sandbox, WINDOW + f"&field=body_text&offset_chars={total - 10}&limit_chars=1000"
    )
    assert (len(explicit["window"]["text"]), explicit["window"]["limit_chars"]) == (10, 1000)
    assert explicit["window"]["previous_offset_chars"] == total - 1010
    _, context, _ = await _get(
        shared_sandbox, WINDOW + "&field=body_text&q=security+deposit&before_chars=20&after_chars=60"
    )
    assert context["window"]["limit_chars"] == 20 + len("security deposit") + 60
    _, clamped, _ = await _get(shared_sandbox, WINDOW + "&field=body_text&limit_chars=20000")
    assert clamped["window"]["limit_chars"] == 16_384


async def test_sort_on_the_cursor_field_orders_both_ways(shared_sandbox: Any) -> None:
    for sort, descending in (("received_at", False), ("-received_at", True)):
        status, page, _ = await _get(shared_sandbox, f"{Q}?{WORK}&sort={sort}&limit=30")
        assert status == 200
        times = [r["data"]["received_at"] for r in page["data"]]
        assert times == sorted(times, reverse=descending)
        _, more, _ = await _get(shared_sandbox, page["links"]["next"])
        later = [r["data"]["received_at"] for r in more["data"]]
        assert (later[0] <= times[-1]) if descending else (later[0] >= times[-1])


async def test_range_operators_are_strict_or_inclusive(shared_sandbox: Any) -> None:
    _, page, _ = await _get(shared_sandbox, f"{Q}?{WORK}&order=asc&limit=50")
    low, high = page["data"][10]["data"]["received_at"], page["data"][30]["data"]["received_at"]
    expected = {
        ("gt", "lt"): [r["id"] for r in page["data"] if low < r["data"]["received_at"] < high],
        ("gte", "lte"): [r["id"] for r in page["data"] if low <= r["data"]["received_at"] <= high],
        ("gt", "lte"): [r["id"] for r in page["data"] if low < r["data"]["received_at"] <= high],
    }
    for (above, below), ids in expected.items():
        _, got, _ = await _get(
            shared_sandbox,
            f"{Q}?{WORK}&order=asc&filter[received_at][{above}]={low}&filter[received_at][{below}]={high}",
        )
        assert [r["id"] for r in got["data"]] == ids, (above, below)
    # a date-only bound and an offset are instants too
    _, day, _ = await _get(shared_sandbox, f"{Q}?{WORK}&count=exact&filter[received_at][gte]=2026-01-01")
    _, zoned, _ = await _get(
        shared_sandbox, f"{Q}?{WORK}&count=exact&filter[received_at][gte]=2026-01-01T01:00:00%2B01:00"
    )
    assert day["meta"]["count"]["value"] == zoned["meta"]["count"]["value"] > 0


async def test_ambiguous_record_resolves_with_connection_id(shared_sandbox: Any) -> None:
    status, _, _ = await _get(shared_sandbox, "/v1/streams/messages/records/msg_shared_0001")
    assert status == 409
    for connection in ("cin_mail_work", "cin_mail_personal"):
        status, record, _ = await _get(
            shared_sandbox, f"/v1/streams/messages/records/msg_shared_0001?connection_id={connection}"
        )
        assert status == 200
        assert (record["id"], record["connection_id"]) == ("msg_shared_0001", connection)


async def test_record_detail_projects_granted_fields(shared_sandbox: Any) -> None:
    status, record, _ = await _get(
        shared_sandbox, "/v1/streams/messages/records/msg_work_0001?fields=subject,is_seen", "client_narrow"
    )
    assert status == 200
    assert set(record["data"]) == {"subject", "is_seen"}


async def test_record_detail_drops_ungranted_fields_like_the_reference(shared_sandbox: Any) -> None:
    status, record, _ = await _get(
        shared_sandbox, "/v1/streams/messages/records/msg_work_0001?fields=subject,thread_id", "client_narrow"
    )
    assert status == 200
    assert set(record["data"]) == {"subject"}


async def test_schema_detail_full_for_one_stream_and_connection(shared_sandbox: Any) -> None:
    status, body, _ = await _get(
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


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"\xff\xfe==", "application/x-www-form-urlencoded"),
        (b"\xff", "multipart/form-data"),  # no boundary
    ],
)
async def test_introspection_refuses_a_body_it_cannot_read(
    shared_sandbox: Any, body: bytes, content_type: str
) -> None:
    config = shared_sandbox.config
    headers = {
        "Authorization": _basic(config.introspection_client_id, config.introspection_client_secret),
        "Content-Type": content_type,
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(shared_sandbox.url + "/introspect", data=body, headers=headers) as response,
    ):
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_request"


async def test_search_cursor_with_a_forged_offset_is_refused(shared_sandbox: Any) -> None:
    path = "/v1/search?q=invoice&limit=2"
    _, page, _ = await _get(shared_sandbox, path)
    raw = page["next_cursor"]
    token = orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    for forged in (-5, True, "2", None):
        status, body, _ = await _get(shared_sandbox, f"{path}&cursor={_token({**token, 'off': forged})}")
        assert (status, body["error"]["code"]) == (400, "invalid_cursor"), forged
