"""The thread under a fetched record: an issue's comments below the issue, as a person reads it.

A person who opens an issue reads the comments under it; the comment that names the release
with the fix, or the cause found two days later, is a record of its own, and a fetch of the
issue alone never shows it. A chat message's replies ("yours for 65 euros") and an assistant's
answer to a person's turn are the same: records of their own that answer the one fetched.

Contract (``thread_below(context, ref, used)``; GETs only, through the caller's own client: the
grant's compact schema through the caller's memo, and one page of each part stream, read the
way the search's thread step reads it, ``threads.read_parts``):

- Only for a head: a record of a stream whose records another stream's name as their thread
  (``threads.part_streams``: an issue, a conversation), a chat message that is not a reply
  itself, a person's turn (not the assistant's). A part fetched (a comment, a reply) answers
  itself alone; the thread it belongs to is its head's fetch.
- The parts on the page read that name it, oldest first (the RS pages newest first), each
  under a line naming its id (and who wrote it, where its stream says), each shown up to
  ``PART_CHARS`` characters (a longer one is cut, its fetch named), while the document's text
  (``used`` characters so far) stays within ``documents.FETCH_TEXT_CHARS``; the parts that do
  not fit are named by id on a closing line, at most ``NAMED_PARTS`` of them.
- Parts older than the newest page of their stream are not seen (the thread step's limit too).
- Answers the lines to append and their counts, or ``None``: no part stream, no part on the
  page naming the record, or a read failing (the fetch then answers the record alone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.documents import FETCH_TEXT_CHARS
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.retrieval.pages import granted_schema
from pdpp_gateway.retrieval.threads import (
    Part,
    PartStream,
    parent_of,
    part_handle,
    part_streams,
    parts_of,
    read_parts,
)

PART_CHARS: Final = 2_000  # the most of one part shown under its head
NAMED_PARTS: Final = 10  # the parts that do not fit, named by id on the closing line


@dataclass(frozen=True, slots=True)
class ThreadBelow:
    text: str  # the lines to append to the head's text
    stream: str  # the parts' stream
    shown: int  # parts shown (whole or cut)
    left: int  # parts that did not fit, named by id


async def thread_below(context: GatewayContext, ref: RecordRef, used: int) -> ThreadBelow | None:
    """The parts that answer the record ``ref``, whose document's text is ``used`` characters
    long, as lines to append to it (see the module contract)."""
    if ref.connection_id is None:
        return None
    record = {"stream": ref.stream, "record_id": ref.record_id, "connection_id": ref.connection_id}
    streams = part_streams(await granted_schema(context), record)
    pages = await asyncio.gather(*(read_parts(context, stream) for stream in streams))
    for stream, page in zip(streams, pages, strict=True):
        if page is None:
            continue
        parts = _answering(record, stream, page[0])
        if parts:
            return _lines(stream, parts, used)
    return None


def _answering(record: Mapping[str, Any], stream: PartStream, found: list[Part]) -> list[Part]:
    """The parts on the page read that answer ``record`` (as a hit names it: its stream,
    record id and connection), oldest first: none when it is a part itself."""
    own = next((part for part in found if part.record_id == record["record_id"]), None)
    if not stream.replies and record["stream"] != stream.parent:
        return []  # a comment: its thread is its issue's
    if stream.replies and not stream.direct and own is not None and own.parent not in (None, own.head):
        return []  # a reply: its thread is its first message's
    named = parent_of(record, stream, found)
    if named is None:
        return []
    return parts_of(found[::-1], named)


def _lines(stream: PartStream, parts: list[Part], used: int) -> ThreadBelow:
    """The parts as lines under their head, within the fetch's bound (see the module contract)."""
    lines: list[str] = []
    shown = 0
    for part in parts:
        handle = part_handle(part)
        who = f" ({part.speaker})" if part.speaker else ""
        text = part.text
        if len(text) > PART_CHARS:
            follow = orjson.dumps({"id": handle}).decode()
            text = f"{text[:PART_CHARS]}\n[… cut: showing {PART_CHARS} of {len(text)} chars: fetch {follow}]"
        block = f"\n\n--- {handle}{who} ---\n{text}"
        if used + len(block) > FETCH_TEXT_CHARS:
            break
        lines.append(block)
        used += len(block)
        shown += 1
    left = [part_handle(part) for part in parts[shown:]]
    if left:
        more = f" and {len(left) - NAMED_PARTS} more" if len(left) > NAMED_PARTS else ""
        lines.append(
            f"\n\n--- {len(left)} more in its thread ({stream.name}), not shown: fetch each by id: "
            f"{', '.join(left[:NAMED_PARTS])}{more} ---"
        )
    return ThreadBelow("".join(lines), stream.name, shown, len(left))
