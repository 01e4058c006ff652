"""The question's words, its meaning and its fewer words, fused: the page a person's question reads.

Contract (steps 2-4 and 6 of ``retrieval.search``): concurrently, the meaning-based mode the RS
publishes (``pages.meaning_mode``) on the question as asked and, when the question has more
than ``RELAXED_WORDS`` content words, lexical search on its most distinctive ones. The lists
(the first page of the question's every word, when it was read and has hits, leading) are
fused by reciprocal rank fusion (``RRF_K``): a record both found rises, each record once, ties
to the earlier list, at most ``limit`` hits (``FUSED_LIMIT`` when the caller set none; a
package member answers its share, ``GatewayContext.fused_share``). Either read failing leaves
the other's hits; both failing is the meaning read's error; no read to make is ``None``; no
hit in any list is an empty fused page (what was searched, each list's ``hits`` 0). For one grant,
when no record holds the relaxed query's words together (the RS's lexical search wants every
word), each word is searched alone, concurrently, and the lists, interleaved, stand in the empty
one's place (``searched`` lists each: two more reads), but for a word that fills a page (too
common to rank by: set aside); a package member's empty list says the words are in another
source, not apart, so members do not.
Then a header folded into its body or part on the page (``linked_hits``; the place it frees
goes to the next fused hit), evidence (``evidence.add_evidence``, then ``evidence.read_best``:
the best hits read for their answer windows), the first hit's thread (``threads``: its best
parts join the candidates), the page ordered by the one judge (``order``) and cut to its
``limit`` best, and the first hit's origin for a who/when question. A fused page has no cursor
(its lists page differently): the text offers the lexical search that pages;
``retrieval.why`` is the caller's ``why``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from itertools import zip_longest
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.retrieval.evidence import add_evidence, read_best
from pdpp_gateway.retrieval.hit_origin import add_origin
from pdpp_gateway.retrieval.linked_hits import fold_linked
from pdpp_gateway.retrieval.order import order_by_relevance
from pdpp_gateway.retrieval.pages import SEARCH_PATHS, envelope, meaning_mode, page_hits
from pdpp_gateway.retrieval.threads import add_thread_parts
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.tools.args import SearchArgs

RRF_K: Final = 60
FUSED_LIMIT: Final = 10  # a fused page's hits when the caller set no limit


async def fused(
    context: GatewayContext,
    args: SearchArgs,
    schema: Awaitable[Mapping[str, Any] | None],
    first: tuple[str, RsResponse, list[dict[str, Any]]] | None,
    why: str,
) -> ToolResult | None:
    """Meaning and fewer words, beside a ``first`` page whose words are apart (its query,
    response and hits) when there is one, fused, with passages (steps 2 and 3); ``why`` says
    why the page is fused (``render.common``)."""
    meaning = await meaning_mode(context)
    relaxed = args.question.relaxed()
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
        (mode, query, outcome, page_hits(context, outcome))
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
    lists = [results for *_, results in answered]
    apart = await _words_apart(context, args, relaxed, answered, lists)
    limit = context.fused_share or args.limit or FUSED_LIMIT
    fused = rrf(lists, limit + 1)  # the place a fold may free
    await fold_linked(context, fused, limit, await schema)
    del fused[limit:]
    searched: list[dict[str, Any]] = [
        {"mode": mode, "query": query, "hits": len(results)} for mode, query, _, results in answered
    ]
    if apart:  # each word alone, after the pair whose list they stand in
        searched[apart[0] + 1 : apart[0] + 1] = apart[1]
    await add_evidence(context, fused, args, await schema, searched, meaning)
    await read_best(context, fused, args, await schema)
    await add_thread_parts(context, fused, args, await schema, searched)
    cut = len(fused) > limit  # a body or a thread's part found for the question took a place
    await order_by_relevance(fused, args)
    del fused[limit:]  # the judge's best
    if args.question.who_or_when and fused:
        await add_origin(context.rs, await schema, fused[0])
    base = answered[-1][2]
    retrieval = {
        "mode": "fused",
        "instead_of": "lexical",
        "why": why,
        "searched": searched,
        "order": "relevance",  # fused by reciprocal rank, then ordered by the one judge
    }
    structured = envelope(context, base, fused, retrieval)
    data = structured["data"]
    data.pop("next_cursor", None)
    data["has_more"] = (
        cut
        or any(bool(response.body.get("has_more")) for _, _, response, _ in answered)
        or any(len(results) > limit for *_, results in answered)
    )
    return ToolResult(structured=structured)


async def _words_apart(
    context: GatewayContext,
    args: SearchArgs,
    relaxed: str | None,
    answered: Sequence[tuple[str, str, RsResponse, list[dict[str, Any]]]],
    lists: list[list[dict[str, Any]]],
) -> tuple[int, list[dict[str, Any]]] | None:
    """For one grant, when no record holds the relaxed query's words together: each word
    searched alone, their lists interleaved into one in the pair's place in ``lists`` (one
    lexical list beside the meaning's); the pair's index and the words' ``searched`` entries.
    A word that fills the RS's page (``has_more``: more records hold it than one page) is
    too common to rank by: its list is set aside (``set_aside``). A package member's empty
    list says the words are in another source, not that they are apart: none there."""
    at = next(
        (
            i
            for i, (mode, query, _, hits) in enumerate(answered)
            if mode == "lexical" and query == relaxed and not hits
        ),
        None,
    )
    words = args.question.distinctive()
    if relaxed is None or at is None or context.source is not None or len(words) < 2:
        return None
    outcomes = await asyncio.gather(
        *(context.rs.get_json(SEARCH_PATHS["lexical"], args.with_q(word)) for word in words),
        return_exceptions=True,
    )
    found = [
        (word, page_hits(context, outcome), outcome.body.get("has_more") is True)
        for word, outcome in zip(words, outcomes, strict=True)
        if isinstance(outcome, RsResponse)
    ]
    merged: dict[str, dict[str, Any]] = {}
    for row in zip_longest(*(hits for _, hits, common in found if not common)):
        for hit in row:
            if hit is not None:
                merged.setdefault(str(hit.get("id")), hit)
    lists[at] = list(merged.values())
    return at, [
        {"mode": "lexical", "query": word, "hits": len(hits), **({"set_aside": True} if common else {})}
        for word, hits, common in found
    ]


def rrf(lists: Sequence[list[dict[str, Any]]], limit: int) -> list[dict[str, Any]]:
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
