"""Schema routes: ``/v1/schema`` (full, compact, scoped, detail=full), ``/v1/streams``, ``/v1/streams/{s}``.

Contract: a client sees only granted streams, fields and connections; an owner sees
everything. Field capabilities are ``{declared, usable}`` objects (``usable`` = declared
and granted); the compact view turns them into flag strings (``t=``, ``role=``, ``eq``,
``r=``, ``lex``, ``sem``, ``a=``, ``declared``) and lifts the common granted connections to
the connector. ``detail=full`` needs ``stream`` (400) and one source (409
``ambiguous_schema_detail``). With ``reference_client_rules`` a client schema omits
filter capabilities, as the reference RS does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response
from pdpp_gateway.sandbox.manifests import StreamManifest
from pdpp_gateway.sandbox.store import Store
from pdpp_gateway.schema_view import field_flags

FRESHNESS: Final = {
    "status": "current",
    "captured_at": "2026-11-01T00:00:00.000Z",
    "last_attempted_at": "2026-11-01T00:00:00.000Z",
}
_AGG_KINDS: Final = ("count_distinct", "group_by", "group_by_time", "min", "max", "sum")


def _flag(declared: bool, granted: bool) -> dict[str, Any]:
    flag: dict[str, Any] = {"declared": declared, "usable": declared and granted}
    if declared and not granted:
        flag["reason"] = "field_not_granted"
    return flag


def field_capability(manifest: StreamManifest, name: str, granted: bool, filters: bool) -> dict[str, Any]:
    declared = manifest.fields[name]
    aggregation = {
        "count_distinct": name in manifest.count_distinct,
        "group_by": name in manifest.group_by,
        "group_by_time": name in manifest.group_by_time,
        "min": name in manifest.min_max,
        "max": name in manifest.min_max,
        "sum": name in manifest.sum,
    }
    capability: dict[str, Any] = {
        "granted": granted,
        "schema": {"type": declared.type},
        "type": declared.type,
        "lexical_search": _flag(name in manifest.lexical, granted),
        "semantic_search": _flag(name in manifest.semantic, granted),
        "aggregation": {kind: _flag(aggregation[kind], granted) for kind in _AGG_KINDS},
    }
    if declared.role:
        capability["role"] = declared.role
    if filters:
        capability["exact_filter"] = _flag(name in manifest.exact, granted)
        capability["range_filter"] = {
            **_flag(name in manifest.ranges, granted),
            "operators": ["gte", "gt", "lte", "lt"] if name in manifest.ranges else [],
        }
    return capability


def _expand_capabilities(source: Source, access: Access) -> list[dict[str, Any]]:
    out = []
    for relation in source.manifest.relations:
        readable = bool(access.sources(relation.target_stream))
        entry: dict[str, Any] = {
            "name": relation.name,
            "stream": source.manifest.name,
            "target_stream": relation.target_stream,
            "cardinality": relation.cardinality,
            "granted": readable,
            "usable": readable,
            "foreign_key": relation.foreign_key,
            "child_parent_key_field": relation.parent_key,
            **relation.limits(),
        }
        if not readable:
            entry["reason"] = "related_stream_not_granted"
        out.append(entry)
    return out


def _connections(store: Store, ids: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for connection_id in ids:
        connection = store.catalog.connection(connection_id)
        entry: dict[str, Any] = {"connection_id": connection_id}
        if connection and connection.display_name:
            entry["display_name"] = connection.display_name
        out.append(entry)
    return out


def stream_metadata(source: Source, access: Access, store: Store, filters: bool) -> dict[str, Any]:
    manifest = source.manifest
    visible = [name for name in manifest.fields if source.field_granted(name)]
    return {
        "object": "stream_metadata",
        "name": manifest.name,
        "primary_key": [manifest.primary_key],
        "cursor_field": manifest.cursor_field,
        "consent_time_field": manifest.cursor_field,
        "semantics": manifest.semantics,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {name: {"type": manifest.fields[name].type} for name in visible},
        },
        "selection": {"fields": visible, "resources": []},
        "query": manifest.query_declaration(),
        "views": [],
        "relationships": [
            {
                "name": r.name,
                "stream": r.target_stream,
                "foreign_key": r.foreign_key,
                "cardinality": r.cardinality,
            }
            for r in manifest.relations
        ],
        "expand_capabilities": _expand_capabilities(source, access),
        "field_capabilities": {name: field_capability(manifest, name, True, filters) for name in visible},
        "freshness": FRESHNESS,
        "record_count": sum(store.count(manifest.name, [c]) for c in source.connections),
        "instance_ids": list(source.connections),
        "granted_connections": _connections(store, source.connections),
    }


def _compact_stream(full: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": full["name"],
        "primary_key": full["primary_key"],
        "cursor_field": full["cursor_field"],
        "record_count": full["record_count"],
        "granted_connections": full["granted_connections"],
        "field_capabilities": {name: field_flags(cap) for name, cap in full["field_capabilities"].items()},
        "expand_capabilities": full["expand_capabilities"],
    }


async def get_schema(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    q = request.query
    compact = q.get("view", "").lower() == "compact"
    full_detail = q.get("detail", "").lower() == "full"
    stream, connection_id = q.get("stream"), q.get("connection_id")
    if full_detail and not stream:
        raise RsHttpError(400, "invalid_request", "detail=full requires stream", param="detail")
    sources = access.sources(stream, connection_id)
    if full_detail and len({(s.connector.key, c) for s in sources for c in s.connections}) > 1:
        raise RsHttpError(
            409,
            "ambiguous_schema_detail",
            "This stream spans several sources; pass connection_id.",
            param="connection_id",
            retry_with="connection_id",
            available_connections=[
                {"connection_id": c, "connector_key": s.connector.key, "stream": s.manifest.name}
                for s in sources
                for c in s.connections
            ],
        )
    filters = access.is_owner or not reference
    connectors: list[dict[str, Any]] = []
    for connector in store.catalog.connectors:
        rows = [stream_metadata(s, access, store, filters) for s in sources if s.connector is connector]
        if not rows:
            continue
        entry: dict[str, Any] = {
            "object": "connector",
            "source": {"kind": "connector", "id": connector.source_id},
            "connector_key": connector.key,
            "connector_id": connector.key,
            "stream_count": len(rows),
        }
        if compact and not full_detail and access.is_owner:
            entry["streams"] = [_compact_stream(row) for row in rows]  # the owner has no grant to lift
        elif compact and not full_detail:
            streams = [_compact_stream(row) for row in rows]
            common = max(
                (s["granted_connections"] for s in streams),
                key=lambda g: sum(g == s["granted_connections"] for s in streams),
            )
            entry["granted_connections"] = common
            for row in streams:
                if row["granted_connections"] == common:
                    del row["granted_connections"]
            entry["streams"] = streams
        else:
            entry["streams"] = rows
        connectors.append(entry)
    bearer: dict[str, Any] = {
        "token_kind": access.principal.kind,
        "scope": "owner" if access.is_owner else "grant",
    }
    if not access.is_owner:
        bearer.update(grant_id=access.principal.grant_id, client_id=access.principal.client_id)
    body: dict[str, Any] = {"object": "schema", "bearer": bearer, "connectors": connectors}
    if compact and not full_detail:
        body["detail"] = "compact"
    if compact or stream or connection_id:
        body["connector_count"] = len(connectors)
        body["stream_count"] = sum(len(c["streams"]) for c in connectors)
    return json_response(finalise(request, body))


async def list_streams(request: web.Request, access: Access, store: Store) -> web.Response:
    connection_id = request.query.get("connection_id")
    if connection_id is not None and not access.sources(None, connection_id):
        raise RsHttpError(
            404, "connection_not_found", f"Unknown connection_id: {connection_id}", param="connection_id"
        )
    rows = []
    for source in access.sources(None, connection_id):
        for connection in source.connections:
            count = store.count(source.manifest.name, [connection])
            row: dict[str, Any] = {
                "object": "stream",
                "name": source.manifest.name,
                "record_count": count,
                "last_updated": FRESHNESS["captured_at"],
                "connection_id": connection,
                "connector_instance_id": connection,
                "freshness": FRESHNESS,
            }
            display = store.catalog.connection(connection)
            if display and display.display_name:
                row["display_name"] = display.display_name
            rows.append(row)
    body = {"object": "list", "has_more": False, "data": rows}
    return json_response(finalise(request, body, is_list=True))


async def list_connectors(request: web.Request, access: Access, store: Store) -> web.Response:
    """``GET /v1/connectors``: readable connectors with per-stream capabilities (not finalised, as in the RS)."""
    data = []
    for connector in store.catalog.connectors:
        sources = [s for s in access.sources() if s.connector is connector]
        if not sources:
            continue
        streams = []
        for source in sources:
            name, selector = source.manifest.name, f"connector_id={connector.key}"
            streams.append(
                {
                    "object": "stream",
                    "name": name,
                    "freshness": FRESHNESS,
                    "last_updated": FRESHNESS["captured_at"],
                    "record_count": sum(store.count(name, [c]) for c in source.connections),
                    "capabilities": {
                        "records": True,
                        "records_url": f"/v1/streams/{name}/records?{selector}",
                        "metadata_url": f"/v1/streams/{name}?{selector}",
                        "stream_metadata": True,
                        "changes_since": True,
                        "aggregate": True,
                        "aggregate_url": f"/v1/streams/{name}/aggregate?{selector}",
                        "exact_filters": bool(source.manifest.exact),
                        "range_filters": bool(source.manifest.ranges),
                        "expand": bool(source.manifest.relations),
                    },
                }
            )
        data.append(
            {
                "object": "connector",
                "source": {"kind": "connector", "id": connector.source_id},
                "connector_key": connector.key,
                "connector_id": connector.key,
                "stream_count": len(streams),
                "streams": streams,
            }
        )
    return json_response({"object": "list", "data": data})


async def get_stream(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    sources = access.stream_sources(request.match_info["stream"], request.query.get("connection_id"))
    body = stream_metadata(sources[0], access, store, access.is_owner or not reference)
    body["instance_ids"] = [c for s in sources for c in s.connections]
    body.pop("granted_connections")
    return json_response(finalise(request, body))
