"""A mail message's body, found for its fetch: a message's fetch leads to its text.

A mail's ``messages`` record holds its subject and a snippet (the body's first line); its text is
a record of a whole-body stream (``linked_streams.body_streams``: a mail's ``message_bodies``,
whose ``message_id`` names the message). A ``fetch`` of the message alone answers the snippet
again. Client tokens can neither expand nor filter, so the body is found the way a search finds
it: the body streams are searched by the snippet's words (the body's own opening, so the body
holds every one; a reply that quotes it does too, hence the check), and the first
``CANDIDATES`` hits are read, in the RS's order, until one's link field names the message.

Contract (``find_body(context, ref, text)``; GETs only, through the caller's own client):
``ref`` is the message as fetched (its connection known), ``text`` its snippet. Reads: the
grant's compact schema (the caller's memo), one lexical search, and a read of each candidate
body until the message's own (the first, unless a reply quoting it ranks higher; at most
``CANDIDATES``). Answers the body's record as the RS sent it, or ``None``:
no whole-body stream for the message's stream, a snippet with fewer than ``LEAST_WORDS`` words,
no candidate naming the message, or any read failing (the fetch then answers the message alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.question.words import WORD
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.retrieval.linked_streams import body_streams
from pdpp_gateway.retrieval.pages import SEARCH_PATHS, granted_schema, page_hits
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError

CANDIDATES: Final = 3  # the body hits read for their link: the body itself, and replies quoting it
LEAST_WORDS: Final = 3  # fewer words single out no body


async def find_body(context: GatewayContext, ref: RecordRef, text: str) -> Mapping[str, Any] | None:
    """The record of the body of the message ``ref``, whose snippet is ``text`` (see the contract)."""
    words = WORD.findall(text)[:-1]  # the last may be cut short
    if ref.connection_id is None or len(words) < LEAST_WORDS:
        return None
    schema = await granted_schema(context)
    bodies = [body for body in body_streams(schema, ref.stream, ref.connection_id) if body.whole]
    if not bodies:
        return None
    query = [("q", " ".join(words)), *(("streams", body.name) for body in bodies)]
    query += [("connection_id", ref.connection_id), ("limit", str(CANDIDATES))]
    try:
        found = page_hits(context, await context.rs.get_json(SEARCH_PATHS["lexical"], query))
        for hit in found[:CANDIDATES]:
            body = next((body for body in bodies if body.name == hit.get("stream")), None)
            if body is None:
                continue
            path = rs_path("v1", "streams", body.name, "records", str(hit.get("record_id")))
            read = await context.rs.get_json(path, [("connection_id", ref.connection_id)])
            if str(as_mapping(read.body.get("data")).get(body.key)) == ref.record_id:
                return read.body
    except RsError:
        return None
    return None
