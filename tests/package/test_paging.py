"""Merged package search pages continued by one cursor (``package.search``, ``package.cursor``).

The expected order is written out independently (``interleave``: round-robin by each child's
own rank, children in member order); paging through to the end must reproduce exactly it.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from pdpp_gateway.context import PackageMember
from pdpp_gateway.package.cursor import MAX_CURSOR_CHARS, PREFIX
from pdpp_gateway.rs.errors import RsStatusError, RsUnavailableError
from tests.fake_rs import FakeCall
from tests.package.helpers import (
    call,
    child,
    error_code,
    hit_ids,
    ids,
    interleave,
    package,
    page_through,
    searches,
)


def concatenated(pages: list[Any]) -> list[str]:
    return [hit_id for page in pages for hit_id in ids(page)]


def cursor_payload(cursor: str) -> Any:
    body = cursor.removeprefix(PREFIX)
    return orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def forge(cursor: str, **changes: Any) -> str:
    payload = {**cursor_payload(cursor), **changes}
    return PREFIX + base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")


@pytest.mark.parametrize("limit", [1, 2, 4, 7, 25])
async def test_paging_a_three_child_package_yields_the_interleaving_exactly_once(limit: int) -> None:
    a, b, c = child("a", 9), child("b", 3), child("c", 14)
    pages = await page_through(package(a, b, c), {"query": "invoice", "limit": limit})
    expected = interleave(hit_ids(a), hit_ids(b), hit_ids(c))
    assert concatenated(pages) == expected
    assert all(1 <= len(ids(page)) <= limit for page in pages)
    assert all(page.structured["data"]["has_more"] is True for page in pages[:-1])
    last = pages[-1].structured["data"]
    assert last["has_more"] is False
    assert "next_cursor" not in last


@pytest.mark.parametrize("limit", [1, 3, 8, 25, 100])
async def test_pages_are_full_while_no_child_ends_within_them(limit: int) -> None:
    fakes = [child(name, 40) for name in ("a", "b", "c")]
    pages = await page_through(package(*fakes), {"query": "invoice", "limit": limit})
    assert concatenated(pages) == interleave(*map(hit_ids, fakes))
    assert [len(ids(page)) for page in pages[:-1]] == [limit] * (len(pages) - 1)


async def test_children_longer_than_one_rs_page_are_continued_across_their_own_cursors() -> None:
    # limit 100 with children of 250 and 120 hits: each RS answer holds at most 100, so
    # children are re-read from their recorded RS cursor with the consumed hits skipped.
    a, b, c = child("a", 250), child("b", 30), child("c", 120)
    pages = await page_through(package(a, b, c), {"query": "invoice", "limit": 100})
    assert concatenated(pages) == interleave(hit_ids(a), hit_ids(b), hit_ids(c))
    assert max(int(str(c.param("limit"))) for fake in (a, b, c) for c in searches(fake)) == 100


async def test_each_page_asks_only_children_with_hits_left() -> None:
    log: list[FakeCall] = []
    a, b, c = child("a", 6, log=log), child("b", 1, log=log), child("c", 6, log=log)
    pages = await page_through(package(a, b, c), {"query": "invoice", "limit": 3})
    assert concatenated(pages) == interleave(hit_ids(a), hit_ids(b), hit_ids(c))
    # pages: a0 b0 c0 | a1 c1 a2 | c2 a3 c3 | a4 c4 a5 | c5: b is done after page 1, a after 4
    assert [len(ids(page)) for page in pages] == [3, 3, 3, 3, 1]
    assert (len(searches(a)), len(searches(b)), len(searches(c))) == (4, 1, 5)
    assert len([each for each in log if each.path == "/v1/search"]) == 10


async def test_a_child_failing_on_page_two_is_warned_and_retried_while_the_others_continue() -> None:
    a, b, c = child("a", 6), child("b", 6), child("c", 6)
    # its second search fails: the first page also read its metadata and schema (memoised)
    b.fail_with(RsUnavailableError("connection refused"), on_calls={4})
    pages = await page_through(package(a, b, c), {"query": "invoice", "limit": 4})
    second = pages[1].structured["data"]
    assert [w["code"] for w in second["meta"]["warnings"]] == ["source_unavailable"]
    assert "Follow next_cursor to retry it" in second["meta"]["warnings"][0]["message"]
    assert [u["connection_id"] for u in second["unavailable_connections"]] == ["cin_b"]
    assert not any(hit_id.startswith("cin_b/") for hit_id in ids(pages[1]))
    assert len(ids(pages[1])) == 4
    shown = concatenated(pages)
    assert len(shown) == len(set(shown)) == 18
    assert [h for h in shown if h.startswith("cin_b/")] == hit_ids(b)
    assert [h for h in shown if not h.startswith("cin_b/")] == interleave(hit_ids(a), hit_ids(c))


async def test_a_child_whose_cursor_expired_is_dropped_with_a_warning_saying_how_to_see_the_rest() -> None:
    # limit 100 over two children: each is asked for 50; page 2 reads on from b's RS
    # cursor, which the RS no longer knows.
    a, b = child("a", 150), child("b", 150)
    expired = RsStatusError(410, {"type": "gone_error", "code": "cursor_expired", "message": "expired"}, None)
    b.fail_with(lambda call: expired if call.param("cursor") else None)
    pages = await page_through(package(a, b), {"query": "invoice", "limit": 100})
    second = pages[1].structured["data"]
    assert "Search again without cursor" in second["meta"]["warnings"][0]["message"]
    assert (
        second["unavailable_connections"][0]["next_step"]
        == "Search again without cursor to see its remaining hits."
    )
    assert concatenated(pages) == interleave(hit_ids(a), hit_ids(b)[:50])
    assert all(
        "cin_b" not in str(page.structured["data"].get("unavailable_connections")) for page in pages[2:]
    )


async def test_limit_may_change_between_pages() -> None:
    a, b = child("a", 10), child("b", 10)
    context = package(a, b)
    first = await call(context, "search", {"query": "invoice", "limit": 3})
    cursor = first.structured["data"]["next_cursor"]
    rest = await page_through(context, {"query": "invoice", "limit": 5, "cursor": cursor})
    assert concatenated([first, *rest]) == interleave(hit_ids(a), hit_ids(b))


async def test_the_text_explains_the_order_and_gives_the_exact_next_call() -> None:
    a, b = child("a", 5), child("b", 5)
    result = await call(package(a, b), "search", {"query": "invoice", "limit": 2})
    cursor = result.structured["data"]["next_cursor"]
    text = str(result.text)
    assert "order: round-robin by each source's own rank, sources in fixed order (cin_a, cin_b)" in text
    assert "scores of different sources are not comparable" in text
    assert f'search {{"query":"invoice","limit":2,"cursor":"{cursor}"}}' in text
    assert result.structured["data"]["meta"]["package"]["order"] == "round_robin_by_child_rank"


async def test_the_cursor_holds_child_positions_only() -> None:
    a, b = child("a", 5), child("b", 5)
    context = package(a, b)
    result = await call(context, "search", {"query": "invoice", "limit": 3})
    cursor = result.structured["data"]["next_cursor"]
    payload = cursor_payload(cursor)
    assert set(payload) == {"v", "f", "t", "c"}
    # a0 b0 a1 shown: a used up its 2 fetched hits (it goes on from its RS cursor), b
    # showed 1 of its 2 (skip 1), and b's turn is next.
    (a_key, a_rs_cursor, a_skip), b_entry = payload["c"]
    assert (a_key, a_skip) == ("grt_a", 0)
    assert b_entry == ["grt_b", None, 1]
    assert payload["t"] == 1
    following = await call(context, "search", {"query": "invoice", "limit": 3, "cursor": cursor})
    assert searches(a)[-1].param("cursor") == a_rs_cursor
    assert (searches(b)[-1].param("cursor"), searches(b)[-1].param("limit")) == (None, "3")
    assert ids(following) == [hit_ids(b)[1], hit_ids(a)[2], hit_ids(b)[2]]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (lambda c: c[:-6], "garbled"),
        (lambda c: c + "!!", "garbled"),
        (lambda c: c[:12] + "A" + c[12:], "garbled"),
        (lambda c: PREFIX + "e30", "garbled"),
        (lambda c: forge(c, v=2), "another gateway version"),
        (lambda c: forge(c, c=[["grt_a", None, -1], ["grt_b", None, 1]]), "garbled"),
        (lambda c: forge(c, c=[["grt_a", None, 100], ["grt_b", None, 1]]), "garbled"),
        (lambda c: forge(c, c=[["grt_a", None, 1], ["grt_a", None, 1]]), "garbled"),
        (lambda c: forge(c, c=[["grt_other", None, 1]], t=0), "no longer part of this package"),
        (lambda c: forge(c, t=5), "garbled"),
        (lambda c: forge(c, f="0" * 16), "different search"),
    ],
)
async def test_a_forged_or_garbled_cursor_is_invalid_cursor_before_any_read(tamper: Any, why: str) -> None:
    log: list[FakeCall] = []
    a, b = child("a", 5, log=log), child("b", 5, log=log)
    context = package(a, b)
    first = await call(context, "search", {"query": "invoice", "limit": 3})
    log.clear()
    result = await call(
        context,
        "search",
        {"query": "invoice", "limit": 3, "cursor": tamper(first.structured["data"]["next_cursor"])},
    )
    assert error_code(result) == "invalid_cursor"
    assert why in result.structured["error"]["message"]
    assert "drop cursor to start from the first page" in str(result.text)
    assert log == []


async def test_a_cursor_of_another_query_is_refused() -> None:
    a, b = child("a", 5), child("b", 5)
    context = package(a, b)
    first = await call(context, "search", {"query": "invoice", "limit": 3})
    cursor = first.structured["data"]["next_cursor"]
    result = await call(context, "search", {"query": "receipt", "limit": 3, "cursor": cursor})
    assert "different search" in result.structured["error"]["message"]


async def test_one_sources_cursor_on_a_fan_out_is_refused_and_with_its_connection_it_pages_that_source() -> (
    None
):
    log: list[FakeCall] = []
    a, b = child("a", 30, log=log), child("b", 30, log=log)
    context = package(a, b)
    alone = await call(context, "search", {"query": "invoice", "connection_id": "cin_a", "limit": 5})
    rs_cursor = alone.structured["data"]["next_cursor"]
    assert not rs_cursor.startswith(PREFIX)
    log.clear()
    refused = await call(context, "search", {"query": "invoice", "cursor": rs_cursor})
    assert error_code(refused) == "invalid_cursor"
    assert "pass that source's connection_id with it" in refused.structured["error"]["message"]
    assert log == []
    paged = await call(
        context, "search", {"query": "invoice", "connection_id": "cin_a", "limit": 5, "cursor": rs_cursor}
    )
    assert ids(paged) == hit_ids(a)[5:10]


async def test_a_package_cursor_with_connection_id_is_refused() -> None:
    a, b = child("a", 5), child("b", 5)
    context = package(a, b)
    first = await call(context, "search", {"query": "invoice", "limit": 3})
    cursor = first.structured["data"]["next_cursor"]
    result = await call(context, "search", {"query": "invoice", "connection_id": "cin_a", "cursor": cursor})
    assert error_code(result) == "invalid_cursor"
    assert "drop connection_id to follow it" in result.structured["error"]["message"]


async def test_a_search_narrowed_to_one_child_pages_with_that_childs_own_cursor() -> None:
    a, files = child("a", 8), child("files", 8, stream="documents")
    context = package(a, files)
    pages = await page_through(context, {"query": "invoice", "streams": ["documents"], "limit": 3})
    assert concatenated(pages) == hit_ids(files)
    assert not pages[0].structured["data"]["next_cursor"].startswith(PREFIX)
    assert a.calls == []


async def test_too_many_continuing_children_for_one_cursor_drop_it_and_say_how_to_page() -> None:
    fakes = [child(f"{n:02d}_" + "x" * 120, 3) for n in range(14)]
    result = await call(package(*fakes), "search", {"query": "invoice", "limit": 14})
    data = result.structured["data"]
    assert "next_cursor" not in data
    assert data["has_more"] is True
    assert any("page one source at a time" in w["message"] for w in data["meta"]["warnings"])
    assert MAX_CURSOR_CHARS == 2048


async def test_hybrid_merged_pages_never_carry_a_cursor_and_say_why() -> None:
    a, b = child("a", 5), child("b", 5)
    result = await call(package(a, b), "search", {"query": "invoice", "mode": "hybrid", "limit": 3})
    data = result.structured["data"]
    assert "next_cursor" not in data
    assert data["has_more"] is True
    assert "hybrid search does not page" in data["meta"]["warnings"][0]["message"]


async def test_the_merged_count_is_the_sum_of_exact_child_counts() -> None:
    a, b = child("a", 5), child("b", 7)
    result = await call(package(a, b), "search", {"query": "invoice", "limit": 3})
    meta = result.structured["data"]["meta"]
    assert (meta["count"], meta["count_accuracy"]) == (12, "exact")


async def test_members_without_grant_ids_on_one_connection_still_page_apart() -> None:
    mail, archive = child("mail", 5), child("archive", 5)
    members = [
        PackageMember(rs=mail, grant_id=None, connection_ids=("cin_mail",), streams=("messages",)),
        PackageMember(rs=archive, grant_id=None, connection_ids=("cin_mail",), streams=("messages",)),
    ]
    for fake in (mail, archive):  # both children answer hits of one connection, with distinct ids
        for found in fake.hits:
            found["connection_id"] = "cin_mail"
    pages = await page_through(package(members=members), {"query": "invoice", "limit": 3})
    expected = [
        f"cin_mail/messages:{key}"
        for key in interleave(*[[h["record_key"] for h in f.hits] for f in (mail, archive)])
    ]
    assert concatenated(pages) == expected
    assert [entry[0] for entry in cursor_payload(pages[0].structured["data"]["next_cursor"])["c"]] == [
        "cin_mail",
        "cin_mail#2",
    ]


async def test_a_cursor_follows_the_package_as_it_shrinks_or_says_which_source_left() -> None:
    a, b = child("a", 10), child("b", 10)
    short = child("short", 1)
    first = await call(package(a, short), "search", {"query": "invoice", "limit": 2})
    cursor = first.structured["data"]["next_cursor"]  # "short" has nothing left: only a continues
    alone = await call(package(a), "search", {"query": "invoice", "limit": 2, "cursor": cursor})
    assert ids(alone) == hit_ids(a)[1:3]
    both = await call(package(a, b), "search", {"query": "invoice", "limit": 2})
    left = await call(
        package(a),
        "search",
        {"query": "invoice", "limit": 2, "cursor": both.structured["data"]["next_cursor"]},
    )
    assert "no longer part of this package" in left.structured["error"]["message"]


async def test_a_hybrid_merged_page_asks_every_child_for_the_whole_limit() -> None:
    a, b = child("a", 1), child("b", 30)
    result = await call(package(a, b), "search", {"query": "invoice", "mode": "hybrid", "limit": 10})
    assert ids(result) == interleave(hit_ids(a), hit_ids(b)[:9])
    assert [searches(fake)[0].param("limit") for fake in (a, b)] == ["10", "10"]


@pytest.mark.parametrize(("fan_in_hits", "shown"), [(30, 30), (150, 100)])
async def test_a_child_that_has_more_without_a_cursor_is_read_on_by_skip_up_to_100_deep(
    fan_in_hits: int, shown: int
) -> None:
    a, b = child("a", fan_in_hits), child("b", 20)
    a.fan_in = True
    pages = await page_through(package(a, b), {"query": "invoice", "limit": 7})
    assert concatenated(pages) == interleave(hit_ids(a)[:shown], hit_ids(b))
    assert {c.param("cursor") for c in searches(a)} == {None}
    warned = [
        w
        for page in pages
        for w in page.structured["data"]["meta"]["warnings"]
        if w["code"] == "partial_results"
    ]
    assert bool(warned) is (fan_in_hits > shown)
    if warned:
        assert "cin_a has more hits than it can page here" in warned[-1]["message"]
