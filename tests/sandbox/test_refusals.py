"""Sandbox RS refusals over HTTP: the reference RS's status, code and type for every bad request.

Grant enforcement, bad input, junk cursors and tokens, traversal in ids: each is the
reference's refusal, never a 500.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import orjson
import pytest

from pdpp_gateway.error_types import error_type_for
from tests.sandbox.rs_http import WINDOW, WORK, Q, basic, get, token_of

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
        f"{Q}?{WORK}&changes_since={token_of({'v': 1, 'epoch': 'e1999', 'seq': 3})}",
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
        "/v1/search?q=invoice&cursor=" + token_of({"off": 5, "snap": "other"}),
        400,
        "invalid_cursor",
    ),
    ("client_broad", "/v1/blobs/blob_nope", 404, "blob_not_found"),
    # decodable cursors with junk inside: 400 invalid_cursor, never a 500
    *[
        ("client_broad", f"{Q}?{WORK}&cursor={token_of(junk)}", 400, "invalid_cursor")
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
        ("client_broad", f"{Q}?{WORK}&changes_since=beginning&cursor={token_of(junk)}", 400, "invalid_cursor")
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
        ("client_broad", f"{Q}?{WORK}&changes_since={token_of(junk)}", 400, "invalid_cursor")
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
    got, body, headers = await get(shared_sandbox, path, token)
    assert (got, body["error"]["code"]) == (status, code), body
    assert body["error"]["type"] == error_type_for(status)  # the table the gateway reads with
    assert body["error"]["request_id"] == headers["Request-Id"]
    assert body["error"]["message"]


@pytest.mark.parametrize(("query", "status", "code"), WINDOW_REFUSALS)
async def test_field_window_refusals(shared_sandbox: Any, query: str, status: int, code: str) -> None:
    got, body, _ = await get(shared_sandbox, WINDOW + query)
    assert (got, body["error"]["code"]) == (status, code)


async def test_unsupported_pdpp_version_is_refused(shared_sandbox: Any) -> None:
    status, body, headers = await get(shared_sandbox, "/v1/schema", **{"PDPP-Version": "1999-01-01"})
    assert (status, body["error"]["code"]) == (400, "unsupported_version")
    assert headers["PDPP-Version"] == "2026-04-06"


async def test_search_cursor_with_a_forged_offset_is_refused(shared_sandbox: Any) -> None:
    path = "/v1/search?q=invoice&limit=2"
    _, page, _ = await get(shared_sandbox, path)
    raw = page["next_cursor"]
    token = orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    for forged in (-5, True, "2", None):
        status, body, _ = await get(shared_sandbox, f"{path}&cursor={token_of({**token, 'off': forged})}")
        assert (status, body["error"]["code"]) == (400, "invalid_cursor"), forged


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
        "Authorization": basic(config.introspection_client_id, config.introspection_client_secret),
        "Content-Type": content_type,
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(shared_sandbox.url + "/introspect", data=body, headers=headers) as response,
    ):
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_request"
