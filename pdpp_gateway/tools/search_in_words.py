"""Search in a person's words: the question's own words first, then meaning and fewer words, fused.

Contract (a ``search`` that pins no ``mode``; a pinned mode is exactly that mode, one RS read):

1. Lexical search on the question's content words (``words.content_words``: stop words and
   question words dropped; the whole question when none is left). Its ``next_cursor`` pages
   on with the same words, so the text's next-page call (the question again, with the
   cursor) stays valid. A page with hits is the answer: one RS read, each hit's evidence
   the RS's own snippet of its densest window; but when the first hit's snippet of a long
   field lacks some of the question's words (the RS shows its densest window: "school trip"
   of "what do I need to bring on the school trip"; not for a question asking who or when:
   step 5 answers it), or, for a question asking for a figure, shows none, that field is
   read for its passages as step 3 reads one (``_first_passage``: one or two field windows
   more). Not so a page that meets a question of two (``FEW_WORDS``) content words by
   coincidence: every hit shows evidence, and no sentence of its title or evidence holds
   two of the words (``_words_apart``; "sign the key receipt. ... has to be ordered" for
   "the receipt for something I ordered"): step 2 runs as for an empty page, this page's
   hits the first list it fuses (``why``: ``WORDS_ONLY_APART``).
2. An empty first page (no record holds every content word; in a package, no member's first
   page has a hit, ``package.first_pages``, else this member's page stays empty):
   concurrently, the meaning-based mode the RS publishes (``capabilities.hybrid_retrieval``,
   else ``semantic_retrieval``, read through the caller's memo) on the question as asked,
   and, when the question has more than ``RELAXED_WORDS`` content words, lexical search on
   its ``RELAXED_WORDS`` most distinctive (longest) ones. The lists are fused by reciprocal rank fusion (``RRF_K``): a record both
   found rises, each record once, ties to the lexical hit (it carries evidence), at most
   ``limit`` hits (``FUSED_LIMIT`` when the caller set none: approximate hits past the first
   ten cost a model more to read than they are worth; a package member answers its share of
   them). Either read failing leaves the other's hits; both failing is the meaning read's
   error. A fused page has no cursor (its lists page differently): the text offers the
   lexical search that pages.
3. Evidence that answers: the best-ranked hit whose long field the RS cut (a meaning-based
   hit, or a relaxed lexical hit whose snippet does not read as an answer: it holds fewer
   than half the question's words, or no number when the question asks for one,
   ``words.asks_for_figure``), when no better-ranked hit shows evidence that reads as an
   answer (a title holding half the question's words counts, and a number when the question
   asks for one), has that field read (``passage_reads.find_passage``, at most
   ``SCAN_CHARS``) and its best passage shown (``provenance: "passage"``; a figure question
   prefers a passage holding one) with the call that reads around it; when that passage
   lacks some of the question's words (or there is none), the sentence nearest the question
   in meaning (``meaning.closest_sentence``, computed in a thread) is shown after it, unless
   it lies inside it: a decoy repeating the question's common words outranks, on words, an
   answer that says them otherwise. While the passage found by words is weak (none, or fewer
   than half the question's words: a meaning-based rank is approximate, the record that
   answers is often the next one), the next such hit is read the same way, one after
   another, at most ``MAX_SCANS`` in all, never one record twice; a strong passage ends the
   reads. A hit whose snippet is the whole short field shows it with the question's words
   marked (``provenance: "meaning_match"``); every other cut hit carries ``read_near``, the
   ``read_record_field`` call aimed at the question (``near``). The best-ranked short hit
   whose stream has a body stream in the grant's schema (step 4's read; a mail's message,
   its snippet a preview of its body, so its words are no answer) and whose title does not
   answer has, in its rank's turn and counted among the ``MAX_SCANS``, the body streams
   searched on the question by the meaning-based mode (``body_search``: 1 read, within the
   caller's ``streams`` and ``connection_id``, none under a ``filter``); the body found, unless
   a scan read it or a hit shows its evidence already, is read as above (windows 1-2; a short
   body's whole snippet marked) and, when it shows evidence, stands as a hit of its own at
   that short hit's rank (it is not claimed as that hit's body: many messages share a
   subject), the search listed under ``retrieval.searched`` with its ``streams``. A failed
   scan or search only leaves the hits as they were.
4. Streams the question names: alongside step 2's reads, the grant's compact schema is read
   through the caller's memo (no RS read in steady state; after a first page with hits,
   only for step 5), and the streams whose name or fields the content words name, not among the
   hits, are offered as ready ``query_records`` calls under ``stream_hints``
   (``tools.stream_hints``), on a fused answer or an empty one. A failed schema read only
   drops them.
5. Where the first hit comes from: when the question asks who sent something or when it came
   (``words.asks_who_or_when``), the first hit of a first page with hits (after step 1's
   reads) or of a fused answer (after step 3's) gets ``origin``, its sender and date
   (``hit_origin``: 1 read for a mail's message, 2 for a mail's body, the grant's schema
   through the caller's memo).

Structured output says how the answer was found under ``retrieval``: ``{mode: "lexical",
searched}`` when words were dropped from a lexical page with hits, else ``{mode: "fused",
instead_of: "lexical", why, searched: [{mode, query, hits, streams?}], order}``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway import documents
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RecordRef, handle_arguments
from pdpp_gateway.question.meaning import closest_sentence
from pdpp_gateway.question.passages import Passage, best_passage, most_in_a_sentence, passage_at
from pdpp_gateway.question.words import (
    RELAXED_WORDS,
    asks_for_figure,
    asks_who_or_when,
    most_distinctive,
    stem,
)
from pdpp_gateway.render.common import NO_RECORD_HAS_EVERY_WORD, RETRIEVAL, WORDS_ONLY_APART, as_mapping
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.rs.memo import memoised_read
from pdpp_gateway.tools.args import SearchArgs
from pdpp_gateway.tools.body_search import search_bodies, text_field
from pdpp_gateway.tools.hit_origin import add_origin
from pdpp_gateway.tools.linked_streams import BodyStream, body_streams
from pdpp_gateway.tools.passage_reads import find_passage, passage_evidence
from pdpp_gateway.tools.stream_hints import add_stream_hints

SEARCH_PATHS: Final = {
    "lexical": "/v1/search",
    "semantic": "/v1/search/semantic",
    "hybrid": "/v1/search/hybrid",
}
FEW_WORDS: Final = 2  # a question of so few content words is met by coincidence as often as by answers
RRF_K: Final = 60
SCAN_CHARS: Final = 32_768  # two RS windows
MAX_SCANS: Final = 2  # cut hits read for a passage, the next only while the last one's was weak
FUSED_LIMIT: Final = 10  # a fused page's hits when the caller set no limit


async def search(context: GatewayContext, args: SearchArgs) -> ToolResult:
    """The answer to one search (see the module contract)."""
    if args.mode is not None:
        response = await context.rs.get_json(SEARCH_PATHS[args.mode], args.with_q(args.text))
        return _answer(context, response, _results(context, response))
    sent = " ".join(args.words) or args.text
    pages = context.first_pages
    try:
        response = await context.rs.get_json(SEARCH_PATHS["lexical"], args.with_q(sent))
    except BaseException:
        if pages is not None:
            pages.report(False)
        raise
    results = _results(context, response)
    apart = args.cursor is None and _words_apart(results, args.words)
    if not apart and (results or args.cursor is not None or response.body.get("has_more")):
        if pages is not None:
            pages.report(True)
        return await _lexical(context, args, sent, response, results)
    if pages is not None and await pages.any_found(False):  # another package member's page
        return await _lexical(context, args, sent, response, results)
    schema = asyncio.create_task(_granted_schema(context))  # read alongside the fused reads
    first = (sent, response, results) if apart else None
    try:
        answer = await _fused(context, args, schema, first) or await _lexical(
            context, args, sent, response, results
        )
    except BaseException:
        schema.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await schema
        raise
    add_stream_hints(answer.structured, await schema, args)
    return answer


async def _lexical(
    context: GatewayContext, args: SearchArgs, sent: str, response: RsResponse, results: list[dict[str, Any]]
) -> ToolResult:
    """A lexical page as the answer (step 1), the words ``sent`` said when some were dropped."""
    if not (results or args.cursor is not None or response.body.get("has_more")):
        return _answer(context, response, results)
    if args.cursor is None and results:
        await _first_passage(context, results[0], args)
        if asks_who_or_when(args.text):
            await add_origin(context.rs, await _granted_schema(context), results[0])
    retrieval = {"mode": "lexical", "searched": sent} if sent != args.text else None
    return _answer(context, response, results, retrieval)


async def _fused(
    context: GatewayContext,
    args: SearchArgs,
    schema: Awaitable[Mapping[str, Any] | None],
    first: tuple[str, RsResponse, list[dict[str, Any]]] | None,
) -> ToolResult | None:
    """Meaning and fewer words after an empty page, or beside a ``first`` page whose
    words are apart (its query, response and hits), fused, with passages (steps 2 and 3)."""
    meaning = await _meaning_mode(context)
    relaxed = (
        " ".join(most_distinctive(args.words, RELAXED_WORDS)) if len(args.words) > RELAXED_WORDS else None
    )
    reads: list[tuple[str, str]] = [("lexical", relaxed)] if relaxed else []
    if meaning is not None:
        reads.append((meaning, args.text))
    if not reads:
        return None
    outcomes = await asyncio.gather(
        *(context.rs.get_json(SEARCH_PATHS[mode], args.with_q(query)) for mode, query in reads),
        return_exceptions=True,
    )
    answered = [
        (mode, query, outcome, _results(context, outcome))
        for (mode, query), outcome in zip(reads, outcomes, strict=True)
        if isinstance(outcome, RsResponse)
    ]
    if first is not None and answered:  # its hits lead: they hold every word, if apart
        answered.insert(0, ("lexical", *first))
    if not answered:
        failure = outcomes[-1]
        if isinstance(failure, BaseException):
            raise failure
        return None
    if not any(results for *_, results in answered):
        return None
    pages = context.first_pages  # a package member's share, when the caller set no limit
    limit = pages.fused_limit if pages and pages.fused_limit else args.limit or FUSED_LIMIT
    fused = _rrf([results for *_, results in answered], limit)
    searched: list[dict[str, Any]] = [
        {"mode": mode, "query": query, "hits": len(results)} for mode, query, _, results in answered
    ]
    await _add_evidence(context, fused, args, await schema, searched, meaning)
    cut = len(fused) > limit  # a body found for the question took a place in the page
    del fused[limit:]
    if asks_who_or_when(args.text):
        await add_origin(context.rs, await schema, fused[0])
    base = answered[-1][2]
    retrieval = {
        "mode": "fused",
        "instead_of": "lexical",
        "why": WORDS_ONLY_APART if first is not None else NO_RECORD_HAS_EVERY_WORD,
        "searched": searched,
        "order": "reciprocal_rank_fusion",
    }
    structured = _envelope(context, base, fused, retrieval)
    data = structured["data"]
    data.pop("next_cursor", None)
    data["has_more"] = (
        cut
        or any(bool(response.body.get("has_more")) for _, _, response, _ in answered)
        or any(len(results) > limit for *_, results in answered)
    )
    return ToolResult(structured=structured)


def _rrf(lists: Sequence[list[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
    """One list from ranked lists: each record once, by the sum of ``1 / (RRF_K + rank)``,
    its first list's entry kept with the first evidence any list has for it (a lexical
    list's), ties to the earlier list."""
    scores: dict[str, float] = {}
    first: dict[str, tuple[int, int, dict[str, Any]]] = {}
    evidence: dict[str, Any] = {}
    found_by: dict[str, list[str]] = {}
    for index, hits in enumerate(lists):
        for rank, hit in enumerate(hits):
            key = str(hit.get("id"))
            scores[key] = scores.get(key, 0.0) + 1 / (RRF_K + rank + 1)
            first.setdefault(key, (index, rank, hit))
            if hit.get("evidence"):
                evidence.setdefault(key, hit["evidence"])
            found_by.setdefault(key, []).append(str(hit.get("retrieval_mode") or "lexical"))
    order = sorted(scores, key=lambda key: (-scores[key], first[key][0], first[key][1]))
    fused = []
    for key in order[:limit]:
        hit = dict(first[key][2])
        if key in evidence:
            hit["evidence"] = evidence[key]
        hit["found_by"] = found_by[key]
        fused.append(hit)
    return fused


async def _add_evidence(
    context: GatewayContext,
    hits: list[dict[str, Any]],
    args: SearchArgs,
    schema: Mapping[str, Any] | None,
    searched: list[dict[str, Any]],
    meaning: str | None,
) -> None:
    """Step 3 of the module contract: passages of the best cut hits (or of the body the
    question finds by the ``meaning`` mode for the best bare hit, its search added to
    ``searched``) while no better one answers, marked short snippets, and the aimed call for
    every other hit whose field was cut."""
    words = args.words or (args.text,)
    figure = asks_for_figure(args.text)
    scans: list[Callable[[], Awaitable[Passage | None]]] = []  # in rank order
    shown = False  # whether a better-ranked hit already shows evidence that reads as an answer
    bodied = False  # whether a body search is already among the scans
    read: set[str] = set()  # the hits whose field a scan read
    bodies_of: dict[tuple[object, object], list[BodyStream]] = {}  # per stream and connection

    def scan(hit: dict[str, Any], field: str) -> None:
        async def once() -> Passage | None:
            if hit.get("id") in read:  # the body search already read it, and moved it up
                return None
            read.add(str(hit.get("id")))
            return await _scan(context, hit, _naming(hit), field, words, args.text, figure=figure)

        scans.append(once)

    for hit in hits:
        evidence = hit.get("evidence") or []
        if evidence:  # the relaxed lexical search's own snippet of a field
            if _answers(evidence, words, figure):
                shown = True
            elif not shown and len(scans) < MAX_SCANS and evidence[0].get("truncated"):
                scan(hit, str(evidence[0].get("field")))
            continue
        if not hit.get("matched_fields"):
            continue
        field = str(hit["matched_fields"][0])
        snippet = str(hit.get("snippet") or "")
        if not snippet.endswith("…"):
            _mark_snippet(hit, field, snippet, words)
            titled = _answers([{"preview": hit.get("title")}], words, figure)
            where = (hit.get("stream"), hit.get("connection_id"))
            if where not in bodies_of:  # the grant's schema projected once per stream
                bodies_of[where] = _searchable_bodies(schema, hit, args)
            bodies = bodies_of[where]  # its snippet previews a body
            if meaning and bodies and not (shown or bodied or titled) and len(scans) < MAX_SCANS:
                bodied = True
                scans.append(partial(_scan_bodies, context, hit, bodies, hits, args, searched, read, meaning))
            shown = shown or titled or (not bodies and _answers(hit.get("evidence") or [], words, figure))
            continue
        hit["read_near"] = {
            "tool": "read_record_field",
            "arguments": {**_naming(hit), "field": field, "near": args.text},
        }
        if not shown and len(scans) < MAX_SCANS:
            scan(hit, field)
    for each in scans:  # one after another: a strong passage ends the scans
        passage = await each()
        if passage is not None and passage.answers:
            break


async def _first_passage(context: GatewayContext, top: dict[str, Any], args: SearchArgs) -> None:
    """Step 1's exception: a first hit whose snippet of a long field lacks some of the
    question's words (a figure question: shows no figure beside half its words; a who/when
    question reads the hit's origin instead, step 5) has that field read for its passages
    (``_scan``; the RS's snippet stays when none is found)."""
    figure = asks_for_figure(args.text)
    words = args.words or (args.text,)
    evidence = top.get("evidence") or []
    if not (evidence and evidence[0].get("truncated")):
        return
    if figure and _answers(evidence, words, figure):
        return
    if not figure and (asks_who_or_when(args.text) or _holds_every_word(evidence, words)):
        return
    await _scan(context, top, _naming(top), str(evidence[0].get("field")), words, args.text, figure=figure)


def _searchable_bodies(
    schema: Mapping[str, Any] | None, hit: Mapping[str, Any], args: SearchArgs
) -> list[BodyStream]:
    """The body streams of ``hit``'s stream (``linked_streams.body_streams``) that the search
    may read: among the caller's ``streams`` when it named some, none when it set a filter
    (a filter names one stream)."""
    connection = hit.get("connection_id")
    if not isinstance(connection, str) or any(name == "filter" for name, _ in args.scope):
        return []
    bodies = body_streams(schema, str(hit.get("stream")), connection)
    named = {value for name, value in args.scope if name == "streams"}
    return [body for body in bodies if body.name in named] if named else bodies


async def _scan_bodies(
    context: GatewayContext,
    hit: dict[str, Any],
    bodies: Sequence[BodyStream],
    hits: list[dict[str, Any]],
    args: SearchArgs,
    searched: list[dict[str, Any]],
    read: set[str],
    mode: str,
) -> Passage | None:
    """The body streams searched on the question by the meaning-based ``mode``
    (``body_search.search_bodies``, within the caller's ``connection_id`` when it set one,
    the search added to ``searched``); the body found, unless a scan read it or a hit
    already shows its evidence, is read as ``_scan`` reads a field (its snippet marked when
    it is the whole field) and, when it shows evidence, placed in ``hits`` at ``hit``'s rank
    (an entry of it further down moves up). Answers its passage found by words (``None``: a
    failed search, no new body, or no passage in it)."""
    words, figure = args.words or (args.text,), asks_for_figure(args.text)
    within = tuple(pair for pair in args.scope if pair[0] == "connection_id")
    try:
        response = await search_bodies(context.rs, bodies, args.text, SEARCH_PATHS[mode], within)
    except RsError:
        return None
    found = _results(context, response)
    names = [body.name for body in bodies]
    searched.append({"mode": mode, "query": args.text, "streams": names, "hits": len(found)})
    shown = read | {str(each.get("id")) for each in hits if each.get("evidence")}
    body = found[0] if found else None
    field = None if body is None else text_field(bodies, body)
    if body is None or field is None or body.get("id") in shown:
        return None
    body["found_by"] = [mode]
    read.add(str(body["id"]))
    snippet = str(body.get("snippet") or "")
    if snippet and not snippet.endswith("…"):  # a short body: the RS showed all of it
        _mark_snippet(body, field, snippet, words)
        passage = best_passage(documents.parse_marks(snippet)[0], words, figure=figure)
    else:
        passage = await _scan(context, body, _naming(body), field, words, args.text, figure=figure)
    if body.get("evidence"):
        hits[:] = [each for each in hits if each.get("id") != body["id"]]
        hits.insert(next(n for n, each in enumerate(hits) if each is hit), body)
    return passage


async def _scan(
    context: GatewayContext,
    hit: dict[str, Any],
    naming: Mapping[str, str],
    field: str,
    words: Sequence[str],
    question: str,
    *,
    figure: bool,
) -> Passage | None:
    """The hit's field read, its passages set as its evidence: the one that holds most of the
    question's words and, when that lacks some, the sentence nearest the question in meaning.
    Answers the first (``None``: no question word in what was read, or the read failed)."""
    ref = RecordRef(str(hit.get("stream")), str(hit.get("record_id")), hit.get("connection_id"))
    try:
        scanned, passage = await find_passage(context.rs, ref, field, SCAN_CHARS, words, figure=figure)
    except RsError:
        return None
    found = [] if passage is None else [passage]
    if passage is None or passage.matched < passage.asked or (figure and not passage.figure):
        span = await asyncio.to_thread(closest_sentence, scanned.text, question, figure=figure)
        if span is not None and (passage is None or span[1] <= passage.start or span[0] >= passage.end):
            found.append(passage_at(scanned.text, *span, words))
    if found:
        hit["evidence"] = [passage_evidence(scanned, each, naming, field) for each in found]
        hit.pop("read_near", None)
    return passage


def _words_apart(results: Sequence[Mapping[str, Any]], words: Sequence[str]) -> bool:
    """Whether a first lexical page with hits meets a question of two (``FEW_WORDS``)
    content words only by coincidence: every hit shows evidence, and neither its title nor
    any sentence of its evidence holds two of the words (``most_in_a_sentence``)."""
    if not results or not 2 <= len({stem(word) for word in words}) <= FEW_WORDS:
        return False
    for hit in results:
        evidence = hit.get("evidence") or []
        texts = [str(hit.get("title") or ""), *_preview_texts(evidence)]
        if not evidence or any(most_in_a_sentence(text, words) >= 2 for text in texts):
            return False
    return True


def _holds_every_word(evidence: Sequence[Mapping[str, Any]], words: Sequence[str]) -> bool:
    """Whether a preview of a hit's evidence holds every word of the question."""
    return any(p.matched == p.asked for p in _preview_passages(evidence, words, figure=False))


def _answers(evidence: Sequence[Mapping[str, Any]], words: Sequence[str], figure: bool) -> bool:
    """Whether a hit's evidence reads as an answer: a preview whose passage answers
    (``Passage.answers``), holding a number when the question asks for one."""
    return any(p.answers and (not figure or p.figure) for p in _preview_passages(evidence, words, figure))


def _preview_passages(
    evidence: Sequence[Mapping[str, Any]], words: Sequence[str], figure: bool
) -> list[Passage]:
    """The best passage of each of a hit's evidence previews that holds a question word."""
    found = (best_passage(text, words, figure=figure) for text in _preview_texts(evidence))
    return [passage for passage in found if passage is not None]


def _preview_texts(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """The plain text (marks dropped) of each of a hit's evidence previews."""
    return [documents.parse_marks(str(item.get("preview") or ""))[0] for item in evidence]


def _mark_snippet(hit: dict[str, Any], field: str, snippet: str, words: Sequence[str]) -> None:
    """A whole short field the RS showed, as evidence with the question's words marked
    (not for a title field: the hit's title already shows it)."""
    plain = documents.parse_marks(snippet)[0]
    passage = best_passage(plain, words)
    if passage is None or field in documents.TITLE_FIELDS:
        return
    hit["evidence"] = [
        {
            "field": field,
            "preview": passage.preview(plain, len(plain)),
            "truncated": False,
            "provenance": "meaning_match",
        }
    ]


def _naming(hit: Mapping[str, Any]) -> dict[str, str]:
    connection = hit.get("connection_id")
    return handle_arguments(
        str(hit.get("stream")), str(hit.get("record_id")), connection if isinstance(connection, str) else None
    )


def _results(context: GatewayContext, response: RsResponse) -> list[dict[str, Any]]:
    return documents.search_results(response.body, provider_url=context.provider_url)


def _envelope(
    context: GatewayContext,
    response: RsResponse,
    results: list[dict[str, Any]],
    retrieval: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    structured: dict[str, Any] = {
        "data": documents.search_envelope(response.body, len(results)),
        "provider_url": context.provider_url,
        "request_id": response.request_id,
        "results": results,
    }
    if retrieval is not None:
        structured[RETRIEVAL] = dict(retrieval)
    return structured


def _answer(
    context: GatewayContext,
    response: RsResponse,
    results: list[dict[str, Any]],
    retrieval: Mapping[str, Any] | None = None,
) -> ToolResult:
    return ToolResult(structured=_envelope(context, response, results, retrieval))


async def _granted_schema(context: GatewayContext) -> Mapping[str, Any] | None:
    """The grant's compact schema, read through the caller's memo (``None`` when it fails:
    the answer then has no stream hints)."""
    try:
        response: RsResponse = await memoised_read(context.rs, "/v1/schema", (("view", "compact"),))
    except RsError:
        return None
    return response.body


async def _meaning_mode(context: GatewayContext) -> str | None:
    """The meaning-based search mode the RS publishes (hybrid, else semantic) in its
    protected-resource metadata's ``capabilities``, read through the caller's memo."""
    try:
        response = await memoised_read(context.rs, "/.well-known/oauth-protected-resource", ())
    except RsError:
        return None
    capabilities = as_mapping(response.body.get("capabilities"))
    for mode in ("hybrid", "semantic"):
        if as_mapping(capabilities.get(f"{mode}_retrieval")).get("supported") is True:
            return mode
    return None
