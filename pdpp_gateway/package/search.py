"""Merged package search pages: one RS search per child, interleaved, continued by one cursor.

Contract (for a ``search`` fanned out to several children of a package):

- Order: a search that pins no mode has every hit judged by the gateway's one relevance
  judge (``question.relevance``, the same for every source, each child's hits in that order),
  so the page merges the children by it: the best next hit of any child first, ties to the
  earlier member (``order: "relevance"``). RS scores of different children are not
  comparable, so a pinned mode's hits are interleaved round-robin by each child's own rank,
  children in the package's member order (child A's 1st, B's 1st, C's 1st, A's 2nd, ...); a
  child with no hits left drops out of the rotation. A hit whose id was already shown on
  the page is skipped (it still uses its turn), and each child gives a prefix of its hits, so
  the cursor below continues it; a page merged by relevance has no cursor (below).
- Paging: ``next_cursor`` is a package cursor (``package.cursor``) that continues EVERY
  child with hits left, each exactly after its last hit shown, and the rotation exactly
  after the last child served, so concatenated pages are the one interleaving above:
  nothing lost, nothing repeated. Each child is asked for its share of the page
  (``ceil(limit / children asked)``) past the hits of its recorded RS page already shown
  (``skip``, dropped from the answer), at most 100: the RS reads and the hits shaped stay
  near ``limit`` in all, not ``limit`` per child. A page holds the caller's ``limit``
  (default 25, max 100) unless a child ends, fails or answers short within it: when a
  child's fetched hits run out while it has more, the page ends there (shorter, with
  ``has_more`` and ``next_cursor``) rather than let other children overtake it.
- A child that fails is a ``source_unavailable`` warning; it keeps its place in the
  cursor and the next page retries it, unless its failure was its own cursor
  (``invalid_cursor``, ``cursor_expired``): then it is dropped with a warning saying how to
  see its remaining hits. A child that has more but cannot page (hybrid mode, a
  multi-connection child without ``next_cursor``) is said so in a ``partial_results``
  warning. If the cursor would exceed its bound, the page has no ``next_cursor`` and a
  warning says to page one source at a time with ``connection_id``.
- A cursor of one child's own page (not a package cursor) is passed through only when the
  search reaches exactly that one child; otherwise it is refused as ``invalid_cursor``.
- A first page of a search that pins no mode is every child's fused page (``retrieval``):
  when the caller set no ``limit``, each child answers its share of ``FUSED_LIMIT``. Fused
  pages do not page (their lists page differently), so neither does their merged page: it has
  no ``next_cursor``, and its text offers the lexical search that pages. Its ``retrieval``
  says what every member searched: a search the members made alike once, with the hits of
  all (a page that counted the first member's alone said "lexical (0)" where another member's
  words matched), the threads read on one account.
- Streams a question names (``stream_hints``): the children's, in member order, the streams
  of the merged hits not offered (``retrieval.stream_hints.merge_stream_hints``); a merged page
  that shows no word of the question names the children's other streams
  (``retrieval.other_streams.merge_other_streams``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from mcp_gateway_middleware import Outcome, ToolError, ToolResult

from pdpp_gateway.context import Call, PackageMember
from pdpp_gateway.package.cursor import (
    ChildPosition,
    PackageCursor,
    check_children,
    encode,
    fingerprint,
    invalid_cursor,
    is_package_cursor,
    member_keys,
)
from pdpp_gateway.package.members import RECONNECT, label, member_step, source_tag
from pdpp_gateway.render.common import RETRIEVAL
from pdpp_gateway.retrieval.fused import FUSED_LIMIT
from pdpp_gateway.retrieval.other_streams import merge_other_streams
from pdpp_gateway.retrieval.stream_hints import merge_stream_hints
from pdpp_gateway.tools.args import SearchArgs, args_of
from pdpp_gateway.tools.specs import MAX_PAGE_LIMIT

DEFAULT_SEARCH_LIMIT: Final = 25
ORDER: Final = "round_robin_by_child_rank"  # a pinned mode's hits: RS scores are not comparable
RELEVANCE_ORDER: Final = "relevance"  # the gateway's one judge (question.relevance), for every source
_CURSOR_FAILURES: Final = frozenset({"invalid_cursor", "cursor_expired"})

# A member's sub-call of ``call`` with the given arguments (parsed again: they differ).
Route = Callable[[Call, PackageMember, Mapping[str, Any]], Call]


def is_continuation(call: Call) -> bool:
    """A search (a call routed as one) continuing a merged page: merged even when one child is left."""
    return is_package_cursor(args_of(call, SearchArgs).cursor)


def search_calls(call: Call, members: Sequence[PackageMember], route: Route) -> list[Call]:
    """One routed search per child that may hold the requested streams (and the cursor's
    position); on a first page the caller set no ``limit`` for, each child answers its share
    of a fused page (``GatewayContext.fused_share``)."""
    parsed = args_of(call, SearchArgs)
    args = parsed.arguments
    eligible = _eligible(args, members)
    cursor = args.get("cursor")
    if cursor is None:
        positions = {key: ChildPosition(key, None, 0) for key, _, _ in eligible}
    elif (merged := parsed.package_cursor) is not None:
        decoded = check_children(merged, [key for key, _, _ in eligible])
        positions = {child.key: child for child in decoded.children}
    elif len(eligible) == 1:
        _, member, narrowed = eligible[0]
        return [route(call, member, narrowed)]
    else:
        raise invalid_cursor(
            "it is one source's cursor, and this search spans several; pass that source's "
            "connection_id with it to page that source alone"
        )
    if cursor is None and len(eligible) == 1:
        _, member, narrowed = eligible[0]
        return [route(call, member, narrowed)]
    asked = [(member, narrowed, positions[key]) for key, member, narrowed in eligible if key in positions]
    # Each child's turns on a full page, rounded up; hybrid search cannot page, so its one
    # page asks every child for the whole limit.
    share = _limit(args) if args.get("mode") == "hybrid" else -(-_limit(args) // max(1, len(asked)))
    calls: list[Call] = []
    for member, narrowed, position in asked:
        sub_args = {k: v for k, v in narrowed.items() if k != "cursor"}
        sub_args["limit"] = min(MAX_PAGE_LIMIT, position.skip + share)
        if position.rs_cursor is not None:
            sub_args["cursor"] = position.rs_cursor
        calls.append(route(call, member, sub_args))
    if cursor is None and len(calls) > 1:  # a first page: the words are sought package-wide
        fused_share = None if "limit" in args else -(-FUSED_LIMIT // len(calls))
        calls = [replace(each, context=replace(each.context, fused_share=fused_share)) for each in calls]
    return calls


@dataclass(slots=True)
class _Lane:
    """One child on this page: its hits still unshown, and how it continues."""

    member: PackageMember
    position: ChildPosition
    hits: list[dict[str, Any]]
    next_cursor: str | None
    has_more: bool
    error: ToolError | None
    taken: int = 0

    @property
    def more_after_batch(self) -> bool:
        """Hits exist past this answer and can be read: from its RS cursor, or (a child that
        has more but gives no cursor) by re-reading with a larger skip, up to 100 deep."""
        fetched = self.position.skip + len(self.hits)
        return self.next_cursor is not None or (self.has_more and fetched < MAX_PAGE_LIMIT)

    @property
    def continues(self) -> bool:
        if self.error is not None:
            return self.error.code not in _CURSOR_FAILURES
        return self.taken < len(self.hits) or self.more_after_batch

    def next_position(self) -> ChildPosition:
        key, position = self.position.key, self.position
        if self.error is not None:
            return position
        if self.taken == len(self.hits) and self.next_cursor is not None:
            return ChildPosition(key, self.next_cursor, 0)
        return ChildPosition(key, position.rs_cursor, position.skip + self.taken)


def merge_search(
    call: Call,
    members: Sequence[PackageMember],
    sources: Sequence[PackageMember],
    outcomes: Sequence[Outcome],
) -> ToolResult:
    """The merged page (see the module contract); ``sources``, a subset of ``members``, are in member order."""
    parsed = args_of(call, SearchArgs)
    args = parsed.arguments
    limit = _limit(args)
    keys = member_keys(members)
    source_keys = [
        next(key for key, member in zip(keys, members, strict=True) if member is source) for source in sources
    ]
    turn, lanes = _lanes(call, source_keys, sources, outcomes)
    judged = _judged(lanes)
    if judged:
        returned = _by_relevance(lanes, limit)
    else:
        returned, turn = _interleave(lanes, turn, limit)
    hybrid = args.get("mode") == "hybrid"
    continuing = [lane for lane in lanes if lane.continues and not hybrid and not judged]
    next_cursor = None
    if continuing:
        next_turn = _next_turn(lanes, continuing, turn)
        next_cursor = encode(
            PackageCursor(fingerprint(args), tuple(lane.next_position() for lane in continuing), next_turn)
        )
    retried = {id(lane) for lane in continuing if lane.error is not None and next_cursor is not None}
    ok = [lane for lane in lanes if lane.error is None]
    first = next((outcome for outcome in outcomes if isinstance(outcome, ToolResult)), None)
    base: dict[str, Any] = dict(_data(first)) if first is not None else {"object": "list"}
    for key in ("next_cursor", "links"):
        base.pop(key, None)
    meta = _merged_meta([_data(o) for o in outcomes if isinstance(o, ToolResult)])
    provider_url = call.context.provider_url
    meta["warnings"] = _warnings(
        lanes,
        retried,
        provider_url,
        hybrid=hybrid,
        cursor_dropped=bool(continuing) and next_cursor is None,
    )
    meta["package"] = {
        "member_count": len(members),
        "order": RELEVANCE_ORDER if judged else ORDER,
        "source_order": [label(lane.member) for lane in lanes],
        "returned_hit_count": len(returned),
        "fanout_limit": limit,
        "partial": len(ok) < len(lanes),
        "continuing_source_count": len(continuing) if next_cursor else 0,
        "source_mix": _source_mix(returned),
    }
    leftover = any(lane.has_more or lane.taken < len(lane.hits) for lane in ok)
    base.update(result_count=len(returned), has_more=next_cursor is not None or leftover, meta=meta)
    if next_cursor is not None:
        base["next_cursor"] = next_cursor
    failed = [lane for lane in lanes if lane.error is not None]
    if failed:
        base["unavailable_connections"] = [
            {
                **source_tag(lane.member),
                "error_code": lane.error.code,
                "next_step": _next_step(lane, retried, provider_url),
            }
            for lane in failed
            if lane.error is not None
        ]
    structured = {
        "data": base,
        "results": returned,
        "provider_url": call.context.provider_url,
        "request_id": None,
    }
    found = [
        (lane, outcome.structured[RETRIEVAL])
        for lane, outcome in zip(lanes, outcomes, strict=True)
        if isinstance(outcome, ToolResult) and isinstance(outcome.structured.get(RETRIEVAL), dict)
    ]
    fused = [(lane, retrieval) for lane, retrieval in found if retrieval.get("mode") == "fused"]
    if fused:  # the members whose answer was fused, named: their hits are approximate
        structured[RETRIEVAL] = {
            **fused[0][1],
            "searched": _searched_by_all([retrieval for _, retrieval in fused]),
            "sources": [label(lane.member) for lane, _ in fused],
        }
    elif found:  # every member searched the question's content words alike
        structured[RETRIEVAL] = found[0][1]
    answers = [outcome.structured for outcome in outcomes if isinstance(outcome, ToolResult)]
    merge_stream_hints(structured, answers)
    merge_other_streams(structured, answers, parsed.words)
    return ToolResult(structured=structured)


def _searched_by_all(retrievals: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The members' searches as one list: a search the members made alike (the same mode,
    query and streams; threads read, whatever their streams) once, with the hits of all and
    the streams of each; the others as they came, in member order."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for retrieval in retrievals:
        for entry in retrieval.get("searched") or ():
            if not isinstance(entry, Mapping):
                continue
            streams = list(entry.get("streams") or ())
            thread = entry.get("mode") == "thread"
            key = (
                entry.get("mode"),
                entry.get("query"),
                () if thread else tuple(streams),
                entry.get("older_than"),
            )
            if key not in merged:
                merged[key] = dict(entry)
                continue
            alike = merged[key]
            alike["hits"] = int(alike.get("hits") or 0) + int(entry.get("hits") or 0)
            if streams:
                alike["streams"] = list(dict.fromkeys([*alike.get("streams", ()), *streams]))
    return list(merged.values())


# --- planning helpers ----------------------------------------------------------------


def _eligible(
    args: Mapping[str, Any], members: Sequence[PackageMember]
) -> list[tuple[str, PackageMember, Mapping[str, Any]]]:
    """(cursor key, member, its arguments) for each member granting a requested stream."""
    requested = args.get("streams")
    eligible: list[tuple[str, PackageMember, Mapping[str, Any]]] = []
    for key, member in zip(member_keys(members), members, strict=True):
        if isinstance(requested, list) and "*" not in member.streams:
            narrowed = [stream for stream in requested if stream in member.streams]
            if narrowed:
                eligible.append((key, member, {**args, "streams": narrowed}))
        else:
            eligible.append((key, member, args))
    return eligible


def _limit(args: Mapping[str, Any]) -> int:
    return int(args.get("limit", DEFAULT_SEARCH_LIMIT))


# --- merging helpers -----------------------------------------------------------------


def _lanes(
    call: Call, keys: Sequence[str], sources: Sequence[PackageMember], outcomes: Sequence[Outcome]
) -> tuple[int, list[_Lane]]:
    decoded = args_of(call, SearchArgs).package_cursor  # its children checked when planned
    if decoded is not None:
        positions = {child.key: child for child in decoded.children}
        at_turn = decoded.children[decoded.turn].key if decoded.children else None
    else:
        positions, at_turn = {}, None
    lanes: list[_Lane] = []
    for key, member, outcome in zip(keys, sources, outcomes, strict=True):
        position = positions.get(key, ChildPosition(key, None, 0))
        if isinstance(outcome, ToolError):
            lanes.append(_Lane(member, position, [], None, False, outcome))
            continue
        data = _data(outcome)
        hits = [hit for hit in outcome.structured.get("results") or () if isinstance(hit, dict)]
        next_cursor = data.get("next_cursor") if data.get("has_more") else None
        if outcome.structured.get(RETRIEVAL):  # answered by meaning: re-read it by skip, not
            next_cursor = None  # with a cursor of another mode than the next call's
        lanes.append(
            _Lane(
                member,
                position,
                hits[position.skip :],
                next_cursor if isinstance(next_cursor, str) and next_cursor else None,
                bool(data.get("has_more")),
                None,
            )
        )
    turn = next((i for i, key in enumerate(keys) if key == at_turn), 0)
    return turn, lanes


def _by_relevance(lanes: Sequence[_Lane], limit: int) -> list[dict[str, Any]]:
    """The lanes merged by their hits' ``relevance`` (each lane already in that order), the
    best head first, ties to the earlier member. Fused pages do not page on, so every hit the
    members answered competes for the page."""
    returned: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(returned) < limit:
        heads = [lane for lane in lanes if lane.error is None and lane.taken < len(lane.hits)]
        if not heads:
            break
        lane = max(heads, key=lambda each: float(each.hits[each.taken]["relevance"]))  # first of ties
        hit = lane.hits[lane.taken]
        lane.taken += 1
        if str(hit.get("id")) not in seen:
            seen.add(str(hit.get("id")))
            returned.append(hit)
    return returned


def _judged(lanes: Sequence[_Lane]) -> bool:
    """Whether every hit was judged for relevance (a search that pinned no mode)."""
    hits = [hit for lane in lanes for hit in lane.hits]
    return bool(hits) and all(isinstance(hit.get("relevance"), float | int) for hit in hits)


def _interleave(lanes: Sequence[_Lane], turn: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Round-robin from ``turn``; returns the hits shown and the lane whose turn is next."""
    returned: list[dict[str, Any]] = []
    seen: set[str] = set()
    exhausted = [lane.error is not None for lane in lanes]
    index = turn
    while len(returned) < limit and not all(exhausted):
        lane = lanes[index]
        if exhausted[index]:
            index = (index + 1) % len(lanes)
        elif lane.taken < len(lane.hits):
            hit = lane.hits[lane.taken]
            lane.taken += 1
            if str(hit.get("id")) not in seen:
                seen.add(str(hit.get("id")))
                returned.append(hit)
            index = (index + 1) % len(lanes)
        elif lane.more_after_batch:
            break  # its next hits are in its next RS answer: the merged page ends here
        else:
            exhausted[index] = True
            index = (index + 1) % len(lanes)
    return returned, index


def _merged_meta(children: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Count and recall of the whole package: the sum only when every child counted exactly;
    recall complete only when every child's was (else the first incomplete one)."""
    metas = [_mapping(child.get("meta")) for child in children]
    meta: dict[str, Any] = {}
    counts = [m["count"] for m in metas if type(m.get("count")) is int and m.get("count_accuracy") == "exact"]
    if metas and len(counts) == len(metas):
        meta.update(count=sum(counts), count_accuracy="exact")
    recalls = [_mapping(m.get("recall")) for m in metas if isinstance(m.get("recall"), Mapping)]
    incomplete = [
        r for r in recalls if r.get("complete") is False or r.get("ranking_scope") == "candidate_window"
    ]
    if incomplete:
        meta["recall"] = dict(incomplete[0])
    elif recalls:
        meta["recall"] = {"complete": True, "ranking_scope": "all_matches"}
    return meta


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _next_turn(lanes: Sequence[_Lane], continuing: Sequence[_Lane], turn: int) -> int:
    """The index in ``continuing`` of the first continuing lane at or after ``turn``."""
    positions = {id(lane): index for index, lane in enumerate(continuing)}
    for step in range(len(lanes)):
        position = positions.get(id(lanes[(turn + step) % len(lanes)]))
        if position is not None:
            return position
    return 0


def _next_step(lane: _Lane, retried: set[int], provider_url: str) -> str:
    step = member_step(lane.member, lane.error, provider_url) if lane.error is not None else None
    if step is not None and RECONNECT in step:
        return step  # its grant must be renewed, with this command
    if id(lane) in retried:
        return "Follow next_cursor to retry it, or choose another connection."
    if lane.error is not None and lane.error.code in _CURSOR_FAILURES:
        return "Search again without cursor to see its remaining hits."
    return "Retry this search, or pass its connection_id to search it alone."


def _warnings(
    lanes: Sequence[_Lane], retried: set[int], provider_url: str, *, hybrid: bool, cursor_dropped: bool
) -> list[dict[str, Any]]:
    warnings: list[dict[str, Any]] = []
    for lane in lanes:
        name = label(lane.member)
        if lane.error is not None:
            warnings.append(
                {
                    "code": "source_unavailable",
                    "message": f"Source {name} failed with {lane.error.code}; its hits are missing from "
                    f"this page. {_next_step(lane, retried, provider_url)}",
                    "detail": source_tag(lane.member),
                }
            )
        elif not hybrid and lane.has_more and not lane.more_after_batch:
            warnings.append(
                {
                    "code": "partial_results",
                    "message": f"Source {name} has more hits than it can page here; pass "
                    "connection_id to search it alone, or narrow the query.",
                    "param": "connection_id",
                    "detail": source_tag(lane.member),
                }
            )
    if hybrid and any(lane.has_more or lane.taken < len(lane.hits) for lane in lanes):
        warnings.append(
            {
                "code": "partial_results",
                "message": "More hits exist than this merged page shows; hybrid search does not page: "
                "narrow the query or streams, or use mode lexical or semantic to page.",
            }
        )
    if cursor_dropped:
        warnings.append(
            {
                "code": "partial_results",
                "message": "More hits exist, but too many sources continue for one cursor; page one "
                "source at a time by passing connection_id.",
                "param": "connection_id",
            }
        )
    return warnings


def _source_mix(hits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    mix: dict[tuple[Any, Any], dict[str, Any]] = {}
    for hit in hits:
        key = (hit.get("connection_id"), hit.get("connector_key"))
        entry = mix.setdefault(key, {"connection_id": key[0], "connector_key": key[1], "count": 0})
        if hit.get("display_name"):
            entry.setdefault("display_name", hit["display_name"])
        entry["count"] += 1
    return list(mix.values())


def _data(result: ToolResult | None) -> Mapping[str, Any]:
    data = result.structured.get("data") if result is not None else None
    return data if isinstance(data, Mapping) else {}
