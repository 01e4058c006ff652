"""Server instructions: the cross-tool guidance, said once.

Contract: the first 512 characters are self-contained (some hosts show only that much)
and cover schema-first discovery, ``connection_id`` disambiguation, typed filters and
bounded paging. The rest covers the evidence ladder and handles. The text never asks
for owner or control-plane credentials and names no tool that does not exist.
"""

from typing import Final

INSTRUCTIONS: Final = (
    "Read-only access to one person's data, limited to what their grant allows. Start with schema() to "
    "see granted streams, then schema(stream) for fields and capabilities. A stream name can exist in "
    "several sources: pass connection_id (from schema or an ambiguous_connection error) to pick one. "
    "filter is a typed object ({field: value} or {field: {gte: ...}}), never a string. Pages hold 25 "
    "items by default, 100 at most: follow next_cursor, narrow with fields, and prefer aggregate for "
    "counts and search for text.\n"
    "Evidence: search hits carry ids; a hit proven in a text field shows a preview and the exact "
    "read_record_field arguments to read around the match. Read long fields in windows with "
    "read_record_field before reaching for fetch, which returns a whole record as one document. Every "
    "id shown (connection_id/stream:record_id or pdpp://record/...) is accepted as-is by fetch and "
    "read_record_field, and pdpp:// URIs are readable as resources. Keep connection_id, not grant_id, "
    "to refer to a source later. The text of each result carries every handle needed for the next call; "
    "structured output holds the full envelope."
)
