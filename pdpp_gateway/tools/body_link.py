"""The body record of a search hit: found by the hit's opening, proven by its own foreign key.

A mail's ``messages`` record holds its subject and a snippet (the body's first ~90
characters); its long text is a separate record of ``message_bodies`` whose ``message_id``
names the message. Client tokens cannot filter, expand or see relationships, and body ids
follow no fixed rule, so the body is found by what it says and proven by what it names.

Contract (``find_body(rs, schema, hit)``, GETs only through the caller's own client):

- ``body_streams(schema, stream, connection_id)`` reads the grant's compact schema: the
  streams of the hit's connector readable through the hit's connection, other than the
  hit's own, with a granted field ``<singular of the hit's stream>_id`` (``message_id`` for
  ``messages``) and a searchable text field (flag ``role=text``, else ``lex``; a schema
  whose flags say nothing, as the reference's ``declared``, leaves the field to the
  search's ``matched_fields``). None: no lookup and no read at all.
- The hit's opening is its text field (its stream's ``role=text`` field, a matched one
  first; without roles, the first of its ``matched_fields`` that is no title), its first
  ``OPENING_CHARS`` read through the field-window route (1 read: a hit's snippet shows its
  title field); a longer field is the record's own text, not a body's preview, and ends the
  lookup. A word the field cut off at its end is dropped, and its first ``OPENING_WORDS``
  content words are searched lexically (1 read) within the body streams and the hit's
  connection, at most ``BODY_CANDIDATES`` candidates.
- Each candidate is read with ``fields=<foreign key>`` (concurrently, ``BODY_CANDIDATES``
  reads: one) and kept only when that value equals the hit's record id: the first kept in
  the search's rank order is the body, never another message's body that happens to hold
  the same words.
- Answers the body (its ``RecordRef`` in the hit's connection and its text field) or
  ``None`` on any failure: no body stream, no opening, no candidate, a mismatch, an RS
  error. In all at most ``2 + BODY_CANDIDATES`` reads; the caller then reads the body's
  field for its passage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pdpp_gateway.context import RsReader
from pdpp_gateway.documents import TITLE_FIELDS
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.question.words import content_words
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.schema_view import compact_projection, unwrap_schema
from pdpp_gateway.tools.passage_reads import scan_field

# the restricted search's hits, each verified by its foreign key (one read each): of the 17
# lookups questions.json makes on the sandbox, each found its own body first or not among the
# first two, so a second candidate costs a read and finds nothing
BODY_CANDIDATES: Final = 1
OPENING_WORDS: Final = 8  # content words of the hit's opening searched (all must be in the body)
OPENING_CHARS: Final = 512  # a longer text field is the record's own text, not a body's preview


@dataclass(frozen=True, slots=True)
class BodyStream:
    name: str
    foreign_key: str  # its field naming the hit's record, e.g. message_id
    text_field: str | None  # its long text field, None when the schema's flags do not say


@dataclass(frozen=True, slots=True)
class Body:
    ref: RecordRef
    field: str  # the long text field to read for the passage


async def find_body(rs: RsReader, schema: Mapping[str, Any] | None, hit: Mapping[str, Any]) -> Body | None:
    """The verified body record of ``hit`` (a search result), or ``None`` (see the contract)."""
    stream, record_id, connection = hit.get("stream"), hit.get("record_id"), hit.get("connection_id")
    if not (isinstance(stream, str) and isinstance(record_id, str) and isinstance(connection, str)):
        return None
    bodies = body_streams(schema, stream, connection)
    opening_field = _opening_field(schema, stream, connection, hit.get("matched_fields") or ())
    if not bodies or opening_field is None:
        return None
    try:
        words = await _opening_words(rs, RecordRef(stream, record_id, connection), opening_field)
        if not words:
            return None
        query = [("q", " ".join(words)), *(("streams", b.name) for b in bodies)]
        found = await rs.get_json(
            "/v1/search", [*query, ("connection_id", connection), ("limit", str(BODY_CANDIDATES))]
        )
        by_name = {body.name: body for body in bodies}
        candidates = [
            (by_name[str(item.get("stream"))], str(item.get("record_key")), item.get("matched_fields"))
            for item in (as_mapping(each) for each in found.body.get("data") or ())
            if item.get("stream") in by_name and item.get("record_key")
        ][:BODY_CANDIDATES]
        owners = await asyncio.gather(
            *(
                _value(rs, RecordRef(body.name, key, connection), body.foreign_key)
                for body, key, _ in candidates
            )
        )
    except RsError:
        return None
    for (body, key, matched), owner in zip(candidates, owners, strict=True):
        if owner != record_id:
            continue  # another record's body holding the same words: never shown for this hit
        field = body.text_field or _first_text(matched)
        return Body(RecordRef(body.name, key, connection), field) if field else None
    return None


def body_streams(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> list[BodyStream]:
    """The granted streams that hold the long text of ``stream``'s records (see the contract)."""
    connector = _connector_of(schema, stream, connection_id)
    if connector is None:
        return []
    key = f"{_singular(stream)}_id"
    found = []
    for row in connector.get("streams") or ():
        flags = {str(name): str(value) for name, value in as_mapping(row.get("field_capabilities")).items()}
        if row.get("name") == stream or key not in flags or "g=false" in flags[key].split(","):
            continue
        text = _text_field(flags)
        if text is not None or all(value == "declared" for value in flags.values()):
            found.append(BodyStream(str(row.get("name")), key, text))
    return found


def _connector_of(
    schema: Mapping[str, Any] | None, stream: str, connection_id: str
) -> Mapping[str, Any] | None:
    """The connector of ``stream`` in the grant's schema, narrowed to ``connection_id``."""
    if schema is None:
        return None
    document = compact_projection(unwrap_schema(schema), connection_id=connection_id)
    for connector in document.get("connectors") or ():
        if any(row.get("name") == stream for row in connector.get("streams") or ()):
            return as_mapping(connector)
    return None


def _opening_field(
    schema: Mapping[str, Any] | None, stream: str, connection_id: str, matched: Sequence[Any]
) -> str | None:
    """The hit's text field: its stream's ``role=text`` field (a matched one first), else,
    when the schema's flags say no role, its first matched field that is no title."""
    connector = _connector_of(schema, stream, connection_id)
    rows = [row for row in (connector or {}).get("streams") or () if row.get("name") == stream]
    flags = {str(k): str(v) for row in rows for k, v in as_mapping(row.get("field_capabilities")).items()}
    texts = [name for name, value in flags.items() if "role=text" in value.split(",")]
    if texts:
        return next((str(name) for name in matched if str(name) in texts), texts[0])
    return _first_text(matched)


def _first_text(matched: object) -> str | None:
    names = [str(name) for name in matched] if isinstance(matched, list | tuple) else []
    return next((name for name in names if name not in TITLE_FIELDS), None)


def _text_field(flags: Mapping[str, str]) -> str | None:
    """A stream's long text field: ``role=text`` first, else any lexically searchable field
    that is no title or metadata."""
    for wanted in ("role=text", "lex"):
        for name, value in flags.items():
            parts = value.split(",")
            if wanted in parts and not {"role=title", "role=metadata"} & set(parts):
                return name
    return None


def _singular(stream: str) -> str:
    if stream.endswith("ies"):
        return stream[:-3] + "y"
    return stream[:-1] if stream.endswith("s") else stream


async def _opening_words(rs: RsReader, ref: RecordRef, field: str) -> list[str]:
    """The content words of the record's ``field``, but a last word the field cut off; none
    when the field is longer than ``OPENING_CHARS`` (the record's own text, not a preview)."""
    scanned = await scan_field(rs, ref, field, OPENING_CHARS)
    if scanned.total > OPENING_CHARS:
        return []
    text = scanned.text
    opening = text.rstrip("…").rstrip()
    if opening and (opening[-1].isalnum() or text.endswith("…")):  # cut off, perhaps mid-word
        opening = opening[: opening.rfind(" ")] if " " in opening else ""
    return content_words(opening)[:OPENING_WORDS]


async def _value(rs: RsReader, ref: RecordRef, field: str) -> object:
    """One field of one record (``fields=<field>``)."""
    response = await rs.get_json(
        rs_path("v1", "streams", ref.stream, "records", ref.record_id),
        [("fields", field), ("connection_id", str(ref.connection_id))],
    )
    return as_mapping(response.body.get("data")).get(field)
