"""Shape RS bodies into the documents agents expect: search results and fetch documents.

Contract:

- ``search_results`` flattens RS hits into ChatGPT-compatible entries ``{id, title, url,
  ...}``. ``id`` is the self-contained handle ``{connection_id}/{stream}:{record_id}``
  whenever the grammar allows (never truncated). ``title`` is one plain line (no
  ``<mark>``) and never built from ``emitted_at`` (the ingest time, the same for every
  record a sync wrote): the hit's snippet or evidence on a title-like field
  (``TITLE_FIELDS``: subject, title, name, ...), else ``<source label> / <stream> /
  <record id>`` with the authored time when the RS gives one, followed by the matched
  field and a short window of its matched value (``from_name: Ana Ribeiro``), so hits
  matched on the same kind of field can be told apart without fetching each. ``url`` is an absolute citation URL on the provider. ``evidence`` lists
  the RS's proven text matches only (``evidence_excerpts``), each with a bounded preview
  around the marked match (``preview_around_mark``: visible chars counted, tags kept
  well-formed) and the exact ``read_record_field`` arguments that land on the window the
  preview shows: the RS's offset when it gives one, else ``q`` = a distinctive span of
  the preview's own text (the RS ``q`` finds the FIRST occurrence, so the bare marked
  term could land elsewhere). A hit matched only on metadata gets no invented body
  window. A connection that cannot be embedded in the id travels as ``connection_id``.
- ``record_title`` and ``authored_time`` name a record for a person (query_records rows
  use them too); ``made_title_part(stream, record_id)`` is what a title made of the source,
  stream and id holds, so a reader can tell it from a subject.
- ``search_envelope`` is the RS envelope minus its hit array (replaced by a count and a
  pointer to ``results``): paging, recall and warnings stay untouched.
- ``fetch_document`` returns exactly ``{id, title, text, url, metadata}``. ``title`` is
  the record's title-like field, else ``<source label> / <stream> / <record id>`` with
  its authored time when it has one (never ``emitted_at``). ``text`` is
  the record's main text field, or compact JSON of the (projected) record when it has
  none; past ``max_text_chars`` it is cut and ENDS with an explicit marker saying what
  was cut, the exact ``read_record_field`` call to continue and, on its last line, how to
  aim that call by ``near`` at the words a caller is after (not a call: every call a text
  spells out runs as printed).
  Blobs are never inlined: metadata names them and their ``pdpp://blob/`` resource URI.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeGuard
from urllib.parse import quote

import orjson

from pdpp_gateway.ids import RecordRef, format_handle, handle_arguments
from pdpp_gateway.marks import parse_marks, preview_around_mark, read_more_query, shows_part

# Fields that name a record for a person, in order of preference.
TITLE_FIELDS: Final = (
    "title",
    "subject",
    "name",
    "full_name",
    "filename",
    "track_name",
    "display_name",
    "headline",
    "summary",
)
TITLE_CHARS: Final = 160
MATCH_CHARS: Final = 60
FETCH_TEXT_CHARS: Final = 12_000  # the most of a record's text a fetch shows
TEXT_FIELDS: Final = ("text", "body_text", "body", "content", "selftext", "description", "summary", "snippet")
AUTHORED_FIELDS: Final = (
    "sent_at",
    "authored_at",
    "created_at",
    "received_at",
    "date",
    "occurred_at",
    "played_at",
    "source_created_at",
    "issued_at",
    "updated_at",
)
_TITLE_KEYS: Final = frozenset(TITLE_FIELDS)
_AUTHORED_KEYS: Final = frozenset(AUTHORED_FIELDS)
_INGEST_TIMES: Final = frozenset({"emitted_at", "ingested_at", "synced_at", "deleted_at", "updated_at"})
# Other fields of a fetched record, in metadata as ``data.<name>`` (bounded; projected by fields).
MAX_DATA_FIELDS: Final = 30
MAX_DATA_CHARS: Final = 200
SNIPPET_CHARS: Final = 320
CONTEXT_CHARS: Final = 300
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")  # what ``quote(segment, safe="")`` leaves as it is


def search_results(body: Mapping[str, Any], *, provider_url: str) -> list[dict[str, Any]]:
    """ChatGPT-compatible result entries for an RS search body."""
    return [_result(hit, provider_url) for hit in _hits(body)]


def search_envelope(body: Mapping[str, Any], result_count: int) -> dict[str, Any]:
    """The RS search envelope with its hit array replaced by a count."""
    envelope = {key: value for key, value in body.items() if key not in {"data", "results", "hits", "links"}}
    envelope["result_count"] = result_count
    envelope["results_ref"] = "structuredContent.results"
    return envelope


def fetch_document(
    record_body: Mapping[str, Any],
    *,
    requested_id: str,
    ref: RecordRef,
    provider_url: str,
    max_text_chars: int = FETCH_TEXT_CHARS,
) -> dict[str, Any]:
    """Exactly ``{id, title, text, url, metadata}`` for one RS record."""
    payload = record_body.get("data") if isinstance(record_body.get("data"), Mapping) else {}
    assert isinstance(payload, Mapping)
    connection_id = _text(record_body.get("connection_id")) or ref.connection_id
    stream = _text(record_body.get("stream")) or ref.stream
    record_id = _text(record_body.get("id")) or ref.record_id
    label = _text(record_body.get("display_name")) or _connector_key(record_body)
    authored = authored_time(payload, record_body)
    naming = handle_arguments(stream, record_id, connection_id)

    metadata: dict[str, Any] = {
        "stream": stream,
        "record_id": record_id,
        "connection_id": connection_id,
        "connector_key": _connector_key(record_body),
        "display_name": _text(record_body.get("display_name")),
        "emitted_at": _text(record_body.get("emitted_at")),
        "authored_at": authored,
    }
    blobs = list(_blob_refs(payload))
    if blobs:
        field, blob = blobs[0]
        metadata.update(
            blob_field=field,
            blob_id=blob.get("blob_id"),
            blob_mime_type=blob.get("mime_type") or blob.get("content_type"),
            blob_size_bytes=blob.get("size_bytes"),
            blob_uri=blob_uri(connection_id, blob),
            blob_count=len(blobs),
        )
    text_field = next(
        (f for f in TEXT_FIELDS if isinstance(payload.get(f), str) and payload[f].strip()), None
    )
    if text_field is not None:
        full = str(payload[text_field])
        text = _bounded(full, max_text_chars, naming=naming, field=text_field)
    else:
        full = orjson.dumps(_without_blobs(payload)).decode()
        text = _bounded(full, max_text_chars, naming=naming, field=None)
    metadata.update(
        text_field=text_field, text_total_chars=len(full), text_truncated=len(full) > max_text_chars
    )
    if text_field is not None:
        metadata.update(_data_fields(payload, skip={text_field, *(field for field, _ in blobs)}))
    return {
        "id": requested_id,
        "title": record_title(payload) or _source_title(label, stream, record_id, authored),
        "text": text,
        "url": record_url(provider_url, stream, record_id, connection_id),
        "metadata": {
            key: value for key, value in metadata.items() if _is_scalar(value) and value is not None
        },
    }


def record_url(provider_url: str, stream: str, record_id: str, connection_id: str | None) -> str:
    """Absolute citation URL of a record on the provider."""
    url = (
        f"{provider_url.rstrip('/')}/v1/streams/{quote(stream, safe='')}/records/{quote(record_id, safe='')}"
    )
    return f"{url}?connection_id={quote(connection_id, safe='')}" if connection_id else url


def _hits(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("data", "results", "hits"):
        value = body.get(key)
        if isinstance(value, Mapping):
            value = value.get("data") or value.get("results")
        if isinstance(value, list):
            yield from (hit for hit in value if isinstance(hit, Mapping))
            return


def _result(hit: Mapping[str, Any], provider_url: str) -> dict[str, Any]:
    stream = _text(hit.get("stream")) or "unknown"
    record_id = _text(hit.get("record_key")) or _text(hit.get("record_id")) or _text(hit.get("id")) or ""
    connection_id = _text(hit.get("connection_id")) or _text(hit.get("connector_instance_id"))
    handle = format_handle(stream, record_id, connection_id)
    label = _text(hit.get("display_name")) or _connector_key(hit) or connection_id
    result: dict[str, Any] = {
        "id": handle,
        "title": _hit_title(hit, label, stream, record_id),
        "url": record_url(provider_url, stream, record_id, connection_id),
        "stream": stream,
        "record_id": record_id,
        "connection_id": connection_id,
        "connector_key": _connector_key(hit),
        "display_name": _text(hit.get("display_name")),
        "matched_fields": [f for f in hit.get("matched_fields") or [] if isinstance(f, str)],
    }
    snippet = hit.get("snippet")
    snippet_text = snippet.get("text") if isinstance(snippet, Mapping) else snippet
    if isinstance(snippet_text, str) and snippet_text:
        result["snippet"] = preview_around_mark(snippet_text, SNIPPET_CHARS)[0]
    for key in ("score", "retrieval_mode", "retrieval_sources", "scores"):
        if hit.get(key) is not None:
            result[key] = hit[key]
    naming = handle_arguments(stream, record_id, connection_id)
    result["evidence"] = [_evidence(excerpt, naming) for excerpt in _excerpts(hit)]
    return {key: value for key, value in result.items() if value is not None}


def _excerpts(hit: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for excerpt in hit.get("evidence_excerpts") or []:
        if (
            isinstance(excerpt, Mapping)
            and _text(excerpt.get("preview_text"))
            and _text(excerpt.get("field_path"))
        ):
            yield excerpt


def _evidence(excerpt: Mapping[str, Any], naming: Mapping[str, str]) -> dict[str, Any]:
    field = str(excerpt["field_path"])
    raw = str(excerpt["preview_text"])
    preview, cut = preview_around_mark(raw)
    arguments: dict[str, Any] = {**naming, "field": field}
    offset = _evidence_offset(excerpt)
    query = read_more_query(preview) if offset is None else None
    if offset is not None:
        arguments.update(offset_chars=max(0, offset - CONTEXT_CHARS), limit_chars=3 * CONTEXT_CHARS)
    elif query:
        arguments.update(q=query, before_chars=CONTEXT_CHARS, after_chars=CONTEXT_CHARS)
    evidence: dict[str, Any] = {
        "field": field,
        "preview": preview,
        "truncated": bool(excerpt.get("truncated")) or cut,
    }
    if shows_part(preview):  # a field shown whole has no more to read
        evidence["read"] = {"tool": "read_record_field", "arguments": arguments}
    return evidence


def _evidence_offset(excerpt: Mapping[str, Any]) -> int | None:
    """Where the previewed match starts in the field, when the RS says so (it may not)."""
    read = excerpt.get("read")
    for source in (excerpt, read if isinstance(read, Mapping) else {}):
        for key in ("match_start_chars", "start_chars", "offset_chars"):
            value = source.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return None


def record_title(data: Mapping[str, Any]) -> str | None:
    """A record's own title-like field (``TITLE_FIELDS``) as one bounded line, if it has one."""
    if type(data) is dict and _TITLE_KEYS.isdisjoint(data):
        return None  # one pass over the record's keys instead of a lookup per title field
    for key in TITLE_FIELDS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return _line(value, TITLE_CHARS)
    return None


def _hit_title(hit: Mapping[str, Any], label: str | None, stream: str, record_id: str) -> str:
    """A title-like match as it is, else the source, stream and id plus the matched value."""
    matches = list(_matched_texts(hit))
    for field, text in matches:
        if field.rsplit(".", 1)[-1] in TITLE_FIELDS:
            return _line(parse_marks(text)[0], TITLE_CHARS)
    title = _source_title(label, stream, record_id, authored_time(hit))
    if not matches:
        return title
    field, text = matches[0]
    window = parse_marks(preview_around_mark(" ".join(text.split()), MATCH_CHARS)[0])[0]
    return f"{title} · {field}: {window}"


def _matched_texts(hit: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(field, text)`` of the hit's snippet, then of its evidence excerpts."""
    snippet = hit.get("snippet")
    if isinstance(snippet, Mapping) and _text(snippet.get("field")) and _text(snippet.get("text")):
        yield str(snippet["field"]), str(snippet["text"])
    for excerpt in _excerpts(hit):
        yield str(excerpt["field_path"]), str(excerpt["preview_text"])


def _source_title(label: str | None, stream: str, record_id: str, authored: str | None) -> str:
    return " / ".join(part for part in (label, stream, record_id, authored) if part)


def made_title_part(stream: str, record_id: str) -> str:
    """What a title made of a hit's source, stream and id (``_hit_title``, for a hit that matched
    no title-like field) always holds: it names no subject."""
    return f"{stream} / {record_id}"


def _line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def authored_time(*sources: Mapping[str, Any]) -> str | None:
    """The record's authored/event time: a known field first, else any other ``*_at`` field
    that is not an ingest or bookkeeping time (never ``emitted_at``)."""
    for source in sources:
        if type(source) is dict and _AUTHORED_KEYS.isdisjoint(source):
            continue
        for key in AUTHORED_FIELDS:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    for source in sources:
        for key, value in source.items():
            if key.endswith("_at") and key not in _INGEST_TIMES and isinstance(value, str) and value:
                return value
    return None


def _connector_key(source: Mapping[str, Any]) -> str | None:
    for key in ("connector_key", "connector_id"):
        value = _text(source.get(key))
        if value:
            return value.rstrip("/").rsplit("/", 1)[-1]  # URL-shaped ids → their canonical short key
    return None


def is_blob_ref(value: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether a record value is an RS blob reference (``blob_id`` and/or ``fetch_url``)."""
    return isinstance(value, Mapping) and ("blob_id" in value or "fetch_url" in value)


def _blob_refs(payload: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field, value in payload.items():
        if is_blob_ref(value):
            yield field, value


def blob_uri(connection_id: str | None, blob: Mapping[str, Any]) -> str | None:
    """The readable ``pdpp://blob/[{connection_id}/]{blob_id}`` resource URI of a blob reference."""
    blob_id = _text(blob.get("blob_id"))
    if blob_id is None:
        fetch_url = _text(blob.get("fetch_url")) or ""
        blob_id = fetch_url.rstrip("/").rsplit("/", 1)[-1] or None
    if blob_id is None:
        return None
    prefix = f"{_quoted(connection_id)}/" if connection_id else ""
    return f"pdpp://blob/{prefix}{_quoted(blob_id)}"


def _quoted(segment: str) -> str:
    """``segment`` percent-encoded as one URI path segment (most ids need no encoding)."""
    return segment if _UNRESERVED.fullmatch(segment) else quote(segment, safe="")


def _without_blobs(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: ({"blob": "see metadata.blob_uri"} if is_blob_ref(value) else value)
        for key, value in payload.items()
    }


def _bounded(full: str, limit: int, *, naming: Mapping[str, str], field: str | None) -> str:
    if len(full) <= limit:
        return full
    if field is None:
        return (
            f"{full[:limit]}\n[… truncated: showing {limit} of {len(full)} chars of the record's JSON. "
            "Narrow it with fetch(fields) or read it with query_records.]"
        )
    follow = orjson.dumps({**naming, "field": field, "offset_chars": limit}).decode()
    return (
        f"{full[:limit]}\n[… truncated: showing chars 0–{limit} of {len(full)} of field {field}.]\n"
        f"Continue with read_record_field {follow}\n"
        'or pass it "near": "<the words you need>" in place of offset_chars to read where the field speaks of them'
    )


def _data_fields(payload: Mapping[str, Any], *, skip: set[str]) -> dict[str, Any]:
    """The record's other fields beside its main text (``data.<name>``): scalars as they
    are, long strings shortened with a visible marker, lists of scalars joined."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key in skip or len(out) >= MAX_DATA_FIELDS:
            continue
        if isinstance(value, list) and all(_is_scalar(item) for item in value):
            value = ", ".join("null" if item is None else str(item) for item in value)
        if isinstance(value, str) and len(value) > MAX_DATA_CHARS:
            value = f"{value[:MAX_DATA_CHARS]}…[+{len(value) - MAX_DATA_CHARS} chars]"
        if _is_scalar(value) and value is not None:
            out[f"data.{key}"] = value
    return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
