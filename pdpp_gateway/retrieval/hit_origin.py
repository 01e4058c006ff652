"""Who sent a hit and when: the record itself when it says so, else the record it belongs to.

A question asking who sent something or when it came ("did the landlord send the new
lease", "who manages my pension", "on what date did I get the mechanic's report") is
answered by a mail's sender, date and subject. A search hit carries none of them (the RS
sends no record payload with a hit), and a mail's body rarely says them.

Contract (``add_origin(rs, schema, hit)``, GETs only through the caller's own client):

- A hit of a stream with origin fields (``linked_streams.origin_fields``: a mail's
  message) is read with ``fields=`` those fields: 1 read.
- A hit of a stream whose records belong to one that has them
  (``linked_streams.parent_link``: a mail's body) has its link field read (1 read; none when
  the hit was folded with that record, ``linked_hits``: it names it already), then
  the record that field names, with ``fields=`` that record's title and origin fields (1
  read), in the hit's connection.
- The hit then carries ``origin``: ``{id, stream, title?, fields}``: the handle of the
  record read (its own, or the one it belongs to), that record's title when it is another
  record, and the origin values read that are not empty.
- Nothing is added (after at most the reads made) when the schema names no origin, a read
  fails, the link is empty or names no id, or no value is left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pdpp_gateway.context import RsReader
from pdpp_gateway.ids import RecordRef, format_handle, parse_handle
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.retrieval.linked_streams import origin_fields, parent_link
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError


async def add_origin(rs: RsReader, schema: Mapping[str, Any] | None, hit: dict[str, Any]) -> None:
    """Set ``hit["origin"]``: who sent its record and when (see the module contract)."""
    stream, record_id, connection = hit.get("stream"), hit.get("record_id"), hit.get("connection_id")
    if not (isinstance(stream, str) and isinstance(record_id, str) and isinstance(connection, str)):
        return
    own = origin_fields(schema, stream, connection)
    try:
        if own is not None:
            values = await record_fields(rs, RecordRef(stream, record_id, connection), own.fields)
            origin = {"id": hit.get("id"), "stream": stream}
        elif (link := parent_link(schema, stream, connection)) is not None:
            parent = _known_parent(hit, link.stream) or (
                await record_fields(rs, RecordRef(stream, record_id, connection), (link.key,))
            ).get(link.key)
            if not isinstance(parent, str) or not parent:
                return
            wanted = (*((link.origin.title,) if link.origin.title else ()), *link.origin.fields)
            values = await record_fields(rs, RecordRef(link.stream, parent, connection), wanted)
            origin = {"id": format_handle(link.stream, parent, connection), "stream": link.stream}
            if link.origin.title and values.get(link.origin.title):
                origin["title"] = str(values.pop(link.origin.title))
        else:
            return
    except RsError:
        return
    shown = {name: value for name, value in values.items() if value not in (None, "", [])}
    if shown:
        hit["origin"] = {**origin, "fields": shown}


async def record_fields(rs: RsReader, ref: RecordRef, fields: Sequence[str]) -> dict[str, Any]:
    """The ``fields`` of one record (``fields=`` projection)."""
    response = await rs.get_json(
        rs_path("v1", "streams", ref.stream, "records", ref.record_id),
        [("fields", ",".join(fields)), ("connection_id", str(ref.connection_id))],
    )
    data = as_mapping(response.body.get("data"))
    return {name: data.get(name) for name in fields}


def _known_parent(hit: Mapping[str, Any], stream: str) -> str | None:
    """The id of the record of ``stream`` that ``hit`` was folded with (``linked_hits``), if any."""
    folded = hit.get("body_of") or hit.get("thread_of")
    if not isinstance(folded, str):
        return None
    ref = parse_handle(folded)
    return ref.record_id if ref.stream == stream else None
