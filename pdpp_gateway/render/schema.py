"""Text for ``schema``: every granted stream name, sources and next steps.

Contract: the global index names every stream of every connector (grouped by connector,
so it scales) with each connector's connections, flags stream names shared by several
sources, and says how to drill down. It reads the unbounded index the pipeline keeps in
``annotations`` (structured output may be cut to fit; the text still names every
stream). It degrades to fit ``INDEX_TEXT_BUDGET``: first record counts and per-stream
connection details go (at most ``SHORT_CONNECTIONS`` connections per connector), then
connections altogether (names-only lines); only a grant whose names alone exceed the
budget gets a cut list, ending with how to list the rest. With structured output capped
at ``schema_view.INDEX_STRUCTURED_BUDGET`` bytes the whole global result stays under
``GLOBAL_RESULT_BUDGET`` bytes.

A stream view prints, per matching source, its connection, cursor field and every field
with its capability flags (the RS compact ``field_capabilities`` strings), usable
aggregations and expand relations, with a one-line legend. Bounded by ``STREAM_BUDGET``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.render.common import clip
from pdpp_gateway.schema_view import INDEX_ANNOTATION, INDEX_STRUCTURED_BUDGET, field_flags
from pdpp_gateway.tools.args import SchemaArgs

INDEX_TEXT_BUDGET: Final = 14_000
GLOBAL_RESULT_BUDGET: Final = 24_000  # bytes of the whole tools/call result, pinned by a test
SHORT_CONNECTIONS: Final = 3
CUT_RESERVE: Final = 4_000  # text kept for naming the sources a cut index leaves out
STREAM_BUDGET: Final = 6_000
LEGEND_LINE: Final = (
    "legend: t=type, role=semantic role, eq=exact filter, r=range filter ops, lex/sem=lexical/semantic search, "
    "a=aggregations, g=false=not granted, X=unusable:reason=declared but not usable, declared=readable only"
)
assert INDEX_TEXT_BUDGET + INDEX_STRUCTURED_BUDGET < GLOBAL_RESULT_BUDGET - 1_000


def render_schema(args: SchemaArgs, result: ToolResult) -> str:
    document = result.structured.get("data") or {}
    if args.full:
        return _full(document, args.stream)
    if args.stream is not None:
        return _stream(document, args.stream, args.connection_id)
    index = result.annotations.get(INDEX_ANNOTATION)
    return _index(index if isinstance(index, Mapping) else document, document.get("index_bounded"))


def _connections(entries: object, most: int = 8) -> str:
    if not isinstance(entries, list) or not entries:
        return "none"
    shown = [
        f"{e.get('connection_id')}" + (f" ({e['display_name']})" if e.get("display_name") else "")
        for e in entries[:most]
        if isinstance(e, Mapping)
    ]
    return ", ".join(shown) + (f", +{len(entries) - most} more" if len(entries) > most else "")


Connector = Mapping[str, Any]
Tier = Callable[[str, Connector, Sequence[Mapping[str, Any]]], list[str]]


def _tier_full(key: str, connector: Connector, streams: Sequence[Mapping[str, Any]]) -> list[str]:
    names = []
    for stream in streams:
        count = f" ({stream['record_count']})" if isinstance(stream.get("record_count"), int) else ""
        own = (
            f" [connections {_connections(stream['granted_connections'])}]"
            if "granted_connections" in stream
            else ""
        )
        names.append(f"{stream.get('name')}{count}{own}")
    return [
        f"{key}: connections {_connections(connector.get('granted_connections'))}",
        "  streams: " + ", ".join(names),
    ]


def _tier_short(key: str, connector: Connector, streams: Sequence[Mapping[str, Any]]) -> list[str]:
    connections = _connections(connector.get("granted_connections"), SHORT_CONNECTIONS)
    return [
        f"{key}: connections {connections}",
        "  streams: " + ", ".join(str(s.get("name")) for s in streams),
    ]


def _tier_names(key: str, connector: Connector, streams: Sequence[Mapping[str, Any]]) -> list[str]:
    return [f"{key}: " + ", ".join(str(s.get("name")) for s in streams)]


_TIER_NOTES: Final[dict[Tier, str]] = {
    _tier_full: "",
    _tier_short: "Record counts and per-stream connections are left out to fit; schema(stream) shows them.",
    _tier_names: "Lines are connector_key: stream names. Connections and record counts are left out to fit; "
    "schema(stream) shows them.",
}


def _index(document: Mapping[str, Any], bounded: object) -> str:
    connectors = [c for c in document.get("connectors") or () if isinstance(c, Mapping)]
    keyed = [
        (
            str(c.get("connector_key") or c.get("connector_id") or "unknown"),
            c,
            [s for s in c.get("streams") or () if isinstance(s, Mapping)],
        )
        for c in connectors
    ]
    total = sum(len(streams) for _, _, streams in keyed)
    bearer = document.get("bearer") or {}
    token = (
        f" (token: {bearer.get('token_kind')})"
        if isinstance(bearer, Mapping) and bearer.get("token_kind")
        else ""
    )
    head = f"schema: {len(connectors)} connectors, {total} streams{token}."
    sources: dict[str, list[str]] = defaultdict(list)
    for key, _, streams in keyed:
        for stream in streams:
            sources[str(stream.get("name"))].append(key)
    shared = {name: keys for name, keys in sources.items() if len(keys) > 1}
    tail = []
    if isinstance(bounded, Mapping):
        listed = bounded.get("streams_listed")
        tail.append(
            f"(Structured output is bounded to fit the result: {bounded.get('level')}, "
            f"{listed if isinstance(listed, int) else '?'} of {total} stream rows; this text names every stream.)"
        )
    missing = _unanswered(document)
    claim = (
        " Every stream of the sources that answered is listed; call schema(stream) for its fields and "
        f"capabilities. {len(missing)} source(s) of this package did not answer, so their streams are "
        "missing here:"
        if missing
        else " Every granted stream is listed; call schema(stream) for its fields and capabilities."
    )
    for tier, note in _TIER_NOTES.items():
        lines = [head + claim, *missing]
        if note:
            lines.append(note)
        for key, connector, streams in keyed:
            lines.extend(tier(key, connector, streams))
        if shared:
            lines.append(_shared_line(shared, detailed=tier is not _tier_names))
        text = "\n".join([*lines, *tail])
        if len(text) <= INDEX_TEXT_BUDGET:
            return text
    return _cut_index(head, keyed, total)


def _unanswered(document: Mapping[str, Any]) -> list[str]:
    """One line per package member that did not answer: its connection, error and next step."""
    lines = []
    for entry in document.get("unavailable_connections") or ():
        if isinstance(entry, Mapping):
            source = f"{entry.get('connection_id')} ({entry.get('connector_key') or entry.get('grant_id')})"
            lines.append(
                clip(f"  not answering: {source}: {entry.get('error_code')}. {entry.get('next_step')}", 300)
            )
    return lines


def _shared_line(shared: Mapping[str, list[str]], *, detailed: bool) -> str:
    prefix = "shared stream names (pass connection_id to pick a source): "
    if detailed:
        return prefix + "; ".join(f"{name} ({', '.join(keys)})" for name, keys in sorted(shared.items()))
    line = prefix + ", ".join(sorted(shared))
    return clip(line, 1_000)


def _cut_index(head: str, keyed: Sequence[tuple[str, Connector, list[Mapping[str, Any]]]], total: int) -> str:
    """Names-only lines until the budget, then the sources left out, so each can be listed on its own."""
    lines = [
        head + " Too many streams to name in one result; the first connectors' streams are listed below.",
        _TIER_NOTES[_tier_names],
    ]
    used = sum(len(line) + 1 for line in lines) + CUT_RESERVE
    shown_streams = shown = 0
    for key, connector, streams in keyed:
        line = _tier_names(key, connector, streams)[0]
        if used + len(line) + 1 > INDEX_TEXT_BUDGET:
            break
        lines.append(line)
        used += len(line) + 1
        shown_streams += len(streams)
        shown += 1
    rest = [
        f"{key}={entry.get('connection_id')}"
        for key, connector, _ in keyed[shown:]
        for entry in (connector.get("granted_connections") or [{}])[:1]
        if isinstance(entry, Mapping)
    ]
    lines.append(
        f"… {total - shown_streams} more streams of {len(keyed) - shown} more connectors are not listed here. "
        "Call schema(connection_id=<id>) for one source's index; the sources left out "
        "(connector_key=connection_id): " + clip(", ".join(rest), CUT_RESERVE - 400)
    )
    return "\n".join(lines)


def _stream(document: Mapping[str, Any], stream: str, connection_id: str | None) -> str:
    rows = [
        (connector, row)
        for connector in document.get("connectors") or ()
        if isinstance(connector, Mapping)
        for row in connector.get("streams") or ()
        if isinstance(row, Mapping)
    ]
    scope = f", connection_id={connection_id}" if connection_id else ""
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
        capabilities = row.get("field_capabilities") or {}
        fields = (
            {str(name): field_flags(flags) for name, flags in capabilities.items()}
            if isinstance(capabilities, Mapping)
            else {}
        )
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
            r.get("name")
            for r in row.get("expand_capabilities") or ()
            if isinstance(r, Mapping) and r.get("usable", True) is not False
        ]
        lines.append("  expand: " + (", ".join(map(str, relations)) if relations else "none"))
    if len(rows) > 1 and not connection_id:
        lines.append(
            'Several sources share this name: pass connection_id to query_records and aggregate, and to schema(stream, detail: "full").'
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


def _full(document: Mapping[str, Any], stream: str | None) -> str:
    rows = [
        row
        for connector in document.get("connectors") or ()
        if isinstance(connector, Mapping)
        for row in connector.get("streams") or ()
        if isinstance(row, Mapping)
    ]
    lines = [
        f'schema(stream="{stream}", detail="full"): {len(rows)} source(s); the exhaustive '
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
