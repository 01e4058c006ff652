"""The sandbox's record list route: limits, paging, fan-in, filters, projection, sort, windows, expand."""

from __future__ import annotations

from typing import Any

from tests.sandbox.rs_http import WORK, Q, get


async def test_limits_default_and_clamp(shared_sandbox: Any) -> None:
    _, junk, _ = await get(shared_sandbox, f"{Q}?{WORK}&limit=abc")
    assert len(junk["data"]) == 25
    _, big, _ = await get(shared_sandbox, f"{Q}?{WORK}&limit=500")
    assert len(big["data"]) == 100
    assert big["meta"]["warnings"][0]["code"] == "limit_clamped"
    assert big["meta"]["warnings"][0]["detail"] == {"requested_limit": 500, "max_limit": 100}


async def test_paging_covers_the_stream_once_in_order(shared_sandbox: Any) -> None:
    seen: list[str] = []
    path = f"{Q}?{WORK}&limit=40&order=asc&count=exact"
    cursor = None
    total = None
    while True:
        _, page, _ = await get(shared_sandbox, path + (f"&cursor={cursor}" if cursor else ""))
        total = page["meta"]["count"]["value"]
        times = [r["data"]["received_at"] for r in page["data"]]
        assert times == sorted(times)
        seen.extend(r["id"] for r in page["data"])
        cursor = page.get("next_cursor")
        assert bool(cursor) == page["has_more"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == total
    _, desc, _ = await get(shared_sandbox, f"{Q}?{WORK}&limit=5")
    status, mismatch, _ = await get(
        shared_sandbox, f"{Q}?{WORK}&limit=5&order=asc&cursor={desc['next_cursor']}"
    )
    assert (status, mismatch["error"]["code"]) == (400, "invalid_cursor")


async def test_fan_in_pages_have_no_cursor_and_say_so(shared_sandbox: Any) -> None:
    _, page, _ = await get(shared_sandbox, f"{Q}?limit=10")
    assert page["has_more"] is True
    assert "next_cursor" not in page
    assert {w["code"] for w in page["meta"]["warnings"]} == {"partial_results"}
    assert len({r["connection_id"] for r in page["data"]}) >= 2


async def test_typed_filters_and_projection_are_honoured_for_clients(shared_sandbox: Any) -> None:
    _, page, _ = await get(
        shared_sandbox,
        f"{Q}?{WORK}&filter[is_seen]=false&filter[received_at][gte]=2026-01-01T00:00:00Z&fields=id,is_seen,received_at",
    )
    assert page["data"]
    for record in page["data"]:
        assert set(record["data"]) == {"id", "is_seen", "received_at"}
        assert record["data"]["is_seen"] is False
        assert record["data"]["received_at"] >= "2026-01-01"
    _, narrow, _ = await get(shared_sandbox, Q, "client_narrow")
    granted = {"id", "subject", "from_name", "received_at", "snippet", "is_seen"}
    assert all(set(r["data"]) <= granted for r in narrow["data"])


async def test_sort_on_the_cursor_field_orders_both_ways(shared_sandbox: Any) -> None:
    for sort, descending in (("received_at", False), ("-received_at", True)):
        status, page, _ = await get(shared_sandbox, f"{Q}?{WORK}&sort={sort}&limit=30")
        assert status == 200
        times = [r["data"]["received_at"] for r in page["data"]]
        assert times == sorted(times, reverse=descending)
        _, more, _ = await get(shared_sandbox, page["links"]["next"])
        later = [r["data"]["received_at"] for r in more["data"]]
        assert (later[0] <= times[-1]) if descending else (later[0] >= times[-1])


async def test_range_operators_are_strict_or_inclusive(shared_sandbox: Any) -> None:
    _, page, _ = await get(shared_sandbox, f"{Q}?{WORK}&order=asc&limit=50")
    low, high = page["data"][10]["data"]["received_at"], page["data"][30]["data"]["received_at"]
    expected = {
        ("gt", "lt"): [r["id"] for r in page["data"] if low < r["data"]["received_at"] < high],
        ("gte", "lte"): [r["id"] for r in page["data"] if low <= r["data"]["received_at"] <= high],
        ("gt", "lte"): [r["id"] for r in page["data"] if low < r["data"]["received_at"] <= high],
    }
    for (above, below), ids in expected.items():
        _, got, _ = await get(
            shared_sandbox,
            f"{Q}?{WORK}&order=asc&filter[received_at][{above}]={low}&filter[received_at][{below}]={high}",
        )
        assert [r["id"] for r in got["data"]] == ids, (above, below)
    # a date-only bound and an offset are instants too
    _, day, _ = await get(shared_sandbox, f"{Q}?{WORK}&count=exact&filter[received_at][gte]=2026-01-01")
    _, zoned, _ = await get(
        shared_sandbox, f"{Q}?{WORK}&count=exact&filter[received_at][gte]=2026-01-01T01:00:00%2B01:00"
    )
    assert day["meta"]["count"]["value"] == zoned["meta"]["count"]["value"] > 0


async def test_window_exact_reports_the_span_of_the_matching_records(shared_sandbox: Any) -> None:
    _, page, _ = await get(shared_sandbox, f"{Q}?{WORK}&window=exact&count=exact&limit=1")
    window = page["meta"]["window"]
    assert window["total"] == page["meta"]["count"]["value"]
    _, oldest, _ = await get(shared_sandbox, f"{Q}?{WORK}&order=asc&limit=1")
    _, newest, _ = await get(shared_sandbox, f"{Q}?{WORK}&order=desc&limit=1")
    assert window["earliest_at"] == oldest["data"][0]["data"]["received_at"]
    assert window["latest_at"] == newest["data"][0]["data"]["received_at"]
    since = "2026-01-01T00:00:00Z"
    _, narrowed, _ = await get(
        shared_sandbox, f"{Q}?{WORK}&window=exact&count=exact&filter[received_at][gte]={since}"
    )
    assert narrowed["meta"]["window"]["total"] == narrowed["meta"]["count"]["value"] < window["total"]
    assert narrowed["meta"]["window"]["earliest_at"] >= "2026-01-01"
    _, none, _ = await get(shared_sandbox, f"{Q}?{WORK}&window=none")
    assert "window" not in none["meta"]
    _, fan_in, _ = await get(shared_sandbox, f"{Q}?window=exact&count=exact")
    assert fan_in["meta"]["window"]["total"] == fan_in["meta"]["count"]["value"] > window["total"]


async def test_links_next_repeats_the_request_with_the_next_cursor(shared_sandbox: Any) -> None:
    # search (lexical and semantic) and the changes feed, the way captures 28/30/32 show it
    for path in (
        "/v1/search?q=invoice&limit=2",
        "/v1/search/semantic?q=lisbon+apartment+lease&limit=2",
        f"{Q}?{WORK}&changes_since=beginning&limit=5",
        f"{Q}?{WORK}&limit=5&filter[received_at][gte]=2026-01-01T00:00:00Z",
    ):
        _, first, _ = await get(shared_sandbox, path)
        sent = first["links"]["self"]  # the query as it arrived (the client encodes brackets)
        assert first["links"]["next"] == f"{sent}&cursor={first['next_cursor']}"
        _, second, _ = await get(shared_sandbox, first["links"]["next"])
        assert second["links"]["self"] == first["links"]["next"]
        assert second["links"]["next"] == f"{sent}&cursor={second['next_cursor']}"
        assert {r.get("id") or r.get("record_key") for r in first["data"]}.isdisjoint(
            {r.get("id") or r.get("record_key") for r in second["data"]}
        )
    _, hybrid, _ = await get(shared_sandbox, "/v1/search/hybrid?q=invoice&limit=2")
    assert hybrid["has_more"] is True
    assert hybrid["links"]["next"] is None


async def test_expand_has_one_embeds_one_record(shared_sandbox: Any) -> None:
    status, page, _ = await get(shared_sandbox, f"{Q}?{WORK}&limit=3&expand=message_bodies")
    assert status == 200
    for record in page["data"]:
        body = record["expanded"]["message_bodies"]
        assert body["object"] == "record"
        assert body["data"]["message_id"] == record["id"]


async def test_expand_has_many_embeds_a_bounded_list(shared_sandbox: Any) -> None:
    status, record, _ = await get(
        shared_sandbox,
        f"/v1/streams/messages/records/msg_work_0003?{WORK}&expand=attachments&expand_limit[attachments]=1",
    )
    assert status == 200
    children = record["expanded"]["attachments"]
    assert (children["object"], children["has_more"]) == ("list", False)
    assert [child["data"]["message_id"] for child in children["data"]] == ["msg_work_0003"]


async def test_expand_has_one_takes_no_limit(shared_sandbox: Any) -> None:
    status, body, _ = await get(
        shared_sandbox, f"{Q}?{WORK}&expand=message_bodies&expand_limit[message_bodies]=1"
    )
    assert (status, body["error"]["code"], body["error"]["param"]) == (400, "invalid_expand", "expand_limit")
