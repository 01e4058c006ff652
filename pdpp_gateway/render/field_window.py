"""Text for ``read_record_field``: where the window sits, how to move, then the text.

Contract: a header with the record handle, field, served range ``start–end of total``,
``complete`` (the whole field) and ``has_more``, and match offsets (for a ``near`` read, how
the sentence was chosen: by its words, or by meaning when none occurs); a window that
reaches the last character says "end of field" plainly, and an ``offset_chars`` past
the end says so with the call that reads the last window. Then the exact next/previous
``read_record_field`` calls (JSON arguments, copyable as-is, with ``connection_id``
whenever the id cannot embed it); then ``---`` and the window text verbatim (bounded by
``limit_chars``, at most 16,384). A blob field gets its media type, size and readable
``pdpp://blob/`` resource URI instead of text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.ids import handle_arguments
from pdpp_gateway.render.common import as_mapping, call_text, warning_lines
from pdpp_gateway.tools.args import FieldArgs


def render_field_window(args: FieldArgs, result: ToolResult) -> str:
    record = as_mapping(result.structured.get("record"))
    field = as_mapping(result.structured.get("field")).get("path")
    window = as_mapping(result.structured.get("window"))
    naming = _naming(record)
    blob = result.structured.get("blob")
    if isinstance(blob, Mapping):
        return _render_blob(naming, field, blob)
    start, end, total = window.get("start_chars"), window.get("end_chars"), window.get("total_chars")
    complete = window.get("complete") is True
    has_more = window.get("has_more")
    if not isinstance(has_more, bool):
        has_more = isinstance(end, int) and isinstance(total, int) and end < total
    head = (
        f"read_record_field id={record.get('id')} field={field}: chars {start}–{end} of {total}, "
        f"complete={'true' if complete else 'false'}, has_more={'true' if has_more else 'false'}"
    )
    if window.get("match_start_chars") is not None:
        head += f", match at {window['match_start_chars']}–{window.get('match_end_chars')}"
    passage = as_mapping(result.structured.get("passage"))
    if passage.get("found_by") == "meaning":
        head += " (no word of near occurs in the field: the sentence nearest it in meaning)"
    elif passage:
        head += f" (the sentence that best answers near: {passage.get('words_matched')} of its {passage.get('words_asked')} words)"
    lines = [head + "."]
    limit = window.get("limit_chars")
    requested = args.offset_chars
    if requested is not None and isinstance(total, int) and requested >= total and total > 0:
        last = {
            **naming,
            "field": field,
            "offset_chars": max(0, total - (limit if isinstance(limit, int) else 4096)),
        }
        lines.append(
            f"offset_chars={requested} is past the end of the field ({total} chars): there is no text there. "
            f"Read the last window with {call_text('read_record_field', last)}"
        )
    elif total == 0:
        lines.append("The field is empty (0 chars).")
    elif complete:
        lines.append("This is the whole field.")
    elif not has_more:
        lines.append(f"End of field: this window ends at the last character ({total}); nothing follows.")
    for label, key in (("next", "next_offset_chars"), ("previous", "previous_offset_chars")):
        offset = window.get(key)
        if isinstance(offset, int):
            arguments: dict[str, Any] = {**naming, "field": field, "offset_chars": offset}
            if isinstance(limit, int):
                arguments["limit_chars"] = limit
            lines.append(f"{label}: {call_text('read_record_field', arguments)}")
    lines.extend(warning_lines(result.structured.get("warnings"), 300))
    lines.append("---")
    lines.append(str(window.get("text", "")))
    return "\n".join(lines)


def _naming(record: Mapping[str, Any]) -> dict[str, str]:
    stream, record_id = record.get("stream"), record.get("record_id")
    connection = record.get("connection_id")
    connection = connection if isinstance(connection, str) and connection else None
    if isinstance(stream, str) and isinstance(record_id, str):
        return handle_arguments(stream, record_id, connection)
    naming = {"id": str(record.get("id"))}
    if connection and not naming["id"].startswith(f"{connection}/"):
        naming["connection_id"] = connection
    return naming


def _render_blob(naming: Mapping[str, str], field: Any, blob: Mapping[str, Any]) -> str:
    size = blob.get("size_bytes")
    kind = (
        f"{blob.get('media_type') or 'unknown media type'}, {size if size is not None else 'unknown'} bytes"
    )
    lines = [
        f"read_record_field id={naming['id']} field={field}: a binary blob ({kind}), not text; "
        "no bytes are shown inline."
    ]
    if blob.get("uri"):
        lines.append(f"Read its bytes as the MCP resource {blob['uri']} (resources/read).")
    lines.append("Its record's other fields: " + call_text("fetch", dict(naming)))
    return "\n".join(lines)
