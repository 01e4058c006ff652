"""Views of the RS schema document for the ``schema`` tool.

Contract:

- ``unwrap_schema`` drops the REST envelope (``links``, ``meta``, a ``{data: ...}``
  wrapper): results carry the schema document directly under ``structuredContent.data``.
- ``index_view`` (global ``schema()``) is an index that fits as a whole result for
  broad grants: connectors with their granted connections (lifted to the connector as
  the most common set) and, per stream, identity only (name, record count, primary key,
  cursor field; connections only where they differ). No field detail.
- ``stream_view`` (``schema(stream[, connection_id])``) keeps the same identity plus
  each field as a compact flag string and the usable expand relations, and carries
  ``field_capability_legend`` explaining every token of the flag grammar.
- ``full_view`` (``detail: "full"``) is the RS body verbatim, minus a duplicated
  top-level stream list when ``connectors`` are present.
- Both views accept the RS compact body (flags already strings) and a full body
  (structured capabilities, projected here to the same grammar), and apply
  ``stream``/``connection_id`` scoping themselves, so the fallback for an RS that
  ignores ``view=compact`` keeps the same semantics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

JSONObject = dict[str, Any]

LEGEND: Final[JSONObject] = {
    "t=<type>": "declared type",
    "role=<role>": "semantic role of the field",
    "g=false": "not granted: not readable",
    "eq": "exact filter: filter {field: value}",
    "r=<ops>": "range filter with these operators: filter {field: {op: value}}",
    "lex": "lexical search field",
    "sem": "semantic search field",
    "a=<kinds>": "aggregate with these kinds (count_distinct, group_by, group_by_time, sum, min, max)",
    "<flag>=unusable:<reason>": "declared but not usable under this grant",
    "declared": "readable, no filter/search/aggregate capability",
}
_CONNECTOR_KEYS: Final = ("object", "connector_key", "connector_id", "source", "display_name")
_STREAM_KEYS: Final = ("name", "display_name", "connection_id", "record_count", "primary_key", "cursor_field")
_EXPAND_KEYS: Final = (
    "name",
    "target_stream",
    "cardinality",
    "usable",
    "default_limit",
    "max_limit",
    "reason",
)
_AGG_ORDER: Final = ("count_distinct", "group_by", "group_by_time", "sum", "min", "max")


def unwrap_schema(body: Mapping[str, Any]) -> JSONObject:
    inner = body.get("data")
    document = inner if isinstance(inner, Mapping) and ("connectors" in inner or "streams" in inner) else body
    return {key: value for key, value in document.items() if key not in {"links", "meta"}}


def index_view(document: Mapping[str, Any], *, connection_id: str | None = None) -> JSONObject:
    return _view(document, stream=None, connection_id=connection_id, detail=False)


def stream_view(document: Mapping[str, Any], *, stream: str, connection_id: str | None = None) -> JSONObject:
    view = _view(document, stream=stream, connection_id=connection_id, detail=True)
    view["field_capability_legend"] = LEGEND
    return view


def full_view(document: Mapping[str, Any]) -> JSONObject:
    if isinstance(document.get("connectors"), list):
        return {key: value for key, value in document.items() if key != "streams"}
    return dict(document)


def field_flags(capability: object) -> str:
    """One field's capabilities in the compact flag grammar (RS strings pass through)."""
    if isinstance(capability, str) and capability:
        return capability
    if not isinstance(capability, Mapping):
        return "declared"
    parts: list[str] = []
    declared_type = capability.get("type")
    schema = capability.get("schema")
    if declared_type is None and isinstance(schema, Mapping):
        declared_type = schema.get("type")
    if isinstance(declared_type, list):
        declared_type = "|".join(str(t) for t in declared_type)
    if declared_type:
        parts.append(f"t={declared_type}")
    if capability.get("role"):
        parts.append(f"role={capability['role']}")
    if capability.get("granted") is False:
        parts.append("g=false")
    for key, flag in (
        ("exact_filter", "eq"),
        ("range_filter", "r"),
        ("lexical_search", "lex"),
        ("semantic_search", "sem"),
    ):
        sub = capability.get(key)
        if not isinstance(sub, Mapping):
            continue
        if sub.get("usable"):
            operators = sub.get("operators")
            parts.append(f"r={'|'.join(operators)}" if flag == "r" and operators else flag)
        elif sub.get("declared"):
            parts.append(f"{flag}=unusable" + (f":{sub['reason']}" if sub.get("reason") else ""))
    aggregation = capability.get("aggregation")
    if isinstance(aggregation, Mapping):
        usable = [
            kind
            for kind in _AGG_ORDER
            if isinstance(aggregation.get(kind), Mapping) and aggregation[kind].get("usable")
        ]
        if usable:
            parts.append(f"a={'|'.join(usable)}")
    return ",".join(parts) or "declared"


def _view(
    document: Mapping[str, Any], *, stream: str | None, connection_id: str | None, detail: bool
) -> JSONObject:
    connectors: list[JSONObject] = []
    for connector in document.get("connectors") or ():
        if not isinstance(connector, Mapping):
            continue
        rows = [
            row
            for row in connector.get("streams") or ()
            if isinstance(row, Mapping)
            and (stream is None or row.get("name") == stream)
            and (connection_id is None or connection_id in _connection_ids(row, connector))
        ]
        if not rows:
            continue
        connections = [_narrow(_connections(row, connector), connection_id) for row in rows]
        shared = _most_common(connections)
        out: JSONObject = {key: connector[key] for key in _CONNECTOR_KEYS if key in connector}
        out["granted_connections"] = shared
        out["stream_count"] = len(rows)
        out["streams"] = [
            _stream_row(row, own, shared, detail) for row, own in zip(rows, connections, strict=True)
        ]
        connectors.append(out)
    view: JSONObject = {
        "object": "schema",
        "detail": "compact" if detail else "index",
        "connector_count": len(connectors),
        "stream_count": sum(len(c["streams"]) for c in connectors),
        "connectors": connectors,
    }
    if isinstance(document.get("bearer"), Mapping):
        view["bearer"] = document["bearer"]
    if stream is not None:
        view["scope"] = {"stream": stream, **({"connection_id": connection_id} if connection_id else {})}
    return view


def _stream_row(
    row: Mapping[str, Any], own: list[JSONObject], shared: list[JSONObject], detail: bool
) -> JSONObject:
    out: JSONObject = {key: row[key] for key in _STREAM_KEYS if row.get(key) not in (None, "", [])}
    if own != shared:
        out["granted_connections"] = own
    if detail:
        capabilities = row.get("field_capabilities") or {}
        if isinstance(capabilities, Mapping):
            out["fields"] = {str(name): field_flags(cap) for name, cap in capabilities.items()}
        elif isinstance(capabilities, list):
            out["fields"] = {
                str(c.get("name")): field_flags(c.get("flags", c))
                for c in capabilities
                if isinstance(c, Mapping)
            }
        relations = [
            {key: rel[key] for key in _EXPAND_KEYS if key in rel}
            for rel in row.get("expand_capabilities") or ()
            if isinstance(rel, Mapping)
        ]
        if relations:
            out["expand"] = relations
    return out


def _connections(row: Mapping[str, Any], connector: Mapping[str, Any]) -> list[JSONObject]:
    entries = row.get("granted_connections")
    if not isinstance(entries, list):
        entries = connector.get("granted_connections")
    if not isinstance(entries, list):
        own = row.get("connection_id")
        entries = [{"connection_id": own}] if own else []
    return [
        {key: entry[key] for key in ("connection_id", "display_name") if entry.get(key)}
        for entry in entries
        if isinstance(entry, Mapping) and entry.get("connection_id")
    ]


def _connection_ids(row: Mapping[str, Any], connector: Mapping[str, Any]) -> set[str]:
    return {str(entry["connection_id"]) for entry in _connections(row, connector)}


def _narrow(entries: list[JSONObject], connection_id: str | None) -> list[JSONObject]:
    return entries if connection_id is None else [e for e in entries if e["connection_id"] == connection_id]


def _most_common(sets: Iterable[list[JSONObject]]) -> list[JSONObject]:
    candidates = [entries for entries in sets if entries]
    if not candidates:
        return []
    keyed = Counter(_key(entries) for entries in candidates)
    best = keyed.most_common(1)[0][0]
    return next(entries for entries in candidates if _key(entries) == best)


def _key(entries: list[JSONObject]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(e.get("connection_id")), str(e.get("display_name", ""))) for e in entries))
