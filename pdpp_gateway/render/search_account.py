"""The lines of a search text that say how its page was found and where to go on from it.

Contract (plain values in, one line of text out; no I/O): ``render.search`` places them above
the hits.

- ``fused_line(retrieval, question, hits, members)``: how a fused answer was found, in one line:
  why it was fused, each search and its hit count (the question as asked is "the question"),
  the long texts and the threads read (a package's: each source's first hit's), and, when it
  has hits, how they are ordered (one judge for every source).
- ``older_thread_line(args, retrieval)``: for a first hit whose thread is older than its part
  stream's newest page, the search of that stream that finds its parts by their words.
- ``package_order_line(package)``: a merged page of a pinned mode is round-robin by each
  source's own rank (RS scores of different sources are not comparable).
- ``fused_more``, ``hybrid_more``: what to do when more hits exist and the page has no cursor:
  the lexical search that pages, a larger ``limit``, narrower ``streams``.
- ``nothing_lexical(args, searched)``: why a lexical search found nothing, with the ready call
  of its most distinctive words, or ``FIELD_VALUE``: a read of the likely stream.
- ``stream_hint_line``, ``other_streams_line``: a stream the question names, with the read that
  answers from it; the grant's other streams when no hit shows a word of the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pdpp_gateway.render.common import (
    FEWER_WORDS_AND_MEANING,
    NO_RECORD_HAS_EVERY_WORD,
    WORDS_AND_MEANING,
    again,
    as_mapping,
    call_text,
    clip,
    dumps,
)
from pdpp_gateway.tools.args import SearchArgs
from pdpp_gateway.tools.specs import MAX_PAGE_LIMIT

_WHY: Final = {  # why a page is fused, in the line that explains it
    WORDS_AND_MEANING: "words and meaning searched side by side",
    FEWER_WORDS_AND_MEANING: "fewer words and meaning",
    NO_RECORD_HAS_EVERY_WORD: "no record holds every word",
}
FIELD_VALUE: Final = (  # what to try when no search finds the answer
    "when the answer is a field value, query_records on the likely stream reads its newest "
    "records first, with fields for only those that hold it (schema() lists the streams and "
    "their fields)."
)
MEANING_MODES: Final = frozenset({"hybrid", "semantic"})  # the searches that find records near a meaning


def package_order_line(package: Mapping[str, Any]) -> str:
    """How a merged package page of a pinned mode is ordered: round-robin (RS scores of
    different sources are not comparable)."""
    sources = ", ".join(str(source) for source in (package.get("source_order") or ())[:8])
    return clip(
        f"order: round-robin by each source's own rank, sources in fixed order ({sources}); "
        "scores of different sources are not comparable.",
        240,
    )


def fused_line(retrieval: Mapping[str, Any], question: str, hits: bool, members: int) -> str:
    """How a fused answer was found, in one line: why, each search and its hit count (the
    question as asked is "the question"), the long texts and thread read, and the order of its
    ``hits`` when it has some."""
    searched = [as_mapping(s) for s in retrieval.get("searched") or ()]
    lists = [
        f"{s.get('mode')} {'on the question' if s.get('query') == question else dumps(s.get('query'))} "
        f"({s.get('hits')}{'+, too common: set aside' if s.get('set_aside') else ''})"
        for s in searched
        if not s.get("streams")
    ]
    lists += [
        _thread_part(s, members)
        if s.get("mode") == "thread"
        else f"{', '.join(str(n) for n in s.get('streams') or ())} by {s.get('mode')} for a short hit's "
        f"long text ({s.get('hits')}, the best at that hit's rank)"
        for s in searched
        if s.get("streams")
    ]
    why = _WHY.get(str(retrieval.get("why")), _WHY[NO_RECORD_HAS_EVERY_WORD])
    sources = retrieval.get("sources")
    where = (  # a page with hits names its sources on a line of its own: here only those that fused
        f" in {', '.join(str(s) for s in sources[:8])}"
        if isinstance(sources, list) and (len(sources) < members or not hits)
        else ""
    )
    found = f"Fused{where}: {why}; {' + '.join(lists)}."
    if not hits:
        return found
    return f"{found} Ordered by best sentence and search rank, one judge for every source. Meaning-based hits are approximate: check the evidence."


def _thread_part(searched: Mapping[str, Any], members: int) -> str:
    """The first hit's thread as read (``retrieval.threads``; a package's members' first hits'):
    how many of its parts the judge weighed with the page, or that its parts are older than the
    part stream's newest page (``older_thread_line`` says where they are)."""
    streams = ", ".join(str(name) for name in searched.get("streams") or ())
    whose = "each source's first hit's threads" if members > 1 else "the first hit's thread"
    if searched.get("older_than"):
        return f"{whose} in {streams} (its parts are older than the newest {searched['older_than']})"
    count = searched.get("hits")
    if not count:  # a chat message without replies, a thread whose parts the page shows already
        return f"{whose} in {streams} (no part to add)"
    return f"{whose} in {streams} ({count} part{'' if count == 1 else 's'} judged with the page)"


def older_thread_line(args: SearchArgs, retrieval: Mapping[str, Any]) -> str | None:
    """For a first hit whose thread is older than its part stream's newest page: the search of
    that stream that finds its parts by their words, on a line of its own (never clipped)."""
    for searched in (as_mapping(s) for s in retrieval.get("searched") or ()):
        if searched.get("mode") == "thread" and searched.get("older_than"):
            streams = [str(name) for name in searched.get("streams") or ()]
            call = call_text("search", again(args.arguments, streams=streams))
            return f"The first hit's thread is older than the parts read: {call} finds them by their words."
    return None


def stream_hint_line(hint: Mapping[str, Any]) -> str:
    """A stream the question names (``retrieval.stream_hints``), with the read that answers from it."""
    words = ", ".join(dumps(word) for word in hint.get("words") or ())
    fields = ", ".join(str(field) for field in hint.get("fields") or ())
    call = as_mapping(hint.get("call"))
    why = (
        "is the nearest the question in meaning"
        if hint.get("by") == "meaning"
        else f"matches {words}{f' (fields {fields})' if fields else ''}"
    )
    return (
        f"Structured data may answer this: stream {hint.get('stream')} of {hint.get('source')} {why}; "
        f"its records {hint.get('order')}: "
        + call_text(str(call.get("tool")), as_mapping(call.get("arguments")))
    )


def other_streams_line(others: Sequence[Mapping[str, Any]], hits: bool) -> str:
    """The grant's streams no hit is of, for a page that shows none of the question's words
    (``retrieval.other_streams``): its hits are guesses by meaning, or it has none."""
    listed = "; ".join(
        f"{entry.get('source')}"
        + (f" (connection_id {entry['connection_id']})" if entry.get("connection_id") else "")
        + f": {', '.join(str(name) for name in entry.get('streams') or ())}"
        for entry in others
    )
    found = "No hit shows a word of the question: these are guesses by meaning." if hits else "No hit."
    return (
        f"{found} The answer may be data no "
        f"text search finds, in the grant's other streams: {listed}. Read one with query_records "
        "(its stream, and its connection_id where given), or see its fields with schema."
    )


def fused_more(args: SearchArgs, retrieval: Mapping[str, Any]) -> str:
    """A fused page has no cursor: the lexical search among its lists is the one that pages
    (the first that found something: a pair of words no record holds together pages nothing)."""
    lists = [as_mapping(s) for s in retrieval.get("searched") or () if as_mapping(s).get("mode") == "lexical"]
    lexical = next(
        (s for s in lists if s.get("hits") and not s.get("set_aside")), lists[0] if lists else None
    )
    if lexical is None:
        return f"More hits exist; a fused answer has no next page: raise limit (up to {MAX_PAGE_LIMIT}) or narrow with streams."
    paged = again(args.arguments, query=lexical.get("query"), mode="lexical")
    return f"More hits exist; a fused answer has no next page: page its lexical hits with {call_text('search', paged)}"


def hybrid_more(args: SearchArgs) -> str:
    """What to do when hybrid says more hits exist: it has no cursor (the RS refuses one)."""
    raise_limit = "" if args.limit == MAX_PAGE_LIMIT else f"raise limit (up to {MAX_PAGE_LIMIT}), "
    paged = again(args.arguments, without=("mode",), mode="lexical")
    return (
        "More hits exist, but hybrid search has no next page (no cursor): "
        f"{raise_limit}narrow with streams or connection_id, or page through them with lexical "
        f"search, which has a cursor: {call_text('search', paged)}"
    )


def nothing_lexical(args: SearchArgs, searched: object) -> str:
    """Why a lexical search found nothing, and the ready call to try next: its two most
    distinctive words, unless they are what was searched (``searched``: the words the gateway
    sent, when not the query as asked); for a field value, a read of the likely stream that
    every caller can make (a client grant token cannot filter: the RS refuses ``filter`` for it)."""
    fewer = " ".join(args.question.distinctive())
    step = "Lexical search needs every word of the query in one record, and none has them all. "
    if fewer and fewer not in (args.text, searched):
        relaxed = call_text("search", again(args.arguments, query=fewer))
        return f"{step}Try its most distinctive words: {relaxed}; or, {FIELD_VALUE}"
    return f"{step}Or, {FIELD_VALUE}"
