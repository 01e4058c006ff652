"""The long text behind a short hit: the grant's body streams, searched on the question.

A mail's ``messages`` record holds its subject and a snippet (the body's first ~90
characters); its long text is a separate record of ``message_bodies`` whose ``message_id``
names the message. When the best short hit of an answer does not answer, the fact usually
lies in a body, and often not in that hit's own: many messages share a subject (replies,
reminders, newsletters) while one body holds the fact. So the body streams are searched on
the question itself, and the body found stands as a hit of its own, unless one read of its
link shows it is the short hit's own (``evidence.scan_bodies``; client tokens cannot expand
or filter, so only the body shown is checked, never every candidate).

Contract (GETs only, through the caller's own client; the grant's body streams of a hit's
stream are ``linked_streams.body_streams``):

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
from typing import Any, Final

from pdpp_gateway.context import RsReader
from pdpp_gateway.documents import TITLE_FIELDS
from pdpp_gateway.retrieval.linked_streams import BodyStream
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.tools.args import Pairs

# the restricted search's hits, one read: the first that no scan read and no hit shows is read
# (a body the page already shows is nothing new; reading a second new one, tried on
# questions.json, showed only noise, at two reads)
BODY_CANDIDATES: Final = 3


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
