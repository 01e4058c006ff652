"""Search routes: lexical (SQLite FTS5 + bm25), semantic and hybrid (deterministic scorer).

Contract: ``q`` is required; ``limit`` 25/100 clamped; unknown keys 400; a client's
``streams[]`` outside the grant is 403 ``grant_stream_not_allowed``; ``filter`` needs
exactly one stream. Lexical hits carry ``matched_fields``, a bm25 ``score`` and, for
matches in text or title fields only, a ``snippet`` and ``evidence_excerpts`` (bounded
context with ``<mark>``) plus the field-window ``read`` descriptor; a hit matched only on
metadata fields has neither. Lexical and semantic page with a cursor bound to the query
and caller (mismatch: 400 ``invalid_cursor``); hybrid never pages and refuses ``cursor``.
The semantic scorer is token overlap (Jaccard distance): deterministic, shape-faithful.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import quote

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response
from pdpp_gateway.sandbox.params import (
    allow_only,
    decode_token,
    encode_token,
    filters,
    list_param,
    page_limit,
)
from pdpp_gateway.sandbox.records import connection_param
from pdpp_gateway.sandbox.store import Condition, Store, StoredRecord

CANDIDATE_WINDOW: Final = 2000
_KEYS: Final = ("q", "limit", "cursor", "streams", "streams[]", "connection_id", "connector_instance_id")
_TOKEN = re.compile(r"\w+", re.UNICODE)
PROVEN_ROLES: Final = ("text", "title")


def _scopes(
    request: web.Request, access: Access, warnings: list[dict[str, Any]], *, semantic: bool
) -> list[Source]:
    streams = list_param(request.query, "streams")
    connection_id = connection_param(request, warnings)
    if connection_id is not None and not access.sources(None, connection_id):
        raise RsHttpError(
            404, "connection_not_found", f"Unknown connection_id: {connection_id}", param="connection_id"
        )
    for stream in streams:
        if not access.sources(stream):
            raise RsHttpError(
                403, "grant_stream_not_allowed", f"Stream {stream} is not in this grant", param="streams"
            )
    sources = [s for s in access.sources(None, connection_id) if not streams or s.manifest.name in streams]
    return [s for s in sources if (s.manifest.semantic if semantic else s.manifest.lexical)]


def _hit(record: StoredRecord, source: Source, store: Store) -> dict[str, Any]:
    hit: dict[str, Any] = {
        "object": "search_result",
        "stream": record.stream,
        "record_key": record.record_id,
        "connector_id": source.connector.key,
        "connection_id": record.connection_id,
        "connector_instance_id": record.connection_id,
        "emitted_at": record.emitted_at,
        "record_url": f"/v1/streams/{quote(record.stream, safe='')}/records/{quote(record.record_id, safe='')}",
    }
    connection = store.catalog.connection(record.connection_id)
    if connection and connection.display_name:
        hit["display_name"] = connection.display_name
    authored = record.data.get(source.manifest.cursor_field)
    if isinstance(authored, str):
        hit["authored_at"] = authored
    return hit


def _check_cursor(request: web.Request, fingerprint: str) -> int:
    if "cursor" not in request.query:
        return 0
    token = decode_token(request.query["cursor"], "cursor", hint="search again without it")
    if token.get("snap") != fingerprint or not isinstance(token.get("off"), int):
        raise RsHttpError(
            400,
            "invalid_cursor",
            "This cursor belongs to another search; search again without it.",
            param="cursor",
        )
    return int(token["off"])


def _fingerprint(request: web.Request, access: Access, mode: str) -> str:
    scope = "|".join(
        [
            mode,
            request.query.get("q", ""),
            ",".join(list_param(request.query, "streams")),
            request.query.get("connection_id", ""),
            str(access.principal.grant_id or access.principal.kind),
        ]
    )
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def _lexical_hits(
    request: web.Request, access: Access, store: Store, sources: Sequence[Source]
) -> tuple[list[dict[str, Any]], bool]:
    terms = _TOKEN.findall(request.query.get("q", ""))
    if not terms:
        raise RsHttpError(400, "invalid_request", "q must contain at least one word", param="q")
    expression = " ".join(f'"{term}"' for term in terms)
    by_scope = {(c, s.manifest.name): s for s in sources for c in s.connections}
    conditions = (
        {id(s): filters(request.query, s) for s in sources}
        if any(k.startswith("filter") for k in request.query)
        else {}
    )
    rows = store.search(expression, by_scope, CANDIDATE_WINDOW + 1)
    truncated = len(rows) > CANDIDATE_WINDOW
    grouped: dict[int, dict[str, Any]] = {}
    for record, field, score, snippet in rows[:CANDIDATE_WINDOW]:
        source = by_scope[(record.connection_id, record.stream)]
        if not source.field_granted(field):
            continue
        if conditions.get(id(source)) and not store.all(
            record.stream, [record.connection_id], [*conditions[id(source)], _id_condition(source, record)]
        ):
            continue
        entry = grouped.get(record.rowid)
        if entry is None:
            entry = grouped[record.rowid] = {
                **_hit(record, source, store),
                "matched_fields": [],
                "score": {"kind": "bm25", "value": score, "order": "lower_is_better"},
            }
        entry["matched_fields"].append(field)
        role = source.manifest.fields[field].role
        if role in PROVEN_ROLES:
            entry.setdefault("snippet", {"field": field, "text": snippet})
            entry.setdefault("evidence_excerpts", []).append(
                {
                    "object": "evidence_excerpt",
                    "field_path": field,
                    "preview_text": snippet,
                    "provenance": "lexical_match",
                    "truncated": snippet.replace("<mark>", "").replace("</mark>", "")
                    != record.data.get(field),
                    "read": {
                        "object": "field_window_read",
                        "method": "GET",
                        "stream": record.stream,
                        "record_id": record.record_id,
                        "field": field,
                        "connection_id": record.connection_id,
                        "route": f"{entry['record_url']}/field-window",
                    },
                }
            )
    return list(grouped.values()), truncated


def _id_condition(source: Source, record: StoredRecord) -> Condition:
    return Condition(source.manifest.primary_key, "eq", record.record_id)


def _semantic_hits(request: web.Request, store: Store, sources: Sequence[Source]) -> list[dict[str, Any]]:
    query = {t.lower() for t in _TOKEN.findall(request.query.get("q", ""))}
    if not query:
        raise RsHttpError(400, "invalid_request", "q must contain at least one word", param="q")
    scored = []
    for source in sources:
        for record in store.all(source.manifest.name, list(source.connections)):
            best, best_field = 1.0, None
            for field in source.manifest.semantic:
                value = record.data.get(field)
                if not isinstance(value, str) or not source.field_granted(field):
                    continue
                words = {t.lower() for t in _TOKEN.findall(value)}
                overlap = len(query & words)
                distance = 1 - overlap / len(query | words) if overlap else 1.0
                if distance < best:
                    best, best_field = distance, field
            if best_field is not None:
                hit = _hit(record, source, store)
                hit.update(
                    retrieval_mode="semantic",
                    matched_fields=[best_field],
                    score={"kind": "semantic_distance", "value": round(best, 6), "order": "lower_is_better"},
                    snippet={"field": best_field, "text": str(record.data[best_field])[:200]},
                )
                scored.append((best, record.rowid, hit))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [hit for _, _, hit in scored]


async def search(
    request: web.Request, access: Access, store: Store, reference: bool, mode: str
) -> web.Response:
    q = request.query
    allow_only(q, _KEYS, ("filter",))
    if not q.get("q", "").strip():
        raise RsHttpError(400, "invalid_request", "q is required", param="q")
    if any(k.startswith("filter") for k in q):
        if reference and not access.is_owner:
            raise RsHttpError(
                400,
                "invalid_request",
                "filter[...] is not supported for client-token reads in PDPP v0.1",
                param="filter",
            )
        if len(list_param(q, "streams")) != 1:
            raise RsHttpError(
                400, "invalid_request", "filter needs exactly one streams value", param="filter"
            )
    if mode == "hybrid" and "cursor" in q:
        raise RsHttpError(400, "invalid_request", "hybrid search does not page", param="cursor")
    warnings: list[dict[str, Any]] = []
    limit = page_limit(q, warnings)
    fingerprint = _fingerprint(request, access, mode)
    offset = _check_cursor(request, fingerprint)
    meta: dict[str, Any] = {}
    if mode == "lexical":
        scopes = _scopes(request, access, warnings, semantic=False)
        hits, truncated = _lexical_hits(request, access, store, scopes)
        meta = {
            "count": None if truncated else len(hits),
            "count_accuracy": "lower_bound" if truncated else "exact",
            "recall": {
                "complete": not truncated,
                "ranking_scope": "candidate_window" if truncated else "all_matches",
                "truncated": truncated,
                "ranked_candidate_count": len(hits),
                "candidate_window_limit": CANDIDATE_WINDOW,
                "sources_searched_count": len(scopes),
            },
        }
    elif mode == "semantic":
        hits = _semantic_hits(request, store, _scopes(request, access, warnings, semantic=True))
    else:
        lexical, _ = _lexical_hits(request, access, store, _scopes(request, access, warnings, semantic=False))
        semantic = _semantic_hits(request, store, _scopes(request, access, warnings, semantic=True))
        hits = _round_robin(lexical, semantic)
    page = hits[offset : offset + limit]
    more = len(hits) > offset + limit
    body: dict[str, Any] = {"object": "list", "url": request.path, "has_more": more, "data": page}
    if more and mode != "hybrid":
        body["next_cursor"] = encode_token({"off": offset + limit, "snap": fingerprint})
    body["meta"] = {**meta, "warnings": warnings}
    return json_response(finalise(request, body, is_list=True, warnings=warnings))


def _round_robin(lexical: list[dict[str, Any]], semantic: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pair in zip(lexical, semantic, strict=False):
        for hit, kind in ((pair[0], "lexical"), (pair[1], "semantic")):
            _merge(merged, hit, kind)
    for hit in lexical[len(semantic) :]:
        _merge(merged, hit, "lexical")
    for hit in semantic[len(lexical) :]:
        _merge(merged, hit, "semantic")
    return list(merged.values())


def _merge(merged: dict[tuple[str, str, str], dict[str, Any]], hit: dict[str, Any], kind: str) -> None:
    key = (hit["connection_id"], hit["stream"], hit["record_key"])
    entry = merged.setdefault(
        key,
        {
            **{k: v for k, v in hit.items() if k not in ("score", "retrieval_mode")},
            "retrieval_mode": "hybrid",
            "retrieval_sources": [],
            "scores": {},
        },
    )
    entry["retrieval_sources"].append(kind)
    entry["scores"][kind] = hit["score"]
