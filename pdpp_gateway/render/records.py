"""Text for ``query_records``: paging handles first, then a bounded record preview.

Contract: the text always carries, verbatim, ``next_cursor``, ``next_changes_since``
and count metadata when the RS returned them, and every warning code; then up to
``MAX_RECORDS`` records, each with its handle and compact JSON of its data (long
strings shortened with ``…[+N chars]``, blobs summarised), and one line saying how to
read a shortened field. Bounded by ``BUDGET`` characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from middleware import ToolCall, ToolResult
from pdpp_gateway.ids import format_handle
from pdpp_gateway.render.common import as_mapping, call_text, clip, dumps, preview_value

BUDGET: Final = 2_800
MAX_RECORDS: Final = 5
MAX_STRING: Final = 160


def render_records(call: ToolCall, result: ToolResult) -> str:
    page = as_mapping(result.structured.get("data"))
    records = [r for r in page.get("data") or () if isinstance(r, Mapping)]
    stream = call.arguments.get("stream")
    head = f"query_records stream={stream}: {len(records)} record(s)"
    head += ", has_more=true" if page.get("has_more") else ", has_more=false"
    lines = [head + "."]
    if page.get("next_cursor"):
        lines.append(
            f"next_cursor={page['next_cursor']} (pass as cursor, with the same order/sort, for the next page)"
        )
    if page.get("next_changes_since"):
        lines.append(
            f"next_changes_since={page['next_changes_since']} (pass as changes_since next time to get only changes)"
        )
    meta = as_mapping(page.get("meta"))
    count = meta.get("count")
    if isinstance(count, Mapping) and count.get("kind") not in (None, "none"):
        lines.append(f"count={count.get('kind')}:{count.get('value')}")
    if isinstance(meta.get("window"), Mapping):
        lines.append(f"window={dumps(meta['window'])}")
    for warning in meta.get("warnings") or ():
        if isinstance(warning, Mapping):
            lines.append(clip(f"warning {warning.get('code')}: {warning.get('message', '')}", 300))
    if page.get("has_more") and not page.get("next_cursor") and not page.get("next_changes_since"):
        lines.append(
            "More records exist but this page has no cursor (several sources): page per connection_id."
        )
    used = sum(len(line) + 1 for line in lines)
    shortened: list[tuple[str, str]] = []
    shown = 0
    for index, record in enumerate(records[:MAX_RECORDS], 1):
        line = _record_line(index, record, stream, shortened)
        room = BUDGET - used - 200
        if room < 80:
            break
        lines.append(clip(line, room))
        used += len(lines[-1]) + 1
        shown += 1
    if len(records) > shown:
        lines.append(
            f"({len(records) - shown} more record(s) on this page in structured output data.data; narrow with fields)"
        )
    if shortened:
        handle, field = shortened[0]
        lines.append(
            "Long fields were shortened; read one in windows with "
            + call_text("read_record_field", {"id": handle, "field": field})
        )
    return "\n".join(lines)


def _record_line(index: int, record: Mapping[str, Any], stream: Any, shortened: list[tuple[str, str]]) -> str:
    if record.get("deleted"):
        return f"[{index}] {record.get('id')} deleted_at={record.get('deleted_at')}"
    record_stream = str(record.get("stream") or stream)
    handle = format_handle(record_stream, str(record.get("id")), record.get("connection_id"))
    long_fields: list[tuple[str, int]] = []
    data = preview_value(record.get("data") or {}, MAX_STRING, long_fields)
    for path, _ in long_fields:
        if "." not in path:
            shortened.append((handle, path))
    return f"[{index}] {handle} {dumps(data)}"
