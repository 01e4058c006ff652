"""Shape RS bodies into the documents agents expect: search results and fetch documents.

Contract:

- ``search_results`` flattens RS hits into ChatGPT-compatible entries ``{id, title, url,
  ...}``. ``id`` is the self-contained handle ``{connection_id}/{stream}:{record_id}``
  whenever the grammar allows (never truncated). ``title`` is never the snippet: it is
  ``<source label> / <stream> / <authored time>`` (authored/event time preferred over
  ingest time). ``url`` is an absolute citation URL on the provider. ``evidence`` lists
  the RS's proven text matches only (``evidence_excerpts``), each with a bounded preview
  around the marked match and the exact ``read_record_field`` arguments to read more;
  a hit matched only on metadata gets no invented body window.
- ``search_envelope`` is the RS envelope minus its hit array (replaced by a count and a
  pointer to ``results``): paging, recall and warnings stay untouched.
- ``fetch_document`` returns exactly ``{id, title, text, url, metadata}``. ``text`` is
  the record's main text field, or compact JSON of the (projected) record when it has
  none; past ``max_text_chars`` it is cut and ENDS with an explicit marker saying what
  was cut and the exact ``read_record_field`` call to continue. Blobs are never inlined:
  metadata names them and their ``pdpp://blob/`` resource URI.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import quote

import orjson

from pdpp_gateway.ids import RecordRef, format_handle

TITLE_FIELDS: Final = ("title", "name", "subject", "summary")
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
PREVIEW_CHARS: Final = 240
SNIPPET_CHARS: Final = 320
CONTEXT_CHARS: Final = 300
_MARK = re.compile(r"<mark>(.*?)</mark>", re.S)


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
    max_text_chars: int = 12_000,
) -> dict[str, Any]:
    """Exactly ``{id, title, text, url, metadata}`` for one RS record."""
    payload = record_body.get("data") if isinstance(record_body.get("data"), Mapping) else {}
    assert isinstance(payload, Mapping)
    connection_id = _text(record_body.get("connection_id")) or ref.connection_id
    stream = _text(record_body.get("stream")) or ref.stream
    record_id = _text(record_body.get("id")) or ref.record_id
    label = _text(record_body.get("display_name")) or _connector_key(record_body)
    authored = _authored(payload, record_body)
    handle = format_handle(stream, record_id, connection_id)

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
            blob_uri=_blob_uri(connection_id, blob),
            blob_count=len(blobs),
        )
    text_field = next(
        (f for f in TEXT_FIELDS if isinstance(payload.get(f), str) and payload[f].strip()), None
    )
    if text_field is not None:
        full = str(payload[text_field])
        text = _bounded(full, max_text_chars, handle=handle, field=text_field)
    else:
        full = orjson.dumps(_without_blobs(payload)).decode()
        text = _bounded(full, max_text_chars, handle=handle, field=None)
    metadata.update(
        text_field=text_field, text_total_chars=len(full), text_truncated=len(full) > max_text_chars
    )
    return {
        "id": requested_id,
        "title": _title(
            payload, label, stream, authored or _text(record_body.get("emitted_at")), requested_id
        ),
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


def balance_marks(text: str) -> str:
    """Close or drop ``<mark>`` tags a cut left unbalanced."""
    text = re.sub(r"<(/?m?a?r?k?)$", "", text)  # a tag cut in the middle
    opened = text.count("<mark>") - text.count("</mark>")
    if opened > 0:
        text += "</mark>" * opened
    while text.count("</mark>") > text.count("<mark>"):
        text = text.replace("</mark>", "", 1)
    return text


def preview_around_mark(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """A window of at most ~``limit`` visible chars centred on the first match; (preview, cut)."""
    plain_len = len(_MARK.sub(r"\1", text))
    if plain_len <= limit:
        return balance_marks(text), False
    start = text.find("<mark>")
    if start < 0:
        return balance_marks(text[:limit]) + "…", True
    end = text.find("</mark>", start)
    end = end + len("</mark>") if end >= 0 else start + limit
    slack = max(0, (limit - (end - start)) // 2)
    lo, hi = max(0, start - slack), min(len(text), end + slack)
    window = text[lo:hi]
    window = re.sub(r"^[^<]*?>", "", window) if lo else window  # never start inside a tag
    return ("…" if lo else "") + balance_marks(window) + ("…" if hi < len(text) else ""), True


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
        "title": _title(hit, label, stream, _authored(hit) or _text(hit.get("emitted_at")), handle),
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
    result["evidence"] = [_evidence(excerpt, handle) for excerpt in _excerpts(hit)]
    return {key: value for key, value in result.items() if value is not None}


def _excerpts(hit: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for excerpt in hit.get("evidence_excerpts") or []:
        if (
            isinstance(excerpt, Mapping)
            and _text(excerpt.get("preview_text"))
            and _text(excerpt.get("field_path"))
        ):
            yield excerpt


def _evidence(excerpt: Mapping[str, Any], handle: str) -> dict[str, Any]:
    field = str(excerpt["field_path"])
    preview, cut = preview_around_mark(str(excerpt["preview_text"]))
    match = _MARK.search(str(excerpt["preview_text"]))
    arguments: dict[str, Any] = {"id": handle, "field": field}
    if match and match.group(1).strip():
        arguments.update(q=match.group(1), before_chars=CONTEXT_CHARS, after_chars=CONTEXT_CHARS)
    return {
        "field": field,
        "preview": preview,
        "truncated": bool(excerpt.get("truncated")) or cut,
        "read": {"tool": "read_record_field", "arguments": arguments},
    }


def _title(source: Mapping[str, Any], label: str | None, stream: str, when: str | None, fallback: str) -> str:
    for key in TITLE_FIELDS:
        value = source.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    parts = [part for part in (label, stream, when) if part]
    return " / ".join(parts) if parts else fallback


def _authored(*sources: Mapping[str, Any]) -> str | None:
    for source in sources:
        for key in AUTHORED_FIELDS:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _connector_key(source: Mapping[str, Any]) -> str | None:
    for key in ("connector_key", "connector_id"):
        value = _text(source.get(key))
        if value:
            return value.rstrip("/").rsplit("/", 1)[-1]  # URL-shaped ids → their canonical short key
    return None


def _blob_refs(payload: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for field, value in payload.items():
        if isinstance(value, Mapping) and ("blob_id" in value or "fetch_url" in value):
            yield field, value


def _blob_uri(connection_id: str | None, blob: Mapping[str, Any]) -> str | None:
    blob_id = _text(blob.get("blob_id"))
    if blob_id is None:
        fetch_url = _text(blob.get("fetch_url")) or ""
        blob_id = fetch_url.rstrip("/").rsplit("/", 1)[-1] or None
    if blob_id is None:
        return None
    prefix = f"{quote(connection_id, safe='')}/" if connection_id else ""
    return f"pdpp://blob/{prefix}{quote(blob_id, safe='')}"


def _without_blobs(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: (
            {"blob": "see metadata.blob_uri"} if isinstance(value, Mapping) and "blob_id" in value else value
        )
        for key, value in payload.items()
    }


def _bounded(full: str, limit: int, *, handle: str, field: str | None) -> str:
    if len(full) <= limit:
        return full
    if field is None:
        return (
            f"{full[:limit]}\n[… truncated: showing {limit} of {len(full)} chars of the record's JSON. "
            "Narrow it with fetch(fields) or read it with query_records.]"
        )
    follow = orjson.dumps({"id": handle, "field": field, "offset_chars": limit}).decode()
    return (
        f"{full[:limit]}\n[… truncated: showing chars 0–{limit} of {len(full)} of field {field}. "
        f"Continue with read_record_field {follow}]"
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
