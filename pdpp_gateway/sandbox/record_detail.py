"""Routes on one record: its detail and a bounded window of one of its text fields.

Contract (reference RS rules, rs-contract.md):
- ``locate``: 404 ``not_found``; 409 ``ambiguous_connection`` when the id exists under
  several readable connections and no ``connection_id`` narrows it.
- detail: ``fields`` names unknown to the stream are a 400, names outside the grant are
  dropped silently (as the reference does on this route; the list route refuses them
  with 403); ``expand`` as on the list.
- field window: bounded character windows of one top-level string field (``offset_chars``
  or ``q`` with ``before_chars``/``after_chars``); ``window.limit_chars`` is the limit
  applied (requested and clamped to ``WINDOW_MAX``, else ``WINDOW_DEFAULT``, or
  ``before + len(q) + after`` for a context window), not the length of the text.
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response
from pdpp_gateway.sandbox.record_json import expanded, record_json, requested_expansions
from pdpp_gateway.sandbox.record_query import (
    by_connector,
    client_rules,
    connection_entry,
    connection_param,
    requested_fields,
)
from pdpp_gateway.sandbox.store import Store, StoredRecord

WINDOW_DEFAULT: Final = 4096
WINDOW_MAX: Final = 16_384
CONTEXT_MAX: Final = 8192


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
            available_connections=[connection_entry(store, r.connection_id) for _, r in found],
        )
    return found[0]


async def get_record(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    client_rules(request, access, reference)
    warnings: list[dict[str, Any]] = []
    source, record = locate(request, access, store, warnings)
    body = record_json(record, source, store, fields=requested_fields(request, [source], drop_ungranted=True))
    expand = requested_expansions(request, source, access)
    if expand:
        body["expanded"] = expanded(record, source, expand, store, access)
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
