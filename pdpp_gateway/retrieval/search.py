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
   read for its answer windows as step 3 reads one (``evidence.first_passage``: one or two field windows
   more). Not so a page that meets a question of two (``FEW_WORDS``) content words by
   coincidence: every hit shows evidence, and no sentence of its title or evidence holds
   two of the words (``words_apart``; "sign the key receipt. ... has to be ordered" for
   "the receipt for something I ordered"): step 2 runs as for an empty page, this page's
   hits the first list it fuses (``why``: ``WORDS_ONLY_APART``).
2. An empty first page (no record holds every content word; in a package, no member's first
   page has a hit, ``package.first_pages``, else this member's page stays empty):
   concurrently, the meaning-based mode the RS publishes (``capabilities.hybrid_retrieval``,
   else ``semantic_retrieval``, read through the caller's memo) on the question as asked,
   and, when the question has more than ``RELAXED_WORDS`` content words, lexical search on
   its ``RELAXED_WORDS`` most distinctive (longest) ones, fused by reciprocal rank (``fused``): a record both
   found rises, each record once, ties to the lexical hit (it carries evidence), at most
   ``limit`` hits (``FUSED_LIMIT`` when the caller set none: approximate hits past the first
   ten cost a model more to read than they are worth; a package member answers its share of
   them). Either read failing leaves the other's hits; both failing is the meaning read's
   error. A fused page has no cursor (its lists page differently): the text offers the
   lexical search that pages.
3. Evidence that answers (``evidence.add_evidence``): the best-ranked hit whose long field
   the RS cut, while no better-ranked hit shows evidence that reads as an answer, has that
   field read (at most two windows) and its two answer windows shown, chosen sentence by
   sentence (``sentences.answer_windows``); while the best is weak the next such hit is read
   too (``MAX_SCANS``); a short hit whose text previews a body (a mail's message) has the body
   streams searched on the question by meaning (one read) and the body found read the same
   way, shown at that hit's rank. Every other cut hit carries ``read_near``, the aimed read.
4. Streams the question names: alongside step 2's reads, the grant's compact schema is read
   through the caller's memo (no RS read in steady state; after a first page with hits,
   only for step 5), and the streams whose name or fields the content words name, not among the
   hits, are offered as ready ``query_records`` calls under ``stream_hints``
   (``retrieval.stream_hints``), on a fused answer or an empty one. A failed schema read only
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
from typing import Any

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.retrieval.evidence import first_passage
from pdpp_gateway.retrieval.fused import fused
from pdpp_gateway.retrieval.hit_origin import add_origin
from pdpp_gateway.retrieval.pages import SEARCH_PATHS, answer, granted_schema, page_hits
from pdpp_gateway.retrieval.previews import words_apart
from pdpp_gateway.retrieval.stream_hints import add_stream_hints
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.tools.args import SearchArgs


async def search(context: GatewayContext, args: SearchArgs) -> ToolResult:
    """The answer to one search (see the module contract)."""
    if args.mode is not None:
        response = await context.rs.get_json(SEARCH_PATHS[args.mode], args.with_q(args.text))
        return answer(context, response, page_hits(context, response))
    sent = " ".join(args.words) or args.text
    pages = context.first_pages
    try:
        response = await context.rs.get_json(SEARCH_PATHS["lexical"], args.with_q(sent))
    except BaseException:
        if pages is not None:
            pages.report(False)
        raise
    results = page_hits(context, response)
    apart = args.cursor is None and words_apart(results, args.words)
    if not apart and (results or args.cursor is not None or response.body.get("has_more")):
        if pages is not None:
            pages.report(True)
        return await _lexical(context, args, sent, response, results)
    if pages is not None and await pages.any_found(False):  # another package member's page
        return await _lexical(context, args, sent, response, results)
    schema = asyncio.create_task(granted_schema(context))  # read alongside the fused reads
    first = (sent, response, results) if apart else None
    try:
        found = await fused(context, args, schema, first) or await _lexical(
            context, args, sent, response, results
        )
    except BaseException:
        schema.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await schema
        raise
    add_stream_hints(found.structured, await schema, args)
    return found


async def _lexical(
    context: GatewayContext, args: SearchArgs, sent: str, response: RsResponse, results: list[dict[str, Any]]
) -> ToolResult:
    """A lexical page as the answer (step 1), the words ``sent`` said when some were dropped."""
    if not (results or args.cursor is not None or response.body.get("has_more")):
        return answer(context, response, results)
    if args.cursor is None and results:
        await first_passage(context, results[0], args)
        if args.question.who_or_when:
            await add_origin(context.rs, await granted_schema(context), results[0])
    retrieval = {"mode": "lexical", "searched": sent} if sent != args.text else None
    return answer(context, response, results, retrieval)
