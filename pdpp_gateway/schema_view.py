"""Views of the RS schema document for the ``schema`` tool.

Contract:

- ``unwrap_schema`` drops the REST envelope (``links``, ``meta``, a ``{data: ...}``
  wrapper): results carry the schema document directly under ``structuredContent.data``.
- ``index_view`` (global ``schema()``) is an index: connectors with their granted
  connections (lifted to the connector as the most common set) and, per stream,
  identity only (name, record count, primary key, cursor field; connections only where
  they differ). No field detail. ``bound_index`` keeps it within
  ``INDEX_STRUCTURED_BUDGET`` bytes for any grant: first every row shrinks to its name,
  then rows are cut, and the document says so in ``index_bounded`` (the text result
  still lists every stream name; see ``render.schema``).
- ``stream_view`` (``schema(stream[, connection_id])``, spec 000: "structuredContent.data
  SHALL preserve the REST compact body verbatim") is the RS compact body as the RS sent
  it (minus ``links``/``meta``). When the RS refused or ignored ``view=compact`` it is
  ``compact_projection`` of the full body: the same shape the RS's compact view has
  (``field_capabilities`` as flag strings, ``expand_capabilities`` as sent, identity
  keys only, the most common ``granted_connections`` lifted to the connector and kept
  on a stream only where it differs, ``detail: "compact"``, counts), so a model sees the
  same document either way. ``LEGEND`` explains the flag grammar; it travels beside
  the document (``structuredContent.field_capability_legend``), never inside it.
- ``stream_connections`` lists the granted connections holding one stream name (the
  tools that read a name across all of them say so when there is more than one).
- ``full_view`` (``detail: "full"``) is the RS body verbatim, minus a duplicated
  top-level stream list when ``connectors`` are present.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

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
# What a compact stream row keeps besides its capabilities (the RS drops schema, views,
# relationships, query, object, freshness and the rest).
_COMPACT_STREAM_KEYS: Final = (
    "name",
    "display_name",
    "connector_key",
    "connector_id",
    "connection_id",
    "record_count",
    "granted",
    "primary_key",
    "cursor_field",
    "source",
)
INDEX_STRUCTURED_BUDGET: Final = 8_000
# ToolResult.annotations key holding the unbounded index for the text renderer.
INDEX_ANNOTATION: Final = "schema_index"
_AGG_ORDER: Final = ("count_distinct", "group_by", "group_by_time", "sum", "min", "max")


def unwrap_schema(body: Mapping[str, Any]) -> JSONObject:
    inner = body.get("data")
    document = inner if isinstance(inner, Mapping) and ("connectors" in inner or "streams" in inner) else body
    return {key: value for key, value in document.items() if key not in {"links", "meta"}}


def index_view(document: Mapping[str, Any], *, connection_id: str | None = None) -> JSONObject:
    """The global index (unbounded; ``bound_index`` bounds it for the wire)."""
    return _index(document, connection_id=connection_id)


def stream_view(document: Mapping[str, Any], *, stream: str, connection_id: str | None = None) -> JSONObject:
    """The RS compact body verbatim, or its projection when the RS sent the full body."""
    if document.get("detail") == "compact":
        return dict(document)
    return compact_projection(document, stream=stream, connection_id=connection_id)


def compact_projection(
    document: Mapping[str, Any], *, stream: str | None = None, connection_id: str | None = None
) -> JSONObject:
    """The RS ``view=compact`` shape, built locally from a full schema body."""
    connectors: list[JSONObject] = []
    for connector in document.get("connectors") or ():
        if not isinstance(connector, Mapping):
            continue
        rows = _scoped_rows(connector, stream, connection_id)
        if not rows:
            continue
        compact = [_compact_row(row, connection_id) for row in rows]
        out: JSONObject = {key: connector[key] for key in _CONNECTOR_KEYS if key in connector}
        out["stream_count"] = len(compact)
        lists = [row["granted_connections"] for row in compact if "granted_connections" in row]
        if lists:
            common = max(lists, key=lambda entries: sum(entries == other for other in lists))
            out["granted_connections"] = common
            for row in compact:
                if row.get("granted_connections") == common:
                    del row["granted_connections"]
        elif isinstance(connector.get("granted_connections"), list):
            out["granted_connections"] = _narrow(_entries(connector["granted_connections"]), connection_id)
        out["streams"] = compact
        connectors.append(out)
    view: JSONObject = {"object": "schema"}
    if isinstance(document.get("bearer"), Mapping):
        view["bearer"] = document["bearer"]
    view.update(
        detail="compact",
        connector_count=len(connectors),
        stream_count=sum(len(c["streams"]) for c in connectors),
        connectors=connectors,
    )
    return view


def bound_index(index: Mapping[str, Any], budget: int = 0) -> JSONObject:
    """``index`` within ``budget`` bytes of compact JSON: names-only rows, then cut rows, said in ``index_bounded``."""
    limit = budget or INDEX_STRUCTURED_BUDGET
    if _size(index) <= limit:
        return dict(index)
    connectors = [c for c in index.get("connectors") or () if isinstance(c, Mapping)]
    total = sum(len(c.get("streams") or ()) for c in connectors)
    named = [
        {
            **{key: value for key, value in connector.items() if key != "streams"},
            "streams": [
                {"name": row.get("name")}
                for row in connector.get("streams") or ()
                if isinstance(row, Mapping)
            ],
        }
        for connector in connectors
    ]
    note: JSONObject = {
        "level": "names",
        "budget_bytes": limit,
        "stream_count": total,
        "streams_listed": total,
        "connectors_listed": len(named),
        "message": "Stream rows are names only to fit the result budget; schema(stream) gives a stream's "
        "record count, keys and connections.",
    }
    bounded = {
        **{k: v for k, v in index.items() if k != "connectors"},
        "connectors": named,
        "index_bounded": note,
    }
    if _size(bounded) <= limit:
        return bounded
    kept: list[JSONObject] = []
    used = _size({**bounded, "connectors": []}) + 200  # room for the note's counters
    listed = 0
    for connector in named:
        shell = {**connector, "streams": []}
        cost = _size(shell) + 1
        if used + cost > limit:
            break
        rows: list[JSONObject] = []
        used += cost
        for row in connector["streams"]:
            row_cost = _size(row) + 1
            if used + row_cost > limit:
                break
            rows.append(row)
            used += row_cost
        shell["streams"] = rows
        if len(rows) < len(connector["streams"]):
            shell["streams_truncated"] = True
        kept.append(shell)
        listed += len(rows)
        if len(rows) < len(connector["streams"]):
            break
    note.update(
        level="capped",
        streams_listed=listed,
        connectors_listed=len(kept),
        message=f"Structured output lists {listed} of {total} streams to fit the result budget; the text "
        "result names every stream. Call schema(stream) for one stream, or schema(connection_id) for one "
        "source's index.",
    )
    bounded["connectors"] = kept
    return bounded


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


def stream_connections(document: Mapping[str, Any], stream: str) -> list[JSONObject]:
    """Every granted connection holding ``stream``, across connectors, in schema order:
    ``{connection_id, connector_key, display_name?}`` (more than one: reads of the name merge them)."""
    out: dict[str, JSONObject] = {}
    for connector in document.get("connectors") or ():
        if not isinstance(connector, Mapping):
            continue
        key = connector.get("connector_key") or connector.get("connector_id")
        for row in _scoped_rows(connector, stream, None):
            for entry in _connections(row, connector):
                out.setdefault(
                    str(entry["connection_id"]), {**entry, **({"connector_key": key} if key else {})}
                )
    return list(out.values())


def _scoped_rows(
    connector: Mapping[str, Any], stream: str | None, connection_id: str | None
) -> list[Mapping[str, Any]]:
    """A connector's stream rows named ``stream`` and readable through ``connection_id`` (None: any)."""
    return [
        row
        for row in connector.get("streams") or ()
        if isinstance(row, Mapping)
        and (stream is None or row.get("name") == stream)
        and (connection_id is None or connection_id in _connection_ids(row, connector))
    ]


def _index(document: Mapping[str, Any], *, connection_id: str | None) -> JSONObject:
    connectors: list[JSONObject] = []
    for connector in document.get("connectors") or ():
        if not isinstance(connector, Mapping):
            continue
        rows = _scoped_rows(connector, None, connection_id)
        if not rows:
            continue
        connections = [_narrow(_connections(row, connector), connection_id) for row in rows]
        shared = _most_common(connections)
        out: JSONObject = {key: connector[key] for key in _CONNECTOR_KEYS if key in connector}
        out["granted_connections"] = shared
        out["stream_count"] = len(rows)
        out["streams"] = [_stream_row(row, own, shared) for row, own in zip(rows, connections, strict=True)]
        connectors.append(out)
    view: JSONObject = {
        "object": "schema",
        "detail": "index",
        "connector_count": len(connectors),
        "stream_count": sum(len(c["streams"]) for c in connectors),
        "connectors": connectors,
    }
    if isinstance(document.get("bearer"), Mapping):
        view["bearer"] = document["bearer"]
    return view


def _stream_row(row: Mapping[str, Any], own: list[JSONObject], shared: list[JSONObject]) -> JSONObject:
    out: JSONObject = {key: row[key] for key in _STREAM_KEYS if row.get(key) not in (None, "", [])}
    if own != shared:
        out["granted_connections"] = own
    return out


def _compact_row(row: Mapping[str, Any], connection_id: str | None) -> JSONObject:
    out: JSONObject = {key: row[key] for key in _COMPACT_STREAM_KEYS if row.get(key) is not None}
    if isinstance(row.get("granted_connections"), list):
        out["granted_connections"] = _narrow(_entries(row["granted_connections"]), connection_id)
    capabilities = row.get("field_capabilities") or {}
    if isinstance(capabilities, Mapping):
        out["field_capabilities"] = {str(name): field_flags(cap) for name, cap in capabilities.items()}
    elif isinstance(capabilities, list):
        out["field_capabilities"] = {
            str(c.get("name")): field_flags(c.get("flags", c)) for c in capabilities if isinstance(c, Mapping)
        }
    expand = row.get("expand_capabilities")
    out["expand_capabilities"] = list(expand) if isinstance(expand, list) else []
    return out


def _entries(entries: list[Any]) -> list[JSONObject]:
    return [dict(entry) for entry in entries if isinstance(entry, Mapping)]


def _size(value: object) -> int:
    return len(orjson.dumps(value))


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
    return (
        entries if connection_id is None else [e for e in entries if e.get("connection_id") == connection_id]
    )


def _most_common(sets: Iterable[list[JSONObject]]) -> list[JSONObject]:
    candidates = [entries for entries in sets if entries]
    if not candidates:
        return []
    keyed = Counter(_key(entries) for entries in candidates)
    best = keyed.most_common(1)[0][0]
    return next(entries for entries in candidates if _key(entries) == best)


def _key(entries: list[JSONObject]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(e.get("connection_id")), str(e.get("display_name", ""))) for e in entries))
