"""The sandbox's changes feed: bootstrap, paging, tombstones, and filter/fields applied as on a list."""

from __future__ import annotations

from typing import Any

from tests.sandbox.rs_http import WORK, Q, get


async def test_changes_feed_bootstraps_pages_and_reports_tombstones(shared_sandbox: Any) -> None:
    path = f"{Q}?{WORK}&changes_since=beginning&limit=100"
    records: list[dict[str, Any]] = []
    _, page, _ = await get(shared_sandbox, path)
    token = page["next_changes_since"]
    while True:
        records.extend(page["data"])
        if not page.get("next_cursor"):
            break
        _, page, _ = await get(shared_sandbox, f"{path}&cursor={page['next_cursor']}")
        assert page["next_changes_since"] == token
    tombstones = [r for r in records if r.get("deleted")]
    assert {t["id"] for t in tombstones} == {"msg_deleted_0007", "msg_deleted_0008"}
    assert all("data" not in t and t["deleted_at"] for t in tombstones)
    _, again, _ = await get(shared_sandbox, f"{Q}?{WORK}&changes_since={token}")
    assert again["data"] == []  # nothing changed since the terminal token


async def _changes(sandbox: Any, path: str) -> tuple[list[dict[str, Any]], str]:
    records: list[dict[str, Any]] = []
    _, page, _ = await get(sandbox, path)
    token = page["next_changes_since"]
    while True:
        records.extend(page["data"])
        if not page["links"]["next"]:
            return records, token
        _, page, _ = await get(sandbox, page["links"]["next"])


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
