"""Text for ``read_record_field``: where the window sits, how to move, then the text.

Contract: a header with the record handle, field, served range ``start–end of total``,
completion and match offsets; when incomplete, the exact next/previous
``read_record_field`` calls (JSON arguments, copyable as-is); then the window text
verbatim (bounded by ``limit_chars``, at most 16,384).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from middleware import ToolCall, ToolResult
from pdpp_gateway.render.common import call_text


def render_field_window(call: ToolCall, result: ToolResult) -> str:
    record = result.structured.get("record") or {}
    field = (result.structured.get("field") or {}).get("path")
    window: Mapping[str, Any] = result.structured.get("window") or {}
    start, end, total = window.get("start_chars"), window.get("end_chars"), window.get("total_chars")
    complete = window.get("complete") is True
    head = f"read_record_field id={record.get('id')} field={field}: chars {start}–{end} of {total}, complete={'true' if complete else 'false'}"
    if window.get("match_start_chars") is not None:
        head += f", match at {window['match_start_chars']}–{window.get('match_end_chars')}"
    lines = [head + "."]
    limit = window.get("limit_chars")
    for label, key in (("next", "next_offset_chars"), ("previous", "previous_offset_chars")):
        offset = window.get(key)
        if isinstance(offset, int):
            arguments: dict[str, Any] = {"id": record.get("id"), "field": field, "offset_chars": offset}
            if isinstance(limit, int):
                arguments["limit_chars"] = limit
            lines.append(f"{label}: {call_text('read_record_field', arguments)}")
    for warning in result.structured.get("warnings") or ():
        if isinstance(warning, Mapping):
            lines.append(f"warning {warning.get('code')}: {warning.get('message', '')}")
    lines.append("---")
    lines.append(str(window.get("text", "")))
    return "\n".join(lines)
