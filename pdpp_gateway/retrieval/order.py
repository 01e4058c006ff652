"""The page ordered by one relevance judge: the same scorer for every source and search mode.

Contract: ``order_by_relevance(hits, args)`` judges what the page shows of each hit (its
title, its evidence, else its snippet; ``question.relevance.judge``, in a thread), adds to each
score ``RANK_PRIOR / (1 + i)`` for the hit's place ``i`` in the order they came (the search's
own ranking: the RS ranks whole fields, by their every word and their meaning, where the judge
sees only what the page shows), sets each hit's ``relevance`` to that sum and orders the hits
by it, best first, ties in the order they came. A package merges its members' pages by the same
scores (``package.search``): each member's hits by their place in its own list, so no source is
preferred.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from pdpp_gateway.marks import parse_marks
from pdpp_gateway.question.relevance import judge
from pdpp_gateway.retrieval.previews import preview_texts
from pdpp_gateway.tools.args import SearchArgs

RANK_PRIOR: Final = 0.2  # what the first place in the search's own order adds to a judged score


async def order_by_relevance(hits: list[dict[str, Any]], args: SearchArgs) -> None:
    """``hits`` ordered by one judge (``relevance.judge``) of what each shows, with the prior
    of their place in the order they came, best first, ties in that order; each hit's
    ``relevance`` is that score."""
    if not hits:
        return
    texts = [_shown_texts(hit) for hit in hits]
    judged = await asyncio.to_thread(judge, args.question, texts)
    for place, (hit, relevance) in enumerate(zip(hits, judged, strict=True)):
        hit["relevance"] = round(relevance.score + RANK_PRIOR / (1 + place), 4)
    hits.sort(key=lambda hit: -float(hit["relevance"]))


def _shown_texts(hit: Mapping[str, Any]) -> list[str]:
    """What a page shows of a hit, as plain text: its title, its evidence, else its snippet."""
    evidence = hit.get("evidence") or []
    shown = preview_texts(evidence) or [parse_marks(str(hit.get("snippet") or ""))[0]]
    return [str(hit.get("title") or ""), *(text.strip("…") for text in shown)]
