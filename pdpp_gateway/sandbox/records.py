"""The record list route: paging, projection, filters, expand, counts and windows.

Contract (reference RS rules, rs-contract.md):
- unknown keys 400; ``order``/``sort`` only on the cursor field; cursors bound to their
  stream and order, and any cursor that is not exactly one the sandbox issued is 400
  ``invalid_cursor`` (never a 500); fan-in over several connections returns ``has_more``
  without ``next_cursor`` and a ``partial_results`` warning; ``links.next`` is the
  request again with the next cursor; ``window=exact`` adds
  ``meta.window {total, earliest_at, latest_at}`` over the consent-time (= cursor) field.
- ``changes_since`` on this route is the changes feed (``changes.changes_since``).
- Client rules, connection selection and projection: ``record_query``; the record body
  and its expansions: ``record_json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.changes import changes_since
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response, next_link
from pdpp_gateway.sandbox.params import allow_only, decode_token, encode_token, filters, page_limit
from pdpp_gateway.sandbox.record_json import expanded, record_json, requested_expansions
from pdpp_gateway.sandbox.record_query import by_connector, client_rules, connection_param, requested_fields
from pdpp_gateway.sandbox.store import Condition, Store, StoredRecord

_LIST_KEYS: Final = (
    "limit",
    "cursor",
    "order",
    "sort",
    "count",
    "window",
    "fields",
    "view",
    "changes_since",
    "connection_id",
    "connector_instance_id",
    "connector_id",
    "subject_id",
    "expand",
    "expand[]",
    "fields[]",
)


def _order(request: web.Request, source: Source) -> bool:
    """True for descending (the default)."""
    order = request.query.get("order")
    if order is not None and order.lower() not in ("asc", "desc"):
        raise RsHttpError(400, "invalid_request", "order must be asc or desc", param="order")
    sort = request.query.get("sort")
    descending = (order or "desc").lower() == "desc"
    if sort is not None:
        field = sort.lstrip("-")
        if field != source.manifest.cursor_field:
            raise RsHttpError(
                400,
                "invalid_sort",
                f"sort is only supported on the cursor field {source.manifest.cursor_field}",
                param="sort",
            )
        sort_desc = sort.startswith("-")
        if order is not None and sort_desc != descending:
            raise RsHttpError(400, "invalid_sort", "sort and order disagree", param="sort")
        descending = sort_desc
    return descending


async def list_records(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    allow_only(request.query, _LIST_KEYS, ("filter", "expand_limit"))
    client_rules(request, access, reference)
    warnings: list[dict[str, Any]] = []
    stream = request.match_info["stream"]
    connection_id = connection_param(request, warnings)
    sources = by_connector(request, access.stream_sources(stream, connection_id))
    if "changes_since" in request.query:
        return changes_since(request, sources, store, access, warnings)
    limit = page_limit(request.query, warnings)
    fields = requested_fields(request, sources)
    descending = _order(request, sources[0])
    count = request.query.get("count", "none")
    if count not in ("none", "estimated", "exact"):
        raise RsHttpError(400, "invalid_request", "count must be none, estimated or exact", param="count")
    window = request.query.get("window", "none")
    if window not in ("none", "exact"):
        raise RsHttpError(400, "invalid_request", "window must be none or exact", param="window")
    conditions = {id(s): filters(request.query, s) for s in sources}
    expand = {id(s): requested_expansions(request, s, access) for s in sources}
    connections = [(s, c) for s in sources for c in s.connections]
    after = None
    if "cursor" in request.query:
        after = _page_position(request.query["cursor"], stream, descending)
        if len(connections) > 1:
            raise RsHttpError(
                400, "invalid_cursor", "Cursors page one connection; pass connection_id.", param="cursor"
            )
    rows: list[tuple[Source, StoredRecord]] = []
    more = False
    for source, connection in connections:
        page = store.page(
            stream,
            [connection],
            descending=descending,
            after=after,
            limit=limit + 1,
            conditions=conditions[id(source)],
        )
        more = more or len(page) > limit
        rows.extend((source, r) for r in page[:limit])
    rows.sort(key=lambda pair: (pair[1].cursor_value or "", pair[1].record_id), reverse=descending)
    more = more or len(rows) > limit
    rows = rows[:limit]
    data = []
    for source, record in rows:
        item = record_json(record, source, store, fields=fields)
        if expand[id(source)]:
            item["expanded"] = expanded(record, source, expand[id(source)], store, access)
        data.append(item)
    body: dict[str, Any] = {"object": "list", "url": request.path, "has_more": more, "data": data}
    next_url = None
    if more and len(connections) == 1 and rows:
        last = rows[-1][1]
        body["next_cursor"] = encode_token(
            {
                "kind": "page",
                "session": "records",
                "stream": stream,
                "order": "DESC" if descending else "ASC",
                "cursor_value": last.cursor_value,
                "primary_key": [last.record_id],
            }
        )
        next_url = next_link(request, body["next_cursor"])
    elif more:
        warnings.append(
            {
                "code": "partial_results",
                "param": "connection_id",
                "message": "This page merges several connections and cannot be continued; page per connection_id.",
            }
        )
    meta: dict[str, Any] = {}
    body["meta"] = meta
    if count != "none":
        total = sum(store.count(stream, [c], conditions[id(s)]) for s, c in connections)
        meta["count"] = {"kind": "exact", "value": total}
    if window == "exact":
        meta["window"] = _window(store, stream, [(c, conditions[id(s)]) for s, c in connections])
    return json_response(finalise(request, body, is_list=True, next_url=next_url, warnings=warnings))


def _page_position(raw: str, stream: str, descending: bool) -> tuple[str, str]:
    """The (cursor value, primary key) a records cursor continues after; any junk is 400."""
    token = decode_token(raw, "cursor")
    if token.get("kind") != "page" or token.get("session") != "records" or token.get("stream") != stream:
        raise RsHttpError(
            400,
            "invalid_cursor",
            "This cursor is not a records cursor for this stream; restart without it.",
            param="cursor",
        )
    if token.get("order") != ("DESC" if descending else "ASC"):
        raise RsHttpError(
            400,
            "invalid_cursor",
            "The cursor was issued for another order; reuse the same order/sort.",
            param="cursor",
        )
    value, key = token.get("cursor_value"), token.get("primary_key")
    if not (value is None or isinstance(value, str)) or not (
        isinstance(key, list) and len(key) == 1 and isinstance(key[0], str) and key[0]
    ):
        raise RsHttpError(400, "invalid_cursor", "Malformed cursor; restart without it.", param="cursor")
    return value or "", key[0]


def _window(store: Store, stream: str, scopes: Sequence[tuple[str, Sequence[Condition]]]) -> dict[str, Any]:
    """``meta.window``: how many records match and the span of their consent-time values."""
    total, earliest, latest = 0, None, None
    for connection, conditions in scopes:
        count, low, high = store.window(stream, [connection], conditions)
        total += count
        earliest = low if earliest is None or (low is not None and low < earliest) else earliest
        latest = high if latest is None or (high is not None and high > latest) else latest
    out: dict[str, Any] = {"total": total}
    if earliest is not None:
        out["earliest_at"] = earliest
    if latest is not None:
        out["latest_at"] = latest
    return out
