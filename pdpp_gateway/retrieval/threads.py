"""The thread behind a hit: an issue and its comments, a conversation and its turns, a chat
message and its replies.

A record can have parts in another stream of its connector: an issue's comments, a
conversation's messages (a ``has_many`` relation its stream declares in the grant's schema,
``linked_streams.body_streams`` with ``whole`` false). A chat's messages reply to each other
in their own stream (``linked_streams.reply_link``: Slack's ``thread_ts`` names the thread's
first message): "yours for 65 euros" answers the post that offered a bike rack for €90, and
a search finds the post. A conversation's turns name the turn they answer (``parent_id``): a
search for what a person asked an assistant finds their own question, and the answer is the
turn after it. A question about an issue is often answered in a later comment whose words are
not the question's (the release named, for "which version has the fix"), and a search finds
the issue by its title, not that comment.
Client tokens can neither filter nor expand, so the gateway reads the part stream's newest
page (one GET per part stream and connection, ``THREAD_PAGE`` records, only the field naming
the parent, the text field and, for replies, the field they name their first message by, or
who wrote each turn) and keeps the parts of the first hit's thread.

Contract (``add_thread_parts(context, hits, args, schema, searched)``, step 3 of
``retrieval.search``; GETs only, through the caller's own client; a failed read leaves the
page as it was; only part streams among the caller's ``streams`` when it named some, none
under a ``filter``):

- The first hit (the fused order, before the judge) names the thread read: a hit of a parent
  stream is its own thread's head; a hit of a part stream belongs to the thread its record
  names (known once the part page is read); a chat message is the first of its own thread
  unless its record names another's (a reply); a turn that names the turn it answers heads
  the turns that answer it, unless the assistant wrote it (its speaker field says
  ``ASSISTANT``): the turn after an answer is the person's next question, no answer. Reading
  the threads of more hits answered no more questions on the dev split, at more reads.
- Each thread's parts on that page that the page does not already show with evidence are
  scored by the page's judge (``question.relevance``: each part's best sentence by meaning,
  the question's words weighted by their rarity among the thread's parts, the kind of value
  asked for); the ``THREAD_PARTS`` it scores highest join the page right after the first hit,
  best first, each a hit of its own with its best answer window (``sentences.answer_windows``)
  as its evidence (its whole text when it fits one: ``passage_reads.windows_evidence``),
  ``found_by: ["thread"]`` and ``thread_of``: the head's id (the text says ``in thread <id>``;
  none when a reply's first message is not on the page read). They are candidates like every
  hit: the page's one judge orders them with the rest and the page keeps its best
  (``fused``). Parts are scored against each other, not each by its own window: a window's
  words are weighted by their rarity in its own text, so a short comment that names the
  release ranked below a long one that repeats the question's words, whatever each held. On
  the dev split, joining one part answered 56 of 85 first; two 57, four 59, six 59 (by window
  scores).
- Each part page read is added to ``searched``: ``{mode: "thread", streams, hits}`` (hits: the
  parts joined for the judge).
- A thread older than the part stream's newest page is not seen: nothing joins for it, and when
  older parts exist (the page's ``has_more``) the entry says
  ``older_than: THREAD_PAGE``, so the text can offer the search of the part stream that finds
  them by their words. Not for a chat message: most have no replies at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pdpp_gateway import documents
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import format_handle
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.relevance import judge
from pdpp_gateway.question.sentences import Window, answer_windows
from pdpp_gateway.retrieval.linked_streams import body_streams, parent_link, reply_link
from pdpp_gateway.retrieval.pages import naming
from pdpp_gateway.retrieval.passage_reads import ScannedField, windows_evidence
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.tools.args import SearchArgs

THREAD_PAGE: Final = 100  # the RS's largest records page
THREAD_PARTS: Final = 4  # the parts of the first hit's thread that join the page's candidates
ASSISTANT: Final = "assistant"  # who wrote an answer, in a conversation with an assistant (its turn's role)


@dataclass(frozen=True, slots=True)
class PartStream:
    name: str  # the stream of the parts (issue_comments)
    parent: str  # the stream of the threads' heads (issues)
    key: str  # its field naming the head (issue_id)
    text: str  # its long text field (body)
    connection_id: str
    head_key: str | None = None  # the head's field its key names (a chat's ts); None: the head's id
    direct: bool = False  # its key names the record it answers (parent_id), not its thread's first
    speaker: str | None = None  # a direct link's field saying who wrote a record (a turn's role)

    @property
    def replies(self) -> bool:
        """Whether its records reply to each other (a chat's messages), not to another stream's."""
        return self.name == self.parent


@dataclass(frozen=True, slots=True)
class Part:
    stream: PartStream
    record_id: str
    parent: str | None  # the head it names (None: it names none, as a chat's first message)
    head: str  # what a part of its own thread names it by (its head_key's value, else its id)
    text: str
    speaker: str | None = None  # who wrote it, where its stream says (a turn's role)


async def add_thread_parts(
    context: GatewayContext,
    hits: list[dict[str, Any]],
    args: SearchArgs,
    schema: Mapping[str, Any] | None,
    searched: list[dict[str, Any]],
) -> None:
    """The best parts of the first hit's thread, joined to the page after it (see the module
    contract)."""
    if not hits or any(name == "filter" for name, _ in args.scope):
        return  # a filter names one stream: its hits have no thread to read
    named = {value for name, value in args.scope if name == "streams"}
    first = hits[0]
    streams = [stream for stream in part_streams(schema, first) if not named or stream.name in named]
    pages = await asyncio.gather(*(read_parts(context, stream) for stream in streams))
    read = [(stream, page) for stream, page in zip(streams, pages, strict=True) if page is not None]
    entries = {stream.name: {"mode": "thread", "streams": [stream.name], "hits": 0} for stream, _ in read}
    searched.extend(entries.values())
    for stream, (found, more) in read:
        parent = parent_of(first, stream, found)
        if parent is None:
            continue
        thread = parts_of(found, parent)
        if not thread and more and not stream.replies:  # its parts are older than the page read
            entries[stream.name]["older_than"] = THREAD_PAGE
        shown = {str(hit.get("id")) for hit in hits if hit.get("evidence")}
        candidates = [part for part in thread if part_handle(part) not in shown]
        best = await asyncio.to_thread(_best_parts, args.question, candidates)
        entries[stream.name]["hits"] = len(best)
        head = (
            parent
            if stream.head_key is None
            else next((p.record_id for p in found if p.head == parent), None)
        )
        thread_of = None if head is None else format_handle(stream.parent, head, stream.connection_id)
        joined = [
            _part_hit(*chosen, args.question, first, thread_of, context.provider_url) for chosen in best
        ]
        ids = {hit["id"] for hit in joined}
        lead = next((hit for hit in joined if hit["id"] == first.get("id")), first)  # a part, with its window
        rest = [each for each in hits[1:] if each.get("id") not in ids]
        hits[:] = [lead, *(hit for hit in joined if hit is not lead), *rest]
        return  # the first hit's thread: the first part stream that names its head


def parent_of(hit: Mapping[str, Any], stream: PartStream, found: Sequence[Part]) -> str | None:
    """What the parts of the thread ``hit`` heads or belongs to in ``stream`` name: its own id
    for a hit of the head stream, the head its record names for a part on the page read; for
    messages that reply to each other, the head a reply names, else the hit's own (its id when
    the head is named by id; unknown when its record is not on the page read); for turns that
    name the turn they answer, the hit's id; else ``None``."""
    if hit.get("connection_id") != stream.connection_id:
        return None
    record = str(hit.get("record_id"))
    own = next((part for part in found if part.record_id == record), None)
    if stream.direct:  # the records that answer the hit name it by its id; an answer's, a next question
        return None if own is not None and own.speaker == ASSISTANT else record
    if stream.replies:
        if own is None:
            return record if stream.head_key is None else None
        return own.parent if own.parent not in (None, own.head) else own.head
    if hit.get("stream") == stream.parent:
        return record
    if hit.get("stream") == stream.name:
        return None if own is None else own.parent
    return None


def parts_of(found: Sequence[Part], parent: str) -> list[Part]:
    """The parts on a page read that belong to the thread ``parent`` names, in the page's
    order (the head itself aside: a chat's first message is on its own stream's page)."""
    return [part for part in found if part.parent == parent and part.head != parent]


def part_streams(schema: Mapping[str, Any] | None, hit: Mapping[str, Any]) -> list[PartStream]:
    """The part streams of the thread ``hit`` heads or belongs to."""
    stream, connection = str(hit.get("stream")), hit.get("connection_id")
    if not isinstance(connection, str):
        return []
    link = parent_link(schema, stream, connection)
    found: dict[str, PartStream] = {}
    for head in [stream] if link is None else [link.stream, stream]:
        for body in body_streams(schema, head, connection):
            if not body.whole and body.text_field is not None:
                found.setdefault(
                    body.name, PartStream(body.name, head, body.key, body.text_field, connection)
                )
    reply = reply_link(schema, stream, connection)
    if reply is not None:  # messages that reply to each other: the stream is its own part stream
        found.setdefault(
            stream,
            PartStream(
                name=stream,
                parent=stream,
                key=reply.key,
                text=reply.text,
                connection_id=connection,
                head_key=reply.head,
                direct=reply.direct,
                speaker=reply.speaker,
            ),
        )
    return list(found.values())


async def read_parts(context: GatewayContext, stream: PartStream) -> tuple[list[Part], bool] | None:
    """The part stream's newest page, each record's parent, head and text, and whether older
    records exist (the RS's ``has_more``); ``None`` when the read fails."""
    fields = [stream.key, stream.text, *(name for name in (stream.head_key, stream.speaker) if name)]
    query = [("limit", str(THREAD_PAGE)), ("connection_id", stream.connection_id)]
    query += [("fields", name) for name in fields]
    try:
        response = await context.rs.get_json(rs_path("v1", "streams", stream.name, "records"), query)
    except RsError:
        return None
    found = []
    for record in response.body.get("data") or ():
        if not isinstance(record, Mapping):
            continue
        data = record.get("data")
        data = data if isinstance(data, Mapping) else {}
        parent, text = data.get(stream.key), data.get(stream.text)
        head = data.get(stream.head_key) if stream.head_key else record.get("id")
        if isinstance(text, str) and text.strip() and record.get("id") is not None and head is not None:
            named = parent if isinstance(parent, str) and parent else None
            speaker = data.get(stream.speaker) if stream.speaker else None
            written = speaker if isinstance(speaker, str) else None
            found.append(Part(stream, str(record["id"]), named, str(head), text, written))
    return found, response.body.get("has_more") is True


def part_handle(part: Part) -> str:
    """The id a page shows for ``part``'s record."""
    return format_handle(part.stream.name, part.record_id, part.stream.connection_id)


def _best_parts(question: Question, candidates: Sequence[Part]) -> list[tuple[Part, Window]]:
    """The ``THREAD_PARTS`` parts the page's judge scores highest, each with its best answer
    window, best first (see the module contract)."""
    relevance = judge(question, [[part.text] for part in candidates])
    best: list[tuple[Part, Window]] = []
    for index in sorted(range(len(candidates)), key=lambda index: -relevance[index].score):
        if len(best) == THREAD_PARTS:
            break
        if windows := answer_windows(question, candidates[index].text, 1):
            best.append((candidates[index], windows[0]))
    return best


def _part_hit(
    part: Part,
    window: Window,
    question: Question,
    head: Mapping[str, Any],
    thread_of: str | None,
    provider_url: str,
) -> dict[str, Any]:
    """The part as a page hit, its window (or its whole text) as its evidence."""
    stream = part.stream
    raw = {
        "stream": stream.name,
        "record_key": part.record_id,
        "connection_id": stream.connection_id,
        "display_name": head.get("display_name"),
        "connector_key": head.get("connector_key"),
        "matched_fields": [stream.text],
        "snippet": {"field": stream.text, "text": part.text[:200]},
    }
    hit = documents.search_results({"data": [raw]}, provider_url=provider_url)[0]
    scanned = ScannedField(part.text, len(part.text), stream.connection_id)
    hit["evidence"] = windows_evidence(scanned, [window], question, naming(hit), stream.text)
    hit["found_by"] = ["thread"]
    if thread_of is not None:
        hit["thread_of"] = thread_of
    return hit
