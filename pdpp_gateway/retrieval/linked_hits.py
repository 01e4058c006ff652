"""A record and its long text are one hit: a header on the page folds into its body or part beside it.

A mail's message (a subject and the body's first line) and its body, a conversation (a title)
and its turns are records of different streams, and one search can find both. Shown apart, the
header takes a place of its own, ranks on its subject alone, and offers a ``fetch`` that
answers the same line again, while the text that answers sits further down. A search hit does
not say which record it belongs to (the RS sends no payload with a hit, and client tokens can
neither expand nor filter), so the link is read: the field by which the linked record names its
parent (``<singular of the parent stream>_id``, as ``linked_streams.body_streams`` finds it).

Contract (``fold_linked(context, hits, page, schema)``, step 3 of ``retrieval.search``, on the
fused order before any passage is read; GETs only, through the caller's own client; a failed
read folds nothing):

- A hit among the ``HEADS`` best-ranked (where a header costs a place that matters) is a
  header when its stream has body or part streams in the grant's schema
  (``linked_streams.body_streams``): for a whole body (a mail's message) always, for the
  parts of a thread only when its stream has no text field and it shows no evidence (a
  conversation's title; an issue has a text of its own, and stays).
- When the first ``page`` hits hold headers, the best-ranked of them of a linked stream in a
  header's connection has its link field read (``fields=`` projection, 1 read; reading the
  next one's too folded no more on the dev split).
- When it names a header of the page, it takes the header's place if that is the better rank,
  and its title when the header has one of its own (a mail's subject); it carries ``body_of``
  (a whole body) or ``thread_of`` (a part): the header's id. The header leaves the page, and
  the hit after the ``page`` (the caller's reserve) moves into it.
- ``link_of(context, hit, key)`` is that one read; ``fold(hits, header, linked, parent,
  whole=...)`` the fold alone: both serve a link read elsewhere too (the body the body search
  finds for a short hit: ``evidence.scan_bodies``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.documents import made_title_part
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.retrieval.hit_origin import record_fields
from pdpp_gateway.retrieval.linked_streams import body_streams, text_field_of
from pdpp_gateway.rs.errors import RsError

HEADS: Final = 4  # the best-ranked hits that may be headers folded


@dataclass(frozen=True, slots=True)
class _Link:
    parent: str  # the header's stream (messages)
    key: str  # the linked record's field naming it (message_id)
    whole: bool  # one record holds the header's whole text (a mail's body), not a thread's part


async def fold_linked(
    context: GatewayContext, hits: list[dict[str, Any]], page: int, schema: Mapping[str, Any] | None
) -> None:
    """The best-ranked linked hit of the first ``page`` of ``hits`` folded with the header it
    names (see the module contract)."""
    links: dict[tuple[str, str], _Link] = {}  # (linked stream, connection) -> how it names a header
    headers: dict[tuple[str, str, str], dict[str, Any]] = {}  # (stream, connection, record id)
    for hit in hits[:HEADS]:
        stream, connection = hit.get("stream"), hit.get("connection_id")
        if not (isinstance(stream, str) and isinstance(connection, str)):
            continue
        titled = text_field_of(schema, stream, connection) is None  # no text of its own
        for body in body_streams(schema, stream, connection):
            if body.whole or (titled and not hit.get("evidence")):
                links.setdefault((body.name, connection), _Link(stream, body.key, body.whole))
                headers[(stream, connection, str(hit.get("record_id")))] = hit
    where = ((hit, (str(hit.get("stream")), str(hit.get("connection_id")))) for hit in hits[:page])
    linked, link = next(((hit, links[key]) for hit, key in where if key in links), (None, None))
    if linked is None or link is None:
        return
    owner = await link_of(context, linked, link.key)
    header = headers.get((link.parent, str(linked.get("connection_id")), str(owner)))
    if header is None or header is linked:  # it names no header of the page (or the read failed)
        return
    fold(hits, header, linked, link.parent, whole=link.whole)


async def link_of(context: GatewayContext, hit: Mapping[str, Any], key: str) -> str | None:
    """The id of the record that ``hit``'s link field ``key`` names (1 read, ``fields=``
    projection), in its connection; ``None`` when the read fails or the field names none."""
    ref = RecordRef(str(hit.get("stream")), str(hit.get("record_id")), str(hit.get("connection_id")))
    try:
        named = (await record_fields(context.rs, ref, (key,))).get(key)
    except RsError:
        return None
    return None if named is None else str(named)


def fold(
    hits: list[dict[str, Any]], header: dict[str, Any], linked: dict[str, Any], parent: str, *, whole: bool
) -> None:
    """``linked`` (a record of a stream linked to ``parent``, whose link names ``header``) folded
    with ``header`` in ``hits``: it carries ``body_of`` (``whole``) or ``thread_of`` and the
    header's own title, takes the header's place when that is the better, and the header leaves."""
    linked["body_of" if whole else "thread_of"] = header.get("id")
    title = str(header.get("title") or "")
    if title and made_title_part(parent, str(header.get("record_id"))) not in title:  # its own
        linked["title"] = title
    at = next(index for index, hit in enumerate(hits) if hit is header)
    del hits[at]
    place = next(index for index, hit in enumerate(hits) if hit is linked)
    if place >= at:  # the header's place was the better
        hits.insert(at, hits.pop(place))
