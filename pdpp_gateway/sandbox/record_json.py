"""A stored record as the RS writes it, and the relations ``expand`` embeds in it.

Contract:
- ``record_json``: ``{object: "record", id, stream, data, emitted_at, connection_id,
  connector_instance_id, display_name?}``, ``data`` projected to the grant (and to
  ``fields`` when given); a ``blob_ref`` value gains its ``fetch_url``.
- ``requested_expansions``: the ``expand`` relations and their limits; a relation the
  stream does not declare, or an ``expand_limit`` without its ``expand``, on a has_one
  relation or outside ``1..max_limit``, is 400 ``invalid_expand``; a target stream the
  grant cannot read is 403 ``insufficient_scope``.
- ``expanded``: the ``expanded`` member: a has_one relation is one record (or null), a
  has_many one a bounded list ``{object: "list", has_more, data}``, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError
from pdpp_gateway.sandbox.params import bracketed, list_param
from pdpp_gateway.sandbox.store import Condition, Store, StoredRecord


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


def requested_expansions(request: web.Request, source: Source, access: Access) -> dict[str, int]:
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


def expanded(
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
