"""Text for ``schema``: every granted stream name, sources and next steps.

Contract: the global index names every stream of every connector (grouped by connector,
so it scales) with each connector's connections, flags stream names shared by several
sources, and says how to drill down. A stream view prints, per matching source, its
connection, cursor field and every field with its capability flags, with a one-line
legend. Bounded by ``INDEX_BUDGET`` / ``STREAM_BUDGET`` characters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Final

from middleware import ToolCall, ToolResult
from pdpp_gateway.render.common import clip

INDEX_BUDGET: Final = 8_000
STREAM_BUDGET: Final = 6_000
LEGEND_LINE: Final = (
    "legend: t=type, role=semantic role, eq=exact filter, r=range filter ops, lex/sem=lexical/semantic search, "
    "a=aggregations, g=false=not granted, X=unusable:reason=declared but not usable, declared=readable only"
)


def render_schema(call: ToolCall, result: ToolResult) -> str:
    document = result.structured.get("data") or {}
    if call.arguments.get("detail") == "full":
        return _full(document, call.arguments)
    if "stream" in call.arguments:
        return _stream(document, call.arguments)
    return _index(document)


def _connections(entries: object) -> str:
    if not isinstance(entries, list) or not entries:
        return "none"
    shown = [
        f"{e.get('connection_id')}" + (f" ({e['display_name']})" if e.get("display_name") else "")
        for e in entries[:8]
        if isinstance(e, Mapping)
    ]
    return ", ".join(shown) + (f", +{len(entries) - 8} more" if len(entries) > 8 else "")


def _index(document: Mapping[str, Any]) -> str:
    connectors = [c for c in document.get("connectors") or () if isinstance(c, Mapping)]
    bearer = document.get("bearer") or {}
    lines = [
        f"schema: {len(connectors)} connectors, {document.get('stream_count', 0)} streams"
        + (
            f" (token: {bearer.get('token_kind')})"
            if isinstance(bearer, Mapping) and bearer.get("token_kind")
            else ""
        )
        + ". Every granted stream is listed; call schema(stream) for its fields and capabilities."
    ]
    sources: dict[str, list[str]] = defaultdict(list)
    for connector in connectors:
        key = str(connector.get("connector_key") or connector.get("connector_id") or "unknown")
        lines.append(f"{key}: connections {_connections(connector.get('granted_connections'))}")
        names = []
        for stream in connector.get("streams") or ():
            name = str(stream.get("name"))
            sources[name].append(key)
            count = f" ({stream['record_count']})" if isinstance(stream.get("record_count"), int) else ""
            own = (
                f" [connections {_connections(stream['granted_connections'])}]"
                if "granted_connections" in stream
                else ""
            )
            names.append(f"{name}{count}{own}")
        lines.append("  streams: " + ", ".join(names))
    shared = {name: keys for name, keys in sources.items() if len(keys) > 1}
    if shared:
        lines.append(
            "shared stream names (pass connection_id to pick a source): "
            + "; ".join(f"{name} ({', '.join(keys)})" for name, keys in sorted(shared.items()))
        )
    return _bounded(lines, INDEX_BUDGET, "call schema(stream) for one stream")


def _stream(document: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    stream = arguments["stream"]
    rows = [
        (connector, row)
        for connector in document.get("connectors") or ()
        if isinstance(connector, Mapping)
        for row in connector.get("streams") or ()
        if isinstance(row, Mapping)
    ]
    scope = f", connection_id={arguments['connection_id']}" if arguments.get("connection_id") else ""
    if not rows:
        return f'schema(stream="{stream}"{scope}): no granted source has this stream. Call schema() for the index.'
    lines = [f'schema(stream="{stream}"{scope}): {len(rows)} source(s).', LEGEND_LINE]
    for number, (connector, row) in enumerate(rows, 1):
        key = connector.get("connector_key") or connector.get("connector_id")
        connections = row.get("granted_connections", connector.get("granted_connections"))
        ident = [f"connector_key={key}", f"connections {_connections(connections)}"]
        for field in ("cursor_field", "primary_key", "record_count"):
            if row.get(field) not in (None, [], ""):
                ident.append(
                    f"{field}={row[field] if not isinstance(row[field], list) else ','.join(map(str, row[field]))}"
                )
        lines.append(f"[{number}] " + " ".join(ident))
        fields = row.get("fields") or {}
        lines.append(
            "  fields: " + ("; ".join(f"{name}[{flags}]" for name, flags in fields.items()) or "none")
        )
        aggregations = _aggregations(fields)
        if aggregations:
            lines.append(
                "  aggregate: "
                + "; ".join(f"{kind}={'|'.join(names)}" for kind, names in aggregations.items())
            )
        relations = [
            r.get("name") for r in row.get("expand") or () if isinstance(r, Mapping) and r.get("usable", True)
        ]
        lines.append("  expand: " + (", ".join(map(str, relations)) if relations else "none"))
    if len(rows) > 1 and not arguments.get("connection_id"):
        lines.append(
            'Several sources share this name: pass connection_id to query_records, aggregate or detail: "full".'
        )
    return _bounded(lines, STREAM_BUDGET, "narrow with connection_id")


def _aggregations(fields: Mapping[str, Any]) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = defaultdict(list)
    for name, flags in fields.items():
        for part in str(flags).split(","):
            if part.startswith("a="):
                for kind in part[2:].split("|"):
                    kinds[kind].append(str(name))
    return dict(kinds)


def _full(document: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    rows = [
        row
        for connector in document.get("connectors") or ()
        if isinstance(connector, Mapping)
        for row in connector.get("streams") or ()
        if isinstance(row, Mapping)
    ]
    lines = [
        f'schema(stream="{arguments.get("stream")}", detail="full"): {len(rows)} source(s); the exhaustive '
        "field JSON Schema is in the structured output (data.connectors[].streams[].schema)."
    ]
    for row in rows:
        properties = (row.get("schema") or {}).get("properties") or {}
        lines.append(f"{row.get('name')}: {len(properties)} fields: " + ", ".join(map(str, properties)))
    return _bounded(lines, STREAM_BUDGET, "see structured output")


def _bounded(lines: Sequence[str], budget: int, hint: str) -> str:
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget:
            out.append(clip(f"… output bounded at {budget} chars; {hint}.", 200))
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)
