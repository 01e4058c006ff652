"""The terminal handlers: one forwarded RS read per tool (or two: the expand gate's or the
merged-sources schema read, or a binary field's projected record read after the RS
refused it as non-text; three for a mail message's fetch, which finds its body; two for a
thread's head's fetch, which reads its parts).

Contract: a handler receives the caller's context and its tool's arguments as validation
parsed them (``tools.args``: its record handle resolved, its RS query encoded once). It
issues GETs to the RS ``/v1`` API through the caller's bound client, never anything
else, and returns a ``ToolResult`` whose ``structured`` is the tool's structured
output (``text`` is left to the rendering stage). RS failures propagate as the plain
``RsError`` tree (an answer without the window text a field-window read must have is an
``RsProtocolError`` too); the pipeline's ``upstream_errors`` stage above words them.
Handlers never retry with other credentials and never invent query semantics: the
arguments a tool accepts map one-to-one onto RS parameters. ``read_record_field`` on a
blob field answers (not fails) with the blob's media type, size and ``pdpp://blob/``
resource URI, never its bytes; any other non-text field keeps the RS's 422.

``search``'s handler is ``retrieval.search.search`` (search in a person's words: the
question's own words first, then meaning and fewer words, fused; its module contract).
``fetch`` of a mail's message (a stream whose records have whole bodies in the grant, not
projected by ``fields`` nor expanded) answers its body's text in place of its snippet, the
body named in ``metadata.body_id`` (``retrieval.message_body``: a search and a read or more;
the message alone when no body is found). ``fetch`` of a thread's head (an issue, a chat post,
a person's turn to an assistant, a conversation) shows the parts that answer it below its text
(``retrieval.thread_below``: one more read, the newest page of the parts' stream).

Merged sources: without ``connection_id`` the RS reads a stream name across every
granted connection holding it. ``aggregate`` (whose answer does not show that) reads the
stream's compact schema concurrently; ``query_records`` reads it after a page that shows
a merge (records of several connections, or more records and no cursor). That schema
read, like the expand gate's, goes through the caller's memo (``rs.memo``): in steady
state each call makes one RS read. When several
connections hold the name, structured output lists them under ``merged_connections``
(a failed schema read lists nothing; the answer stands).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Final

from mcp_gateway_middleware import ToolResult, gateway_error

from pdpp_gateway import documents, schema_view
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RecordRef, format_handle
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.passages import Passage
from pdpp_gateway.render.common import MERGED_CONNECTIONS, as_mapping
from pdpp_gateway.retrieval.message_body import find_body
from pdpp_gateway.retrieval.passage_reads import read_windows, window_around
from pdpp_gateway.retrieval.thread_below import thread_below
from pdpp_gateway.rs.client import RsResponse, rs_path
from pdpp_gateway.rs.errors import RsError, RsProtocolError, RsStatusError
from pdpp_gateway.rs.memo import memoised_read
from pdpp_gateway.tools.args import AggregateArgs, FetchArgs, FieldArgs, RecordsArgs, SchemaArgs
from pdpp_gateway.tools.expand_gate import check_expand

NEAR_SCAN_CHARS: Final = 65_536  # how far into a field ``near`` looks (four RS windows)
NEAR_WINDOW_CHARS: Final = 1_200
# RS answers meaning "I do not know view=compact": fall back to projecting the full body.
_COMPACT_UNSUPPORTED: Final = frozenset({"invalid_request", "unsupported_query", "bad_request"})


def _envelope(context: GatewayContext, response: RsResponse, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"data": dict(data), "provider_url": context.provider_url, "request_id": response.request_id}


async def schema(context: GatewayContext, args: SchemaArgs) -> ToolResult:
    stream, connection_id, scope = args.stream, args.connection_id, args.scope
    if args.full:
        response = await context.rs.get_json("/v1/schema", [("detail", "full"), *scope])
        document = schema_view.full_view(schema_view.unwrap_schema(response.body))
        return ToolResult(structured=_envelope(context, response, document))
    try:
        response = await context.rs.get_json("/v1/schema", [("view", "compact"), *scope])
    except RsStatusError as error:
        if error.status != 400 or error.code not in _COMPACT_UNSUPPORTED:
            raise
        response = await context.rs.get_json("/v1/schema", scope)
    document = schema_view.unwrap_schema(response.body)
    if stream is None:
        view = schema_view.index_view(document, connection_id=connection_id)
    else:
        view = schema_view.stream_view(document, stream=stream, connection_id=connection_id)
    return ToolResult(structured=_envelope(context, response, view))


async def query_records(context: GatewayContext, args: RecordsArgs) -> ToolResult:
    stream = args.stream
    await check_expand(context.rs, stream, args.expand, args.connection_id)
    response = await context.rs.get_json(rs_path("v1", "streams", stream, "records"), args.query)
    structured = _envelope(context, response, response.body)
    if not args.connection_id and _page_merges(response.body):
        _note_merge(structured, await _stream_connections(context, stream))
    return ToolResult(structured=structured)


async def aggregate(context: GatewayContext, args: AggregateArgs) -> ToolResult:
    query = args.query
    path = rs_path("v1", "streams", args.stream, "aggregate")
    if args.connection_id:
        response = await context.rs.get_json(path, query)
        return ToolResult(structured=_envelope(context, response, response.body))
    # Without connection_id the RS adds up every connection holding the name, and its answer
    # does not say so: the stream's connections come from the schema, read alongside.
    sources = asyncio.create_task(_stream_connections(context, args.stream))
    try:
        response = await context.rs.get_json(path, query)
    except asyncio.CancelledError:
        sources.cancel()
        raise
    except Exception:
        # The schema read is already on its way: let it end, so no read of this call
        # outlives the call (it is fail-open, so its outcome does not matter here).
        with contextlib.suppress(Exception):
            await sources
        raise
    structured = _envelope(context, response, response.body)
    _note_merge(structured, await sources)
    return ToolResult(structured=structured)


def _page_merges(page: Mapping[str, Any]) -> bool:
    """Whether a records page shows it merged connections: records of several, or the RS's
    fan-in shape (more records, no cursor to reach them)."""
    records = [r for r in page.get("data") or () if isinstance(r, Mapping)]
    if len({r.get("connection_id") for r in records if r.get("connection_id")}) > 1:
        return True
    return bool(page.get("has_more") and not page.get("next_cursor") and not page.get("next_changes_since"))


def _note_merge(structured: dict[str, Any], connections: list[dict[str, Any]] | None) -> None:
    """List the connections an answer merged, when several hold the stream name."""
    if connections is not None and len(connections) > 1:
        structured[MERGED_CONNECTIONS] = connections


async def _stream_connections(context: GatewayContext, stream: str) -> list[dict[str, Any]] | None:
    """The granted connections holding ``stream`` (compact schema read), or None if unknown."""
    try:
        response = await memoised_read(context.rs, "/v1/schema", [("view", "compact"), ("stream", stream)])
    except RsError:
        return None
    return schema_view.stream_connections(schema_view.unwrap_schema(response.body), stream)


async def fetch(context: GatewayContext, args: FetchArgs) -> ToolResult:
    ref = args.ref
    await check_expand(context.rs, ref.stream, args.expand, ref.connection_id)
    response = await context.rs.get_json(
        rs_path("v1", "streams", ref.stream, "records", ref.record_id), args.query
    )
    document = documents.fetch_document(
        response.body, requested_id=args.requested_id, ref=ref, provider_url=context.provider_url
    )
    metadata = document["metadata"]
    if not args.expand and not any(name == "fields" for name, _ in args.query):
        served = RecordRef(ref.stream, ref.record_id, metadata.get("connection_id") or ref.connection_id)
        if metadata.get("text_field"):
            body = await find_body(context, served, str(document["text"]))
            if body is not None:
                _with_body(document, body, served, context.provider_url)
        below = await thread_below(context, served, len(document["text"]))
        if below is not None:
            document["text"] += below.text
            metadata.update(thread_stream=below.stream, thread_shown=below.shown, thread_left=below.left)
    return ToolResult(structured=document)


def _with_body(
    document: dict[str, Any], body: Mapping[str, Any], message: RecordRef, provider_url: str
) -> None:
    """``document`` (a mail message's) with its body's text in place of its snippet, and the
    body named in its metadata (``body_id``: fetch it, or read its field, by that id)."""
    ref = RecordRef(str(body.get("stream") or ""), str(body.get("id") or ""), message.connection_id)
    handle = format_handle(ref.stream, ref.record_id, ref.connection_id)
    read = documents.fetch_document(body, requested_id=handle, ref=ref, provider_url=provider_url)
    document["text"] = read["text"]
    shown = read["metadata"]
    document["metadata"].update(
        body_id=handle,
        text_field=shown.get("text_field"),
        text_total_chars=shown.get("text_total_chars"),
        text_truncated=shown.get("text_truncated"),
    )


async def read_record_field(context: GatewayContext, args: FieldArgs) -> ToolResult:
    ref = args.ref
    path = rs_path("v1", "streams", ref.stream, "records", ref.record_id, "field-window")
    try:
        if args.near is not None:
            return ToolResult(structured=await _near_window(context, args, args.near))
        response = await context.rs.get_json(path, args.query)
    except RsStatusError as error:
        if error.status != 422 or error.code != "field_not_text":
            raise
        blob = await _blob_field(context, ref, args.field)
        if blob is None:
            raise
        return ToolResult(structured=blob)
    body = response.body
    window = body.get("window")
    if not isinstance(window, Mapping) or not isinstance(window.get("text"), str):
        raise RsProtocolError("its field-window answer has no window text")
    connection = body.get("connection_id") or ref.connection_id
    served = RecordRef(stream=ref.stream, record_id=ref.record_id, connection_id=connection)
    field = as_mapping(body.get("field"))
    meta = as_mapping(body.get("meta"))
    structured = {
        "record": {
            "id": served.handle,
            "connection_id": connection,
            "stream": ref.stream,
            "record_id": ref.record_id,
        },
        "field": {"path": field.get("path", args.field), "type": field.get("type")},
        "window": dict(window),
        "warnings": list(meta.get("warnings") or []),
        "provider_url": context.provider_url,
        "request_id": response.request_id,
    }
    return ToolResult(structured=structured)


async def _near_window(context: GatewayContext, args: FieldArgs, asked: Question) -> dict[str, Any]:
    """The window around the field's sentence that best answers ``near``, read from the field's
    start (at most ``NEAR_SCAN_CHARS``) and chosen by the scorer behind a search's evidence
    (``passage_reads.read_windows``: meaning, the words weighted by their rarity in the text,
    the kind of value asked for). People paraphrase: when no word of ``near`` occurs, the
    sentence nearest it in meaning answers (``found_by: "meaning"``, and the text says so);
    ``words_not_found`` only for a field with no sentence at all."""
    scanned, windows = await read_windows(context.rs, args.ref, args.field, asked, 1, NEAR_SCAN_CHARS)
    if not windows:
        read = (
            f"the first {len(scanned.text)} of its {scanned.total}"
            if scanned.total > len(scanned.text)
            else "all"
        )
        raise gateway_error(
            "words_not_found",
            f"None of the words {', '.join(asked.terms)} occurs in {args.field} ({read} characters were read).",
            param="near",
        )
    best = windows[0]
    passage = Passage(*best.sentence, best.marks, best.matched, best.asked)
    found_by = "words" if best.matched else "meaning"
    served = RecordRef(args.ref.stream, args.ref.record_id, scanned.connection_id)
    return {
        "record": {
            "id": served.handle,
            "connection_id": scanned.connection_id,
            "stream": served.stream,
            "record_id": served.record_id,
        },
        "field": {"path": args.field, "type": "string"},
        "window": window_around(scanned, passage, args.limit_chars or NEAR_WINDOW_CHARS),
        "passage": {"words_matched": passage.matched, "words_asked": passage.asked, "found_by": found_by},
        "warnings": [],
        "provider_url": context.provider_url,
        "request_id": None,
    }


async def _blob_field(context: GatewayContext, ref: RecordRef, field: str) -> dict[str, Any] | None:
    """A binary field's metadata and readable resource URI, or None if it is no blob.

    The RS refuses non-text fields (422 ``field_not_text``); for a blob reference the
    model still needs its size, media type and where the bytes are: one projected record
    read (``fields=<field>``) gets them, never the bytes themselves."""
    query = [("fields", field), *([("connection_id", ref.connection_id)] if ref.connection_id else [])]
    response = await context.rs.get_json(
        rs_path("v1", "streams", ref.stream, "records", ref.record_id), query
    )
    body = response.body
    value = as_mapping(body.get("data")).get(field)
    if not documents.is_blob_ref(value):
        return None
    connection = body.get("connection_id") if isinstance(body.get("connection_id"), str) else None
    connection = connection or ref.connection_id
    served = RecordRef(stream=ref.stream, record_id=ref.record_id, connection_id=connection)
    media_type = value.get("mime_type") or value.get("content_type")
    return {
        "record": {
            "id": served.handle,
            "connection_id": connection,
            "stream": ref.stream,
            "record_id": ref.record_id,
        },
        "field": {"path": field, "type": "blob"},
        "window": {"text": "", "binary": True},
        "blob": {
            "uri": documents.blob_uri(connection, value),
            "blob_id": value.get("blob_id"),
            "media_type": media_type,
            "size_bytes": value.get("size_bytes"),
        },
        "provider_url": context.provider_url,
        "request_id": response.request_id,
    }


def shape_schema(args: SchemaArgs, result: ToolResult) -> ToolResult:
    """The schema tool's wire shape (its record's ``shape``, run above the fan-out): the global
    index bounded (``schema_view.bound_index``; the whole index stays in
    ``annotations["schema_index"]`` so the text can still name every stream), the flag
    legend beside a compact stream view."""
    if args.full:
        return result
    data = result.structured.get("data")
    if not isinstance(data, dict):
        return result
    if args.stream is not None:
        result.structured["field_capability_legend"] = schema_view.LEGEND
    else:
        result.annotations[schema_view.INDEX_ANNOTATION] = data
        result.structured["data"] = schema_view.bound_index(data)
    return result
