"""Record routes: list (paging, projection, filters, expand, changes), detail, field window.

Contract (reference RS rules, rs-contract.md):
- list: unknown keys 400; ``order``/``sort`` only on the cursor field; cursors bound to
  their stream and order, and any cursor that is not exactly one the sandbox issued is
  400 ``invalid_cursor`` (never a 500); fan-in over several connections returns
  ``has_more`` without ``next_cursor`` and a ``partial_results`` warning; ``links.next``
  is the request again with the next cursor; ``window=exact`` adds
  ``meta.window {total, earliest_at, latest_at}`` over the consent-time (= cursor) field.
- ``changes_since`` needs one connection, applies ``filter`` and ``fields`` like a list
  (a tombstone appears only if the record's last data matched), pages with
  ``next_cursor``, always returns ``next_changes_since`` and yields tombstones; a
  malformed token (or a position this history never reached) is 400 ``invalid_cursor``,
  a token from another history epoch 410 ``cursor_expired``.
- detail: 404 ``not_found``; 409 ``ambiguous_connection`` when the id exists under
  several readable connections and no ``connection_id`` narrows it; ``fields`` names
  unknown to the stream are a 400, names outside the grant are dropped silently (as the
  reference does on this route; the list route refuses them with 403).
- field window: bounded character windows of one top-level string field;
  ``window.limit_chars`` is the limit applied (requested and clamped, else 4096, or
  ``before + len(q) + after`` for a context window), not the length of the text.
- With ``reference_client_rules`` a client's ``filter``/``expand``/``expand_limit``/
  ``view`` is refused the reference way (400 ``invalid_request``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response, next_link
from pdpp_gateway.sandbox.params import (
    allow_only,
    bracketed,
    decode_token,
    encode_token,
    filters,
    list_param,
    page_limit,
)
from pdpp_gateway.sandbox.store import Condition, Store, StoredRecord

HISTORY_EPOCH: Final = "e2026"
WINDOW_DEFAULT: Final = 4096
WINDOW_MAX: Final = 16_384
CONTEXT_MAX: Final = 8192
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


def record_json(
    record: StoredRecord, source: Source, store: Store, *, fields: Sequence[str] | None = None
) -> dict[str, Any]:
    data = source.project(record.data)
    if fields:
        data = {k: v for k, v in data.items() if k in fields}
    for key, value in list(data.items()):
        if isinstance(value, dict) and "blob_id" in value:
            data[key] = {**value, "fetch_url": f"/v1/blobs/{value['blob_id']}"}
    out: dict[str, Any] = {
        "object": "record",
        "id": record.record_id,
        "stream": record.stream,
        "data": data,
        "emitted_at": record.emitted_at,
        "connection_id": record.connection_id,
        "connector_instance_id": record.connection_id,
    }
    connection = store.catalog.connection(record.connection_id)
    if connection and connection.display_name:
        out["display_name"] = connection.display_name
    return out


def _client_rules(request: web.Request, access: Access, reference: bool) -> None:
    if not reference or access.is_owner:
        return
    q = request.query
    if any(k.startswith("filter") for k in q):
        raise RsHttpError(
            400,
            "invalid_request",
            "filter[...] is not supported for client-token reads in PDPP v0.1",
            param="filter",
        )
    if "expand" in q or "expand[]" in q:
        raise RsHttpError(
            400,
            "invalid_request",
            "expand is not supported for client-token reads in PDPP v0.1",
            param="expand",
        )
    if any(k.startswith("expand_limit") for k in q):
        raise RsHttpError(
            400,
            "invalid_request",
            "expand_limit is not supported for client-token reads",
            param="expand_limit",
        )
    if "view" in q:
        raise RsHttpError(
            400,
            "invalid_request",
            "Client record reads must use explicit fields; views are resolved when the grant is issued",
            param="view",
        )


def connection_param(request: web.Request, warnings: list[dict[str, Any]]) -> str | None:
    canonical, alias = request.query.get("connection_id"), request.query.get("connector_instance_id")
    if alias is not None:
        warnings.append(
            {
                "code": "deprecated_alias_used",
                "param": "connector_instance_id",
                "message": "connector_instance_id is deprecated; use connection_id.",
            }
        )
        if canonical is not None and canonical != alias:
            raise RsHttpError(
                400,
                "invalid_argument",
                "connection_id and connector_instance_id disagree",
                param="connection_id",
            )
    return canonical or alias


def by_connector(request: web.Request, sources: list[Source]) -> list[Source]:
    """Narrow to ``connector_id`` (the reference's owner-side connector selector)."""
    connector = request.query.get("connector_id")
    if connector is None:
        return sources
    narrowed = [s for s in sources if connector in (s.connector.key, s.connector.source_id)]
    if not narrowed:
        raise RsHttpError(404, "not_found", f"Unknown source: {connector}", param="connector_id")
    return narrowed


def _fields(
    request: web.Request, sources: Sequence[Source], drop_ungranted: bool = False
) -> list[str] | None:
    """The ``fields`` projection: unknown names 400; names outside the grant 403, or
    dropped silently where the reference does so (``drop_ungranted``, the detail route)."""
    names = list_param(request.query, "fields")
    if "fields" in request.query and not names:
        raise RsHttpError(400, "invalid_request", "fields must name at least one field", param="fields")
    if not names:
        return None
    if "view" in request.query:
        raise RsHttpError(400, "invalid_request", "fields cannot be combined with view", param="fields")
    for name in names:
        if all(name not in s.manifest.fields for s in sources):
            raise RsHttpError(400, "unknown_field", f"Unknown field: {name}", param="fields")
        if not drop_ungranted and not any(s.field_granted(name) for s in sources):
            raise RsHttpError(403, "field_not_granted", f"Field {name} is not granted", param="fields")
    return [name for name in names if any(s.field_granted(name) for s in sources)]


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


def _expand(request: web.Request, source: Source, access: Access) -> dict[str, int]:
    names = list_param(request.query, "expand")
    limits = bracketed(request.query, "expand_limit")
    relations = {r.name: r for r in source.manifest.relations}
    chosen: dict[str, int] = {}
    for name in names:
        relation = relations.get(name)
        if relation is None:
            raise RsHttpError(
                400,
                "invalid_expand",
                f"Relation {name} is not expandable on {source.manifest.name}",
                param="expand",
            )
        if not access.sources(relation.target_stream, source.connections[0]):
            raise RsHttpError(
                403, "insufficient_scope", f"The grant cannot read {relation.target_stream}", param="expand"
            )
        chosen[name] = relation.default_limit
    for name, raw in limits.items():
        relation = relations.get(name)
        if relation is None or name not in chosen:
            raise RsHttpError(
                400, "invalid_expand", f"expand_limit[{name}] needs expand={name}", param="expand_limit"
            )
        if relation.cardinality == "has_one":
            raise RsHttpError(
                400,
                "invalid_expand",
                f"{name} is a has_one relation: it expands to one record and takes no expand_limit",
                param="expand_limit",
            )
        if not str(raw).isdigit() or not 1 <= int(raw) <= relation.max_limit:
            raise RsHttpError(
                400,
                "invalid_expand",
                f"expand_limit[{name}] must be 1..{relation.max_limit}",
                param="expand_limit",
            )
        chosen[name] = int(raw)
    return chosen


def _expanded(
    record: StoredRecord, source: Source, expand: dict[str, int], store: Store, access: Access
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for relation in source.manifest.relations:
        if relation.name not in expand:
            continue
        target = access.sources(relation.target_stream, record.connection_id)[0]
        key = record.data.get(relation.parent_key)
        children = store.all(
            relation.target_stream, [record.connection_id], [Condition(relation.foreign_key, "eq", key)]
        )
        children.sort(key=lambda r: (r.cursor_value or "", r.record_id), reverse=True)
        if relation.cardinality == "has_one":
            out[relation.name] = record_json(children[0], target, store) if children else None
            continue
        limit = expand[relation.name]
        out[relation.name] = {
            "object": "list",
            "has_more": len(children) > limit,
            "data": [record_json(child, target, store) for child in children[:limit]],
        }
    return out


async def list_records(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    allow_only(request.query, _LIST_KEYS, ("filter", "expand_limit"))
    _client_rules(request, access, reference)
    warnings: list[dict[str, Any]] = []
    stream = request.match_info["stream"]
    connection_id = connection_param(request, warnings)
    sources = by_connector(request, access.stream_sources(stream, connection_id))
    if "changes_since" in request.query:
        return _changes(request, sources, store, access, warnings)
    limit = page_limit(request.query, warnings)
    fields = _fields(request, sources)
    descending = _order(request, sources[0])
    count = request.query.get("count", "none")
    if count not in ("none", "estimated", "exact"):
        raise RsHttpError(400, "invalid_request", "count must be none, estimated or exact", param="count")
    window = request.query.get("window", "none")
    if window not in ("none", "exact"):
        raise RsHttpError(400, "invalid_request", "window must be none or exact", param="window")
    conditions = {id(s): filters(request.query, s) for s in sources}
    expand = {id(s): _expand(request, s, access) for s in sources}
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
            item["expanded"] = _expanded(record, source, expand[id(source)], store, access)
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


def _changes(
    request: web.Request,
    sources: Sequence[Source],
    store: Store,
    access: Access,
    warnings: list[dict[str, Any]],
) -> web.Response:
    for clash in ("sort", "order", "count", "window"):
        if clash in request.query:
            raise RsHttpError(
                400, "invalid_request", f"changes_since cannot be combined with {clash}", param=clash
            )
    if "expand" in request.query or "expand[]" in request.query:
        raise RsHttpError(
            400, "invalid_expand", "changes_since cannot be combined with expand", param="expand"
        )
    connections = [(s, c) for s in sources for c in s.connections]
    if len(connections) != 1:
        raise RsHttpError(
            400,
            "invalid_argument",
            "changes_since reads one connection; pass connection_id.",
            param="changes_since",
            retry_with="connection_id",
            available_connections=[_connection_entry(store, c) for _, c in connections],
        )
    source, connection = connections[0]
    stream = source.manifest.name
    limit = page_limit(request.query, warnings)
    fields = _fields(request, sources)
    conditions = filters(request.query, source)
    newest = store.max_seq()
    if "cursor" in request.query:
        after, horizon = _changes_page(request.query["cursor"], stream, connection, newest)
    else:
        raw = request.query["changes_since"]
        after = 0 if raw == "beginning" else _changes_token(raw, newest)
        horizon = newest
    rows = store.changes(stream, connection, after, horizon, limit + 1, conditions)
    more = len(rows) > limit
    rows = rows[:limit]
    data = [
        {
            "object": "record",
            "id": r.record_id,
            "stream": r.stream,
            "deleted": True,
            "deleted_at": r.deleted_at,
            "emitted_at": r.emitted_at,
        }
        if r.deleted_at
        else record_json(r, source, store, fields=fields)
        for r in rows
    ]
    body: dict[str, Any] = {
        "object": "list",
        "url": request.path,
        "has_more": more,
        "data": data,
        "next_changes_since": encode_token({"v": 1, "epoch": HISTORY_EPOCH, "seq": horizon}),
    }
    next_url = None
    if more:
        body["next_cursor"] = encode_token(
            {
                "kind": "page",
                "session": "changes",
                "stream": stream,
                "connection_id": connection,
                "after": rows[-1].seq,
                "horizon": horizon,
            }
        )
        next_url = next_link(request, body["next_cursor"])
    return json_response(finalise(request, body, is_list=True, next_url=next_url, warnings=warnings))


def _seq(value: object) -> int | None:
    """A history position: a non-negative integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _changes_page(raw: str, stream: str, connection: str, newest: int) -> tuple[int, int]:
    """(after, horizon) of a changes-session cursor; junk, or another stream's, is 400."""
    page = decode_token(raw, "cursor", hint="restart from next_changes_since")
    after, horizon = _seq(page.get("after")), _seq(page.get("horizon"))
    if (
        page.get("kind") != "page"
        or page.get("session") != "changes"
        or page.get("stream") != stream
        or page.get("connection_id") != connection
        or after is None
        or horizon is None
        or not after <= horizon <= newest
    ):
        raise RsHttpError(
            400,
            "invalid_cursor",
            "Not a changes cursor for this stream; restart from next_changes_since.",
            param="cursor",
        )
    return after, horizon


def _changes_token(raw: str, newest: int) -> int:
    """The sequence a ``next_changes_since`` token resumes after: junk 400, another epoch 410."""
    malformed = RsHttpError(
        400,
        "invalid_cursor",
        'Malformed changes_since; use "beginning" or a next_changes_since value.',
        param="changes_since",
    )
    token = decode_token(raw, "changes_since", hint='use "beginning" or a next_changes_since value')
    version, epoch, seq = token.get("v"), token.get("epoch"), _seq(token.get("seq"))
    if type(version) is not int or version != 1 or not isinstance(epoch, str) or seq is None:
        raise malformed
    if epoch != HISTORY_EPOCH:
        raise RsHttpError(
            410,
            "cursor_expired",
            "This changes_since is older than the retained history; resync with changes_since=beginning.",
            param="changes_since",
        )
    if seq > newest:
        raise malformed  # never issued: this history has not reached that point
    return seq


def _connection_entry(store: Store, connection_id: str) -> dict[str, Any]:
    connection = store.catalog.connection(connection_id)
    entry: dict[str, Any] = {"connection_id": connection_id}
    if connection and connection.display_name:
        entry["display_name"] = connection.display_name
    return entry


def locate(
    request: web.Request, access: Access, store: Store, warnings: list[dict[str, Any]]
) -> tuple[Source, StoredRecord]:
    """The one readable record ``{stream}/{id}`` names, or 404 / 409."""
    stream, record_id = request.match_info["stream"], request.match_info["record_id"]
    if not record_id or "\x00" in record_id:
        raise RsHttpError(404, "not_found", "Record not found")
    sources = by_connector(request, access.stream_sources(stream, connection_param(request, warnings)))
    found = [(s, r) for s in sources for r in store.find(stream, record_id, s.connections)]
    if not found:
        raise RsHttpError(404, "not_found", "Record not found")
    if len({r.connection_id for _, r in found}) > 1:
        raise RsHttpError(
            409,
            "ambiguous_connection",
            "This record id exists in several granted connections; pass connection_id.",
            param="connection_id",
            retry_with="connection_id",
            available_connections=[_connection_entry(store, r.connection_id) for _, r in found],
        )
    return found[0]


async def get_record(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    _client_rules(request, access, reference)
    warnings: list[dict[str, Any]] = []
    source, record = locate(request, access, store, warnings)
    body = record_json(record, source, store, fields=_fields(request, [source], drop_ungranted=True))
    expand = _expand(request, source, access)
    if expand:
        body["expanded"] = _expanded(record, source, expand, store, access)
    body["connector_key"] = source.connector.key
    body["record_json_bytes"] = len(str(record.data))
    return json_response(finalise(request, body, warnings=warnings))


def _int_param(request: web.Request, name: str, minimum: int, maximum: int | None = None) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) < minimum or (maximum is not None and int(raw) > maximum):
        bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise RsHttpError(400, "invalid_window", f"{name} must be an integer {bound}", param=name)
    return int(raw)


async def field_window(request: web.Request, access: Access, store: Store) -> web.Response:
    warnings: list[dict[str, Any]] = []
    field = request.query.get("field", "")
    if not field or "\x00" in field or "." in field or "/" in field:
        raise RsHttpError(400, "invalid_field_path", "field must name one top-level field", param="field")
    offset = _int_param(request, "offset_chars", 0)
    limit = _int_param(request, "limit_chars", 1)
    before, after = (
        _int_param(request, "before_chars", 0, CONTEXT_MAX),
        _int_param(request, "after_chars", 0, CONTEXT_MAX),
    )
    q = request.query.get("q")
    if q is not None and offset is not None:
        raise RsHttpError(400, "invalid_window", "q and offset_chars are exclusive", param="q")
    if (before is not None or after is not None) and q is None:
        raise RsHttpError(400, "invalid_window", "before_chars/after_chars need q", param="before_chars")
    source, record = locate(request, access, store, warnings)
    if field not in source.manifest.fields:
        raise RsHttpError(
            404, "field_not_found", f"Field {field} does not exist on {source.manifest.name}", param="field"
        )
    if not source.field_granted(field):
        raise RsHttpError(403, "field_not_granted", f"Field {field} is not granted", param="field")
    value = record.data.get(field)
    if value is None:
        raise RsHttpError(404, "field_not_found", f"Record has no {field}", param="field")
    if not isinstance(value, str):
        raise RsHttpError(422, "field_not_text", f"Field {field} is not text", param="field")
    if limit is not None and limit > WINDOW_MAX:
        warnings.append(
            {
                "code": "limit_clamped",
                "param": "limit_chars",
                "message": f"limit_chars was clamped to {WINDOW_MAX}.",
                "detail": {"requested_limit": limit, "max_limit": WINDOW_MAX},
            }
        )
        limit = WINDOW_MAX
    total = len(value)
    match_start = match_end = None
    if q is not None:
        found = value.lower().find(q.lower())
        if found < 0:
            raise RsHttpError(404, "query_not_found", "q was not found in the field", param="q")
        match_start, match_end = found, found + len(q)
        start = max(0, found - (before or 0))
        if before is None and after is None:
            end = min(total, start + (limit or WINDOW_DEFAULT))
        else:
            end = min(total, match_end + (after or 0), start + limit if limit is not None else total)
    else:
        start = min(offset or 0, total)
        end = min(total, start + (limit or WINDOW_DEFAULT))
    if limit is not None:
        size = limit
    elif q is not None and (before is not None or after is not None):
        size = (before or 0) + len(q) + (after or 0)  # the contract's window without limit_chars
    else:
        size = WINDOW_DEFAULT
    window = {
        "text": value[start:end],
        "start_chars": start,
        "end_chars": end,
        "limit_chars": size,
        "total_chars": total,
        "complete": start == 0 and end == total,
        "has_more": end < total,
        "next_offset_chars": end if end < total else None,
        "previous_offset_chars": max(0, start - size) if start > 0 else None,
        "match_start_chars": match_start,
        "match_end_chars": match_end,
    }
    body = {
        "object": "field_window",
        "stream": record.stream,
        "record_id": record.record_id,
        "connection_id": record.connection_id,
        "url": request.path,
        "field": {"path": field, "type": "string"},
        "window": window,
    }
    return json_response(finalise(request, body, warnings=warnings))
