"""The six read tools as the model sees them: names, descriptions, JSON Schemas.

Contract:

- Exactly six tools: schema, query_records, aggregate, search, fetch, read_record_field.
  All are read-only, idempotent, non-destructive and closed-world (they read one RS).
  Each ``ToolSpec`` is the model-facing part of a tool's record (``tools/registry``);
  ``TOOLS`` and ``TOOL_NAMES`` are plain data for what must start without the pipeline
  (the stdio door's early answers, the command line), held equal to the registry by a test.
- Schemas are hand-written JSON Schema 2020-12 with ``"type": "object"`` at the root
  and ``additionalProperties: false``, so unknown arguments are refused rather than
  guessed at. ``connection_id`` is the only source selector (never
  ``connector_instance_id`` or URL-shaped connector ids). ``filter`` and
  ``expand_limit`` are typed objects, never strings.
- Descriptions say what the tool does, which RS endpoint it maps to and when to use
  another tool; cross-tool guidance lives once, in the server instructions.
  structuredContent is called "structured output", never hidden output.
- Every free string, array and object argument has a size cap (``maxLength``,
  ``maxItems``, ``maxProperties``), so an oversized argument is refused with a typed
  ``invalid_arguments`` error before any RS call instead of reaching the RS as a huge
  URL. The check ladder reads these same caps from the tool's input schema
  (``tools.checks.check_sizes``).
- The whole ``tools/list`` result stays under ``TOOLS_LIST_BUDGET_BYTES`` of compact
  JSON (pinned by a test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

JSONObject = dict[str, Any]

TOOLS_LIST_BUDGET_BYTES: Final = 12_000
MAX_PAGE_LIMIT: Final = 100
MAX_GROUP_LIMIT: Final = 100
MAX_WINDOW_CHARS: Final = 16_384
MAX_CONTEXT_CHARS: Final = 8_192
MAX_NAME_CHARS: Final = 128  # stream, field, connection, relation names
MAX_HANDLE_CHARS: Final = 2_048  # cursors, change tokens, record handles
MAX_QUERY_CHARS: Final = 1_000  # search text and field-window q
MAX_RECORD_ID_CHARS: Final = 512  # as ids.MAX_SEGMENT_CHARS
MAX_LIST_ITEMS: Final = 64  # the RS query-string parser's array limit
MAX_FILTER_FIELDS: Final = 32
MAX_FILTER_VALUE_CHARS: Final = 1_000
MAX_EXPAND_RELATIONS: Final = 16

_NAME: Final[JSONObject] = {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS}
_HANDLE: Final[JSONObject] = {**_NAME, "maxLength": MAX_HANDLE_CHARS}
_STRINGS: Final[JSONObject] = {"type": "array", "items": _NAME, "minItems": 1, "maxItems": MAX_LIST_ITEMS}
# Every schema node has one "type" (no type arrays, enums typed): some clients (Gemini among
# them) accept single-type JSON Schemas only.
_SCALARS: Final[list[JSONObject]] = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]
_BOUND: Final[JSONObject] = {"anyOf": [{"type": "string"}, {"type": "number"}]}
_CONNECTION: Final[JSONObject] = {
    **_NAME,
    "description": "Read only this source (a connection_id from schema).",
}
_STREAM: Final[JSONObject] = {**_NAME, "description": "Stream name from schema."}
_LIMIT: Final[JSONObject] = {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_LIMIT}

FILTER: Final[JSONObject] = {
    "type": "object",
    "maxProperties": MAX_FILTER_FIELDS,
    "description": "Typed filter object, not a pre-encoded query string: {field: value} exact match, "
    "{field: {gte|gt|lte|lt: value}} range. Usable fields: schema(stream) flags eq, r=.",
    "additionalProperties": {
        "anyOf": [
            *_SCALARS,
            {
                "type": "object",
                "properties": dict.fromkeys(("gte", "gt", "lte", "lt"), _BOUND),
                "additionalProperties": False,
                "minProperties": 1,
            },
        ]
    },
}

EXPAND: Final[JSONObject] = {
    **_STRINGS,
    "maxItems": MAX_EXPAND_RELATIONS,
    "description": "Relations to embed (schema expand_capabilities).",
}
EXPAND_LIMIT: Final[JSONObject] = {
    "type": "object",
    "description": 'Per-relation child cap, e.g. {"messages": 3}.',
    "maxProperties": MAX_EXPAND_RELATIONS,
    "additionalProperties": {"type": "integer", "minimum": 1},
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as ``tools/list`` shows it (``server.py`` makes the SDK's ``Tool`` of it, with
    ``ANNOTATIONS``); plain data, so the pipeline runs without the SDK loaded."""

    name: str
    title: str
    description: str
    input_schema: JSONObject
    output_schema: JSONObject
    summary: str  # one line for people (the /connect page, llms.txt); not sent in tools/list


def _object(properties: JSONObject, required: tuple[str, ...] = ()) -> JSONObject:
    schema: JSONObject = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


_ENVELOPE_OUTPUT: Final[JSONObject] = {
    "type": "object",
    "properties": {"data": {"type": "object"}, "provider_url": {"type": "string"}},
    "required": ["data"],
}

SCHEMA: Final = ToolSpec(
    summary="what the grant covers: streams, fields, connections, capabilities. Start here.",
    name="schema",
    title="Discover granted data",
    description=(
        "Discover what this grant can read (GET /v1/schema). No arguments: an index of every granted "
        "connector (connector_key), connection (connection_id) and stream. With stream: that stream's "
        "fields with capability flags (filter, sort, search, aggregate, expand) for each source that has "
        'it; add connection_id to pick one source. detail: "full" is allowed only with stream and '
        "returns the exhaustive field JSON Schema."
    ),
    input_schema=_object(
        {
            "stream": _STREAM,
            "connection_id": _CONNECTION,
            "detail": {
                "type": "string",
                "enum": ["compact", "full"],
                "description": "compact (default) or full.",
            },
        }
    ),
    output_schema=_ENVELOPE_OUTPUT,
)

QUERY_RECORDS: Final = ToolSpec(
    summary="page through one stream's records, with typed filters, ordering and field projection.",
    name="query_records",
    title="Read records",
    description=(
        "Read one page of a stream's records (GET /v1/streams/{stream}/records), newest first. Returns at "
        "most 25 records unless limit is set; limit is capped at 100, so page on with next_cursor. Narrow "
        "with fields and filter; use aggregate for counts and totals and search for text. Structured "
        "output data holds the page; the text previews records and every paging handle."
    ),
    input_schema=_object(
        {
            "stream": _STREAM,
            "limit": _LIMIT,
            "cursor": {**_HANDLE, "description": "next_cursor from the previous page (same order and sort)."},
            "order": {"type": "string", "enum": ["asc", "desc"]},
            "sort": {**_NAME, "description": "cursor field, '-' prefix for descending."},
            "fields": {**_STRINGS, "description": "Top-level fields to return."},
            "filter": FILTER,
            "expand": EXPAND,
            "expand_limit": EXPAND_LIMIT,
            "count": {"type": "string", "enum": ["none", "estimated", "exact"]},
            "changes_since": {
                **_HANDLE,
                "description": '"beginning" or a previous next_changes_since; not an ISO timestamp.',
            },
            "connection_id": _CONNECTION,
        },
        required=("stream",),
    ),
    output_schema=_ENVELOPE_OUTPUT,
)

AGGREGATE: Final = ToolSpec(
    summary="count, sum, min, max or count_distinct over a stream, grouped by a field or by time.",
    name="aggregate",
    title="Aggregate records",
    description=(
        "Count, sum, min, max or count_distinct over a stream without reading record bodies "
        "(GET /v1/streams/{stream}/aggregate); prefer it to paging query_records and counting. Group "
        "count only, by exactly one dimension: group_by (a field) or group_by_time with granularity (for a "
        "sum per month, sum with a range filter per month). Grouped results "
        "hold the top limit groups (default 10) and other_count, the records in groups beyond limit: a "
        "positive other_count means the group list is truncated. Usable fields: schema(stream), a= flags."
    ),
    input_schema=_object(
        {
            "stream": _STREAM,
            "metric": {"type": "string", "enum": ["count", "sum", "min", "max", "count_distinct"]},
            "field": {**_NAME, "description": "Field for sum, min, max, count_distinct."},
            "group_by": _NAME,
            "group_by_time": {**_NAME, "description": "Date field to bucket by; needs granularity."},
            "granularity": {
                "type": "string",
                "enum": ["minute", "hour", "day", "week", "month", "quarter", "year"],
            },
            "time_zone": {**_NAME, "description": "IANA name for time buckets (default UTC)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_GROUP_LIMIT},
            "filter": FILTER,
            "connection_id": _CONNECTION,
        },
        required=("stream", "metric"),
    ),
    output_schema=_ENVELOPE_OUTPUT,
)

SEARCH: Final = ToolSpec(
    summary="lexical, semantic or hybrid search across granted streams; each hit is a fetch handle.",
    name="search",
    title="Search records",
    description=(
        "Search granted records by text (GET /v1/search). Ask in plain words: without mode, the query's "
        "content words must all match, else meaning-based and fewer-word hits are fused, each with its "
        "best passage. mode pins lexical, semantic or hybrid (no paging). At most 25 hits unless limit "
        "(max 100); page with next_cursor. Ids go to fetch as-is; evidence names the read_record_field "
        "call to read around it."
    ),
    input_schema=_object(
        {
            "query": {**_NAME, "maxLength": MAX_QUERY_CHARS, "description": "Search text."},
            "mode": {"type": "string", "enum": ["lexical", "semantic", "hybrid"]},
            "streams": {**_STRINGS, "description": "Only these streams."},
            "limit": _LIMIT,
            "cursor": {**_HANDLE, "description": "next_cursor from the previous page (not hybrid)."},
            "filter": {**FILTER, "description": "Typed filter object (see query_records); one stream."},
            "connection_id": _CONNECTION,
        },
        required=("query",),
    ),
    output_schema={
        "type": "object",
        "properties": {
            **_ENVELOPE_OUTPUT["properties"],
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                    },
                    "required": ["id", "title", "url"],
                },
            },
            "stream_hints": {"type": "array"},  # retrieval.stream_hints: ready query_records calls
        },
        "required": ["data", "results"],
    },
)

FETCH: Final = ToolSpec(
    summary="one record by the handle search returned, as a readable document.",
    name="fetch",
    title="Fetch a record",
    description=(
        "Fetch one record as a document {id, title, text, url, metadata} "
        "(GET /v1/streams/{stream}/records/{id}); a mail message's text is its body's; an issue's or a "
        "post's thread follows its text. Long text ends with a cut marker and the read_record_field "
        "arguments to continue. fields projects the record first; with no text-like field, text is its "
        "compact JSON."
    ),
    input_schema=_object(
        {
            "id": {
                **_HANDLE,
                "description": "connection_id/stream:record_id from search, stream:record_id, "
                "or a pdpp://record/ URI.",
            },
            "fields": {**_STRINGS, "description": "Top-level fields to keep."},
            "expand": EXPAND,
            "expand_limit": EXPAND_LIMIT,
            "connection_id": _CONNECTION,
        },
        required=("id",),
    ),
    output_schema={
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "text": {"type": "string"},
            "url": {"type": "string"},
            "metadata": {"type": "object"},
        },
        "required": ["id", "title", "text", "url", "metadata"],
    },
)

READ_RECORD_FIELD: Final = ToolSpec(
    summary="a bounded window of one long text field, when a document was cut.",
    name="read_record_field",
    title="Read a field window",
    description=(
        "Read a bounded window of one text field of one record without loading the record "
        "(GET /v1/streams/{stream}/records/{id}/field-window). Give id (any id shown, or a pdpp://record/ "
        "URI) or connection_id + stream + record_id. Page with "
        "offset_chars (each result gives the next and previous arguments), jump to the first match of q "
        "with before_chars/after_chars of context, or to the sentence that best answers near. "
        "limit_chars defaults to 4096 (1200 with near)."
    ),
    input_schema=_object(
        {
            "id": {**_HANDLE, "description": "Record handle."},
            "connection_id": _CONNECTION,
            "stream": _STREAM,
            "record_id": {**_NAME, "maxLength": MAX_RECORD_ID_CHARS},
            "field": {**_NAME, "description": "Top-level text field, e.g. body_text."},
            "offset_chars": {"type": "integer", "minimum": 0},
            "limit_chars": {"type": "integer", "minimum": 1, "maximum": MAX_WINDOW_CHARS},
            "q": {
                **_NAME,
                "maxLength": MAX_QUERY_CHARS,
                "description": "Literal text to find (first match).",
            },
            "near": {
                **_NAME,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What to find, any words.",
            },
            "before_chars": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT_CHARS},
            "after_chars": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT_CHARS},
        },
        required=("field",),
    ),
    output_schema={
        "type": "object",
        "properties": {
            "record": {"type": "object"},
            "field": {"type": "object"},
            "window": {"type": "object"},
        },
        "required": ["record", "field", "window"],
    },
)

# Every tool reads one RS and changes nothing (``ToolAnnotations`` as on the wire).
ANNOTATIONS: Final[dict[str, bool]] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}

TOOLS: Final[tuple[ToolSpec, ...]] = (SCHEMA, QUERY_RECORDS, AGGREGATE, SEARCH, FETCH, READ_RECORD_FIELD)
TOOL_NAMES: Final[tuple[str, ...]] = tuple(tool.name for tool in TOOLS)
