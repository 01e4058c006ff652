"""Text for ``query_records``: paging handles first, then every record of the page.

Contract: the text always carries, verbatim, ``next_cursor`` (with the exact next-page
call), ``next_changes_since`` and count metadata when the RS returned them, and every
warning code (``render.common.warning_lines``: the first few in full, the rest counted by
their distinct codes, so an RS's warnings, window or source names cannot crowd the records
out of the budget); a page that merged several connections (``merged_connections``, or the
RS's fan-in shape: more records and no cursor) says so in the one merged-sources line
every tool uses (``render.common.merged_note``); then, within ``BUDGET`` characters, every record of the page: the first
ones (as many as ``BUDGET`` allows) with their handle and compact JSON of their data (long
strings shortened with ``…[+N chars]``, blobs summarised with their readable
``pdpp://blob/`` URI) and the handles of any expanded relations, the rest as one-line
``[n] handle "title" time`` rows (the record's title-like field and authored time, never an
ingest time; see ``documents.record_title``). If even those rows
cannot all fit, the text says exactly which records are not listed and how to list
them (a smaller ``limit``, then ``next_cursor``). A handle that cannot embed its
connection is followed by ``connection_id=...``, which every continuation carries too.
One line says how to read a shortened field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import orjson
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.documents import authored_time, record_title
from pdpp_gateway.ids import handle_arguments
from pdpp_gateway.render.common import (
    MERGED_CONNECTIONS,
    again,
    as_mapping,
    call_text,
    clip,
    dumps,
    fit_rows,
    merged_note,
    preview_value,
    warning_lines,
)
from pdpp_gateway.tools.args import RecordsArgs

BUDGET: Final = 4_000
MAX_RECORDS: Final = 100  # detailed rows are bounded by BUDGET, not by count
MAX_STRING: Final = 160
MAX_LINE: Final = 700
MAX_LABEL: Final = 60
_EXPANDED_SHOWN: Final = 3


def render_records(args: RecordsArgs, result: ToolResult) -> str:
    page = as_mapping(result.structured.get("data"))
    records = [r for r in page.get("data") or () if type(r) is dict or isinstance(r, Mapping)]
    stream = args.stream
    head = f"query_records stream={stream}: {len(records)} record(s)"
    has_more, next_cursor, next_changes = (
        page.get("has_more"),
        page.get("next_cursor"),
        page.get("next_changes_since"),
    )
    head += ", has_more=true" if has_more else ", has_more=false"
    lines = [head + "."]
    if next_cursor:
        follow = again(args.arguments, without=("changes_since",), cursor=next_cursor)
        lines.append(
            f"next_cursor={next_cursor} → next page (same order/sort): {call_text('query_records', follow)}"
        )
    if next_changes:
        lines.append(
            f"next_changes_since={next_changes} (pass as changes_since next time to get only changes)"
        )
    meta = as_mapping(page.get("meta"))
    count = meta.get("count")
    if count is not None and isinstance(count, Mapping) and count.get("kind") not in (None, "none"):
        lines.append(f"count={count.get('kind')}:{count.get('value')}")
    window = meta.get("window")
    if window is not None and isinstance(window, Mapping):
        lines.append(clip(f"window={dumps(window)}", 300))
    lines.extend(warning_lines(meta.get("warnings"), 300))
    fan_in = bool(has_more and not next_cursor and not next_changes)
    connections = result.structured.get(MERGED_CONNECTIONS)
    if fan_in or isinstance(connections, list):
        effect = "this page mixes their records"
        if fan_in:
            effect += ", and more exist, but a merged page has no next_cursor: page per connection_id"
        merged = connections if isinstance(connections, list) else []
        lines.append(merged_note("query_records", stream, args.arguments, merged, effect))
    shortened: list[tuple[int, dict[str, str], str]] = []
    layouts = [_record_block(index, record, stream, shortened) for index, record in enumerate(records, 1)]
    detailed = [layout.block for layout in layouts]
    notes_used = len(_id_only_note(args, len(records), len(records))) + len(_long_field_note(shortened)) + 2
    used = sum(map(len, lines)) + len(lines) + notes_used
    room = BUDGET - used
    if len(detailed) <= MAX_RECORDS and sum(map(len, detailed)) + len(detailed) <= room:
        # Every record fits in full (the usual page): all are shown so, and no one-line row is
        # built (a row holds the block's title and time, shortened, so it is not the longer).
        rows, listed, shown = detailed, len(detailed), len(detailed)
    else:
        compact = [_record_row(layout) for layout in layouts]
        # The note about unlisted records is only needed (and only reserved) when the rows overflow.
        overflow = sum(map(len, compact)) + len(compact) > room
        rows, listed, shown = fit_rows(
            room,
            detailed,
            compact,
            max_detailed=MAX_RECORDS,
            reserve=len(_not_listed(args, len(records), len(records), fan_in)) + 1 if overflow else 0,
        )
    lines.extend(rows)
    if shown < listed:
        lines.append(_id_only_note(args, shown, listed))
    if listed < len(records):
        lines.append(_not_listed(args, listed, len(records), fan_in))
    shown_long = [item for item in shortened if item[0] <= shown]
    if shown_long:
        lines.append(_long_field_note(shown_long))
    return "\n".join(lines)


def _id_only_note(args: RecordsArgs, shown: int, listed: int) -> str:
    how = (
        "repeat with a smaller limit" if args.fields else "narrow with fields, or repeat with a smaller limit"
    )
    return (
        f"(records {shown + 1}–{listed} are shown in one line (handle, title, time) for the text budget: "
        f"fetch one, or {how})"
    )


def _not_listed(args: RecordsArgs, listed: int, total: int, fan_in: bool) -> str:
    where = f"Records {listed + 1}–{total} ({total - listed}) are not listed in this text (their handles are in structured output data.data)"
    if fan_in:
        return f"{where}; to list them, call again per connection_id with limit={max(1, listed)}."
    if args.cursor or args.changes_since:
        return f"{where}; to list them, repeat this call with limit={max(1, listed)}, then follow its next_cursor."
    smaller = again(args.arguments, limit=max(1, listed))
    return f"{where}; to list them, follow next_cursor from {call_text('query_records', smaller)}"


def _long_field_note(shortened: list[tuple[int, dict[str, str], str]]) -> str:
    if not shortened:
        return ""
    _, naming, field = shortened[0]
    return "Long fields were shortened; read one in windows with " + call_text(
        "read_record_field", {**naming, "field": field}
    )


def _naming(record: Mapping[str, Any], stream: Any) -> dict[str, str]:
    connection = record.get("connection_id")
    return handle_arguments(
        str(record.get("stream") or stream),
        str(record.get("id")),
        connection if isinstance(connection, str) and connection else None,
    )


def _label(naming: Mapping[str, str]) -> str:
    return naming["id"] + (f" connection_id={naming['connection_id']}" if "connection_id" in naming else "")


def _expanded_line(record: Mapping[str, Any]) -> str:
    """The handles of a record's expanded relations: one record (has_one) or a bounded list."""
    parts = []
    for relation, value in as_mapping(record.get("expanded")).items():
        if value is None:
            parts.append(f"{relation}: none")
        elif type(value) is dict or isinstance(value, Mapping):
            related = value.get("data")
            if not isinstance(related, list):  # has_one: the record itself
                parts.append(f"{relation}: {_label(_naming(value, value.get('stream') or relation))}")
                continue
            children = [c for c in related if type(c) is dict or isinstance(c, Mapping)]
            handles = [_label(_naming(c, c.get("stream") or relation)) for c in children[:_EXPANDED_SHOWN]]
            more = len(children) - len(handles)
            listed = ", ".join(handles) + (f", +{more} more" if more else "")
            tail = ", has_more=true" if value.get("has_more") else ""
            parts.append(f"{relation}: {len(children)} record(s){tail}" + (f": {listed}" if listed else ""))
    return ("\n    expanded " + "; ".join(parts)) if parts else ""


class _Layout(NamedTuple):
    """A record's detailed block, and what its one-line row is made of (built only when needed)."""

    block: str
    label: str  # the handle part both start with; the whole row of a deleted record
    data: Mapping[str, Any] | None  # the record's data, for its title and time; None: deleted


def _record_block(
    index: int, record: Mapping[str, Any], stream: str, shortened: list[tuple[int, dict[str, str], str]]
) -> _Layout:
    """A record's detailed block, from one naming and one read of its data: the handle and
    compact JSON of the data (long strings shortened: the top-level ones are added to
    ``shortened``) plus any expanded relations."""
    if record.get("deleted"):
        gone = f"[{index}] {record.get('id')} deleted_at={record.get('deleted_at')}"
        return _Layout(gone, gone, None)
    connection = record.get("connection_id")
    if not (isinstance(connection, str) and connection):
        connection = None
    naming = handle_arguments(str(record.get("stream") or stream), str(record.get("id")), connection)
    label = f"[{index}] {naming['id']}"
    if len(naming) > 1:
        label += f" connection_id={naming['connection_id']}"
    raw = record.get("data")
    long_fields: list[tuple[str, int]] = []
    preview = preview_value(raw or {}, MAX_STRING, long_fields, connection_id=connection)
    for path, _ in long_fields:
        if "." not in path:
            shortened.append((index, naming, path))
    block = f"{label} {orjson.dumps(preview).decode()}"
    if len(block) > MAX_LINE:
        block = clip(block, MAX_LINE)
    if record.get("expanded"):
        block += _expanded_line(record)
    return _Layout(block, label, raw if type(raw) is dict else as_mapping(raw))


def _record_row(layout: _Layout) -> str:
    """A record's one-line row: its handle, title and authored time."""
    data = layout.data
    if data is None:
        return layout.label
    title = record_title(data)
    row = f"{layout.label} {orjson.dumps(clip(title, MAX_LABEL)).decode()}" if title else layout.label
    moment = authored_time(data)
    if moment:
        row += f" {moment if len(moment) <= 30 else clip(moment, 30)}"
    return row
