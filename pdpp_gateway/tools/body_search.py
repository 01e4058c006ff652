"""The long text behind a short hit: the grant's body streams, searched on the question.

A mail's ``messages`` record holds its subject and a snippet (the body's first ~90
characters); its long text is a separate record of ``message_bodies`` whose ``message_id``
names the message. When the best short hit of an answer does not answer, the fact usually
lies in a body, and often not in that hit's own: many messages share a subject (replies,
reminders, newsletters) while one body holds the fact. So the body streams are searched on
the question itself, and the body found stands as a hit of its own: it is never claimed as
the short hit's body (client tokens cannot expand or filter, and proving an owner costs a
read per candidate).

Contract (GETs only, through the caller's own client):

- ``body_streams(schema, stream, connection_id)`` reads the grant's compact schema: the
  streams of the hit's connector readable through the hit's connection, other than the
  hit's own, with a granted field ``<singular of the hit's stream>_id`` (``message_id`` for
  ``messages``) and a searchable text field (flag ``role=text``, else ``lex``; a schema
  whose flags say nothing, as the reference's ``declared``, leaves the field to the
  search's ``matched_fields``). None: no search and no read at all.
- ``search_bodies(rs, bodies, query, path, within)`` is one search on ``path`` (the route of
  the meaning-based mode the RS publishes, for the question as asked) restricted to those
  streams, in every connection of the grant that has them unless ``within`` names one, at
  most ``BODY_CANDIDATES`` hits in the RS's rank order. RS failures propagate as
  ``RsError``.
- ``text_field(bodies, hit)`` is the field of a found body to read for its passage: its
  stream's text field, else the first of its ``matched_fields`` that is no title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pdpp_gateway.context import RsReader
from pdpp_gateway.documents import TITLE_FIELDS
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.schema_view import compact_projection, unwrap_schema
from pdpp_gateway.tools.args import Pairs

# the restricted search's hits: the best one is read unless a scan read it or a hit shows its
# evidence already (then the search found nothing new: a second candidate, tried on
# questions.json, showed only noise, at two reads)
BODY_CANDIDATES: Final = 1


@dataclass(frozen=True, slots=True)
class BodyStream:
    name: str
    text_field: str | None  # its long text field, None when the schema's flags do not say


async def search_bodies(
    rs: RsReader, bodies: Sequence[BodyStream], query: str, path: str, within: Pairs = ()
) -> RsResponse:
    """The search on ``path`` for ``query`` within the ``bodies`` streams and the ``within``
    parameters (the caller's ``connection_id``), see the contract."""
    streams = [("streams", body.name) for body in bodies]
    return await rs.get_json(path, [("q", query), *streams, *within, ("limit", str(BODY_CANDIDATES))])


def text_field(bodies: Sequence[BodyStream], hit: Mapping[str, Any]) -> str | None:
    """The long text field of ``hit``, a record of one of the ``bodies`` streams."""
    named = next((body.text_field for body in bodies if body.name == hit.get("stream")), None)
    if named is not None:
        return named
    matched = hit.get("matched_fields")
    names = [str(name) for name in matched] if isinstance(matched, list | tuple) else []
    return next((name for name in names if name not in TITLE_FIELDS), None)


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
            found.append(BodyStream(str(row.get("name")), text))
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
