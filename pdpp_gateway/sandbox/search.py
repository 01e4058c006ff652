"""Search routes: lexical (SQLite FTS5 + bm25), semantic (embeddings) and hybrid (their merge).

Contract: ``q`` is required; ``limit`` 25/100 clamped; unknown keys 400; a client's
``streams[]`` outside the grant is 403 ``grant_stream_not_allowed``; ``filter`` needs
exactly one stream, and every mode (lexical, semantic, hybrid) applies it.

Every hit carries ``emitted_at``, the record's ingest time (the same for every seeded
record, as on the reference RS, so it says nothing about the record), and ``authored_at``
only when the record has one of the reference's authored-time fields (``sent_at``,
``authored_at``, ``created_at``, ``source_created_at``, ``occurred_at``, ``updated_at``):
a mail message dated by ``received_at`` has none. Lexical hits carry ``matched_fields``,
a bm25 ``score`` and a ``snippet`` (bounded context with ``<mark>``) of their best field
match, like the reference; for matches in text or title fields they also carry
``evidence_excerpts`` with the field-window ``read`` descriptor, while a hit matched only
on metadata fields has its snippet alone (a sandbox extension: that match is not proven
evidence). Hybrid hits are the reference's merge: ``retrieval_sources``, per-source
``scores``, the first snippet either source gave, and no ``evidence_excerpts`` or
``authored_at``. Lexical and semantic page with a cursor bound to the query and caller
(mismatch: 400 ``invalid_cursor``), and ``links.next`` repeats the request with the next
cursor; hybrid never pages and refuses ``cursor`` (``has_more`` only says the merged list
was cut at ``limit``). Lexical ranking reads only ids and bm25 scores; record bodies and
snippets are built for the returned page alone.

Meaning-based ranking is the reference's: the embedding of each granted semantic field's
first 2,048 characters (``Store.semantic``, ``store.SEMANTIC_INPUT_MAX_CHARS``: a fact deeper
in a long body is found by lexical search or by reading the field, not by meaning) at its
cosine distance from the question's (``vectors``: WordLlama's bundled model where the reference
runs all-MiniLM-L6-v2); per connector the ``per_connector_limit(limit)`` nearest fields; one
hit per record at its nearest field's distance (``score``: ``semantic_distance``,
``lower_is_better``), ties in the reference's order (connector, connection, ``[stream,field]``,
record key), its ``matched_fields`` every field of it kept, nearest first. No lexical part,
no threshold and no folding of near-duplicates, as on the reference. Like the reference its
snippet is the nearest field's opening (160 characters), not a passage: where in the field
the answer lies is for the caller to find. Hybrid is the reference's fusion (``hybrid``): the first
``limit`` hits of each, taken in turn (lexical first), one per record, cut at ``limit``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response, next_link
from pdpp_gateway.sandbox.hybrid import hybrid_shape, round_robin
from pdpp_gateway.sandbox.params import (
    allow_only,
    decode_token,
    encode_token,
    filters,
    list_param,
    page_limit,
)
from pdpp_gateway.sandbox.record_query import connection_param
from pdpp_gateway.sandbox.store import Condition, SearchScope, Store, StoredRecord

CANDIDATE_WINDOW: Final = 2000
OPENING_CHARS: Final = 160
_KEYS: Final = ("q", "limit", "cursor", "streams", "streams[]", "connection_id", "connector_instance_id")
_TOKEN = re.compile(r"\w+", re.UNICODE)
PROVEN_ROLES: Final = ("text", "title")
# The record fields the reference RS reads a hit's ``authored_at`` from, first present wins.
AUTHORED_FIELDS: Final = (
    "sent_at",
    "sentAt",
    "authored_at",
    "authoredAt",
    "created_at",
    "createdAt",
    "source_created_at",
    "sourceCreatedAt",
    "occurred_at",
    "occurredAt",
    "updated_at",
    "updatedAt",
)


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
    authored = next(
        (value for key in AUTHORED_FIELDS if isinstance(value := record.data.get(key), str) and value), None
    )
    if authored is not None:
        hit["authored_at"] = authored
    return hit


def _check_cursor(request: web.Request, fingerprint: str) -> int:
    if "cursor" not in request.query:
        return 0
    token = decode_token(request.query["cursor"], "cursor", hint="search again without it")
    offset = token.get("off")
    if (
        token.get("snap") != fingerprint
        or not isinstance(offset, int)
        or isinstance(offset, bool)
        or offset < 0
    ):
        raise RsHttpError(
            400,
            "invalid_cursor",
            "This cursor belongs to another search; search again without it.",
            param="cursor",
        )
    return offset


def _fingerprint(request: web.Request, access: Access, mode: str) -> str:
    scope = "|".join(
        [
            mode,
            request.query.get("q", ""),
            ",".join(list_param(request.query, "streams")),
            request.query.get("connection_id", ""),
            "&".join(sorted(f"{k}={v}" for k, v in request.query.items() if k.startswith("filter"))),
            str(access.principal.grant_id or access.principal.kind),
        ]
    )
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def _conditions(request: web.Request, sources: Sequence[Source]) -> dict[int, list[Condition]]:
    """``filter[...]`` per source (the caller has checked there is exactly one stream)."""
    if not any(k.startswith("filter") for k in request.query):
        return {}
    return {id(s): filters(request.query, s) for s in sources}


def _expression(request: web.Request) -> str:
    terms = _TOKEN.findall(request.query.get("q", ""))
    if not terms:
        raise RsHttpError(400, "invalid_request", "q must contain at least one word", param="q")
    return " ".join(f'"{term}"' for term in terms)


def _lexical_hits(
    request: web.Request, store: Store, sources: Sequence[Source]
) -> tuple[list[_Lexical], bool]:
    """Ranked lexical hits, one per record, not yet materialised (see ``_materialise``)."""
    expression = _expression(request)
    conditions = _conditions(request, sources)
    scopes: dict[tuple[str, str], tuple[Source, frozenset[str], frozenset[str]]] = {}
    for source in sources:
        fields = source.manifest.fields
        granted = frozenset(f for f in fields if source.field_granted(f))
        proven = frozenset(f for f in granted if fields[f].role in PROVEN_ROLES)
        for connection in source.connections:
            scopes[(connection, source.manifest.name)] = (source, granted, proven)
    candidates = store.search(
        expression,
        [SearchScope(c, s, tuple(conditions.get(id(v[0]), ()))) for (c, s), v in scopes.items()],
        CANDIDATE_WINDOW + 1,
    )
    truncated = len(candidates) > CANDIDATE_WINDOW
    grouped: dict[int, _Lexical] = {}
    for fts_rowid, rowid, field, score, connection_id, stream, record_id in candidates[:CANDIDATE_WINDOW]:
        source, granted, proven = scopes[(connection_id, stream)]
        if field not in granted:
            continue
        entry = grouped.get(rowid)
        if entry is None:
            entry = grouped[rowid] = _Lexical(
                rowid, source, expression, score, connection_id, stream, record_id, [], [], (field, fts_rowid)
            )
        entry.matched.append(field)
        if field in proven:
            entry.proven.append((field, fts_rowid))
    return list(grouped.values()), truncated


@dataclass(slots=True)
class _Lexical:
    """A ranked lexical hit before it is on a page: ids and scores, no body, no snippet."""

    rowid: int
    source: Source
    expression: str
    score: float
    connection_id: str
    stream: str
    record_id: str
    matched: list[str]
    proven: list[tuple[str, int]]  # (field, FTS row) matches in text/title fields, best first
    best: tuple[str, int]  # the best (field, FTS row) match of any role: the snippet when none is proven

    def as_hit(self) -> dict[str, Any]:
        """The hit's identity and ranking, still to be materialised."""
        return {
            "stream": self.stream,
            "record_key": self.record_id,
            "connection_id": self.connection_id,
            "matched_fields": self.matched,
            "score": {"kind": "bm25", "value": self.score, "order": "lower_is_better"},
            _PENDING: self,
        }


_PENDING: Final = "_pending"
Hit = dict[str, Any] | _Lexical


def _materialise(page: Sequence[Hit], store: Store) -> list[dict[str, Any]]:
    """The page as wire hits: record fields, ``snippet`` and ``evidence_excerpts`` filled in."""
    hits = [item.as_hit() if isinstance(item, _Lexical) else item for item in page]
    pending: list[_Lexical] = [hit[_PENDING] for hit in hits if _PENDING in hit]
    records = store.records(p.rowid for p in pending)
    snippets: dict[int, str] = {}
    for expression in {p.expression for p in pending}:
        snippets.update(
            store.snippets(
                expression,
                (row for p in pending if p.expression == expression for _, row in p.proven or [p.best]),
            )
        )
    out = []
    for hit in hits:
        todo = hit.get(_PENDING)
        if not isinstance(todo, _Lexical):
            out.append(hit)
            continue
        record = records[todo.rowid]
        full = {**_hit(record, todo.source, store), **{k: v for k, v in hit.items() if k != _PENDING}}
        for field, row in todo.proven:
            snippet = snippets[row]
            full.setdefault("snippet", {"field": field, "text": snippet})
            full.setdefault("evidence_excerpts", []).append(
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
                        "route": f"{full['record_url']}/field-window",
                    },
                }
            )
        if not todo.proven:
            field, row = todo.best
            full["snippet"] = {"field": field, "text": snippets[row]}
        out.append(full)
    return out


@dataclass(frozen=True, slots=True)
class _FieldHit:
    """One semantic field of one record at its distance from the question (the reference's
    vector-index hit), ordered as the reference orders hits: distance, then identity."""

    distance: float
    connector_id: str
    connection_id: str
    scope_key: str  # the reference's JSON ``[stream, field]``
    record_id: str
    rowid: int
    field: str
    source: Source


def _semantic_hits(
    request: web.Request, store: Store, sources: Sequence[Source], limit: int
) -> list[dict[str, Any]]:
    """Meaning-based hits, ranked as the reference ranks them: each granted semantic field's
    embedding at its cosine distance from the question's; per connector the nearest
    ``per_connector_limit(limit)`` fields; merged, then one hit per record at its nearest
    field's distance, ``matched_fields`` every field of it among those, nearest first, and the
    nearest field's opening as snippet."""
    query = request.query.get("q", "")
    if not _TOKEN.findall(query):
        raise RsHttpError(400, "invalid_request", "q must contain at least one word", param="q")
    vectors = store.semantic
    if vectors is None:
        raise RsHttpError(
            503,
            "semantic_unavailable",
            "The embedding model did not load, so meaning-based search is off; search with /v1/search.",
        )
    conditions = _conditions(request, sources)
    scopes = {(c, s.manifest.name): s for s in sources for c in s.connections}
    located = store.scoped(
        SearchScope(c, s, tuple(conditions.get(id(v), ()))) for (c, s), v in scopes.items()
    )
    per_connector: dict[str, list[_FieldHit]] = {}
    for rowid, field, distance in zip(vectors.rowids, vectors.fields, vectors.distances(query), strict=True):
        where = located.get(rowid)
        if where is None:
            continue
        source = scopes[(where.connection_id, where.stream)]
        if field not in source.manifest.semantic or not source.field_granted(field):
            continue
        per_connector.setdefault(source.connector.key, []).append(
            _FieldHit(
                float(distance),
                source.connector.key,
                where.connection_id,
                json.dumps([where.stream, field], ensure_ascii=False, separators=(",", ":")),
                where.record_id,
                rowid,
                field,
                source,
            )
        )
    keep = per_connector_limit(limit)
    nearest: dict[int, list[_FieldHit]] = {}  # per record, its fields among the kept, nearest first
    kept = (hit for hits in per_connector.values() for hit in sorted(hits, key=_order)[:keep])
    for hit in sorted(kept, key=_order):
        nearest.setdefault(hit.rowid, []).append(hit)
    records = store.records(nearest)
    out = []
    for fields in sorted(nearest.values(), key=lambda fields: _order(fields[0])):
        top = fields[0]
        record = records[top.rowid]
        found = _hit(record, top.source, store)
        found.update(
            retrieval_mode="semantic",
            matched_fields=list(dict.fromkeys(f.field for f in fields)),
            score={"kind": "semantic_distance", "value": top.distance, "order": "lower_is_better"},
            snippet={"field": top.field, "text": _opening(str(record.data[top.field]))},
        )
        out.append(found)
    return out


def _order(hit: _FieldHit) -> tuple[float, str, str, str, str]:
    """The reference's total order of semantic hits (``compareHits``)."""
    return (hit.distance, hit.connector_id, hit.connection_id, hit.scope_key, hit.record_id)


def per_connector_limit(page_limit: int) -> int:
    """How many nearest fields the reference keeps per connector for a page of ``page_limit``
    (``resolveSemanticPerConnectorLimit``): enough to fill the page after folding a record's fields."""
    normalized = max(1, min(page_limit, 100))
    return min(100, max(25, math.ceil(normalized * 1.5), normalized + 10))


def _opening(text: str) -> str:
    """A field's first ``OPENING_CHARS`` characters, cut at a space, as the reference's
    semantic snippet is (verbatim, not aimed at the query), with an ellipsis when cut."""
    if len(text) <= OPENING_CHARS:
        return text
    head = text[:OPENING_CHARS]
    space = head.rfind(" ")
    return (head[:space] if space > 40 else head) + "…"


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
    hits: Sequence[Hit]
    if mode == "lexical":
        scopes = _scopes(request, access, warnings, semantic=False)
        hits, truncated = _lexical_hits(request, store, scopes)
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
        hits = _semantic_hits(request, store, _scopes(request, access, warnings, semantic=True), limit)
    else:  # the reference merges the first page of each (its lexical and semantic runs at ``limit``)
        ranked, _ = _lexical_hits(request, store, _scopes(request, access, warnings, semantic=False))
        lexical = [hit.as_hit() for hit in ranked[:limit]]
        semantic = _semantic_hits(request, store, _scopes(request, access, warnings, semantic=True), limit)
        hits = round_robin(lexical, semantic[:limit])
    page = _materialise(hits[offset : offset + limit], store)
    if mode == "hybrid":
        page = [hybrid_shape(hit) for hit in page]
    more = len(hits) > offset + limit
    body: dict[str, Any] = {"object": "list", "url": request.path, "has_more": more, "data": page}
    next_url = None
    if more and mode != "hybrid":
        body["next_cursor"] = encode_token({"off": offset + limit, "snap": fingerprint})
        next_url = next_link(request, body["next_cursor"])
    body["meta"] = {**meta, "warnings": warnings}
    return json_response(finalise(request, body, is_list=True, next_url=next_url, warnings=warnings))
