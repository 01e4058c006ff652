"""Search in a person's words: the question's words and its meaning, fused, read for answers, judged as one page.

Contract (a ``search`` that pins no ``mode``; a pinned mode is exactly that mode, one RS read):

1. Lexical search on the question's content words (``words.content_words``: stop words and
   question words dropped; the whole question when none is left). With a ``cursor`` that page
   is the answer, in the RS's order, as the page before it offered (``_lexical``).
2. A first page is never the answer alone: words met by coincidence (a newsletter holding
   "go", "welcome" and "lunch" apart) and paraphrases (the answer says "premium paid" where
   the question says "pay") both lose a person's question. Concurrently, the meaning-based
   mode the RS publishes (``capabilities.hybrid_retrieval``, else ``semantic_retrieval``,
   read through the caller's memo) on the question as asked and, when the question has more
   than ``RELAXED_WORDS`` content words, lexical search on its most distinctive ones; the
   lists are fused by reciprocal rank (``fused``), at most ``limit`` hits (``FUSED_LIMIT``
   when the caller set none; a package member answers its share). Such a question reads no
   page of its every word (step 1): a record holding them all holds its most distinctive
   ones, and the RS finds one for few questions a person types (``why``:
   ``FEWER_WORDS_AND_MEANING``); when neither list finds a record, the page of every word is
   the answer. A question of fewer words has step 1's page, when it has hits, lead the
   fusion (``WORDS_AND_MEANING``; ``NO_RECORD_HAS_EVERY_WORD`` when it has none). Either read
   failing leaves the other's hits. A fused page has no cursor: the text offers the lexical
   search that pages. When the RS publishes no meaning-based mode and the question has too
   few words to relax, the first page is the answer (``_lexical``: its first hit read for its
   passage when its snippet lacks a word, ``evidence.first_passage``).
3. Evidence that answers (``evidence.add_evidence``, then ``evidence.read_best``): the
   best-ranked hits whose long text the page shows only in part are read for the two windows
   that best carry the answer (``sentences.answer_windows``: sentence by sentence, by meaning,
   the question's rare words and the kind of value asked for); the ``READ_HITS`` best in the
   fused order, concurrently; a short hit whose text previews a body (a mail's message) has
   the body streams searched on the question by meaning (one read) and the body found read
   the same way, shown at that hit's rank (one hit with it when its link, 1 read, names
   it). Every other cut hit carries ``read_near``. The best hits' threads (an issue's
   comments, a conversation's turns: ``threads``) have their part stream's newest page read
   (1 read per part stream) and the parts that best answer the first hit's thread join the
   page after it, for the judge to keep or drop. Before any of these reads, a header whose
   body or part the fused page shows (a mail's message and its body, a conversation's title
   and its turn) folds into it (``linked_hits``: 1 read of the link), and the place it frees
   goes to the next fused hit.
4. One judge orders the page (``order``, ``question.relevance``): what each hit now shows,
   scored the same way whatever its source or mode; the page keeps its best ``limit``; a
   package merges its members by it.
5. Streams the question names: the grant's compact schema, read through the caller's memo
   alongside step 2, offers the streams whose name or fields the content words name, not among
   the hits, as ready ``query_records`` calls under ``stream_hints`` (``retrieval.stream_hints``);
   a page that shows none of the question's words names the grant's other streams under
   ``other_streams`` (``retrieval.other_streams``).
6. Where the first hit comes from: when the question asks who sent something or when it came
   (``Question.who_or_when``), the first hit gets ``origin``, its sender and date
   (``hit_origin``: 1 read for a mail's message, 2 for a mail's body).

Structured output says how the answer was found under ``retrieval``: ``{mode: "lexical",
searched}`` when words were dropped from a lexical page with hits, else ``{mode: "fused",
instead_of: "lexical", why, searched: [{mode, query, hits, streams?}], order}``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Mapping
from typing import Any

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.render.common import FEWER_WORDS_AND_MEANING, NO_RECORD_HAS_EVERY_WORD, WORDS_AND_MEANING
from pdpp_gateway.retrieval.evidence import first_passage
from pdpp_gateway.retrieval.fused import fused
from pdpp_gateway.retrieval.hit_origin import add_origin
from pdpp_gateway.retrieval.other_streams import add_other_streams
from pdpp_gateway.retrieval.pages import SEARCH_PATHS, answer, granted_schema, meaning_mode, page_hits
from pdpp_gateway.retrieval.stream_hints import add_stream_hints
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.tools.args import SearchArgs


async def search(context: GatewayContext, args: SearchArgs) -> ToolResult:
    """The answer to one search (see the module contract)."""
    if args.mode is not None:
        response = await context.rs.get_json(SEARCH_PATHS[args.mode], args.with_q(args.text))
        return answer(context, response, page_hits(context, response))
    sent = " ".join(args.words) or args.text
    if args.cursor is not None:  # a next page of the words: lexical, as the first page offered
        response = await context.rs.get_json(SEARCH_PATHS["lexical"], args.with_q(sent))
        return await _lexical(context, args, sent, response, page_hits(context, response))
    schema = asyncio.create_task(granted_schema(context))  # read alongside the searches
    try:
        found = await _first_page(context, args, sent, schema)
    except BaseException:
        schema.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await schema
        raise
    add_stream_hints(found.structured, await schema, args)
    add_other_streams(found.structured, await schema, args)
    return found


async def _first_page(
    context: GatewayContext, args: SearchArgs, sent: str, schema: Awaitable[Mapping[str, Any] | None]
) -> ToolResult:
    """Steps 1 and 2 of a first page: a question of more than ``RELAXED_WORDS`` content words
    on its fewer words and its meaning, fused; else its every word, fused with meaning."""
    if args.question.relaxed() is not None and await meaning_mode(context) is not None:
        found = await fused(context, args, schema, None, FEWER_WORDS_AND_MEANING)
        if found is not None:
            return found
    response = await context.rs.get_json(SEARCH_PATHS["lexical"], args.with_q(sent))
    results = page_hits(context, response)
    first = (sent, response, results) if results else None
    why = WORDS_AND_MEANING if first is not None else NO_RECORD_HAS_EVERY_WORD
    return await fused(context, args, schema, first, why) or await _lexical(
        context, args, sent, response, results
    )


async def _lexical(
    context: GatewayContext, args: SearchArgs, sent: str, response: RsResponse, results: list[dict[str, Any]]
) -> ToolResult:
    """A lexical page as the answer (step 1), the words ``sent`` said when some were dropped."""
    retrieval = {"mode": "lexical", "searched": sent} if sent != args.text else None
    if not (results or args.cursor is not None or response.body.get("has_more")):
        return answer(context, response, results, retrieval)
    if args.cursor is None and results:
        await first_passage(context, results[0], args)
        if args.question.who_or_when:
            await add_origin(context.rs, await granted_schema(context), results[0])
    return answer(context, response, results, retrieval)
