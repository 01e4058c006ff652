"""The page ordered by one relevance judge: the same scorer for every source and search mode.

Contract: ``order_by_relevance(hits, args)`` judges what the page shows of each hit (its
title, its evidence, else its snippet; ``question.relevance.judge``, in a thread), sets each
hit's ``relevance`` to its score and orders the hits by it, best first, ties in the order they
came. A package merges its members' pages by the same scores (``package.search``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from pdpp_gateway.marks import parse_marks
from pdpp_gateway.question.relevance import judge
from pdpp_gateway.retrieval.previews import preview_texts
from pdpp_gateway.tools.args import SearchArgs


async def order_by_relevance(hits: list[dict[str, Any]], args: SearchArgs) -> None:
    """``hits`` ordered by one judge (``relevance.judge``) of what each shows, best first,
    ties in the order they came; each hit's ``relevance`` is its score."""
    if not hits:
        return
    texts = [_shown_texts(hit) for hit in hits]
    judged = await asyncio.to_thread(judge, args.question, texts)
    for hit, relevance in zip(hits, judged, strict=True):
        hit["relevance"] = round(relevance.score, 4)
    hits.sort(key=lambda hit: -float(hit["relevance"]))


def _shown_texts(hit: Mapping[str, Any]) -> list[str]:
    """What a page shows of a hit, as plain text: its title, its evidence, else its snippet."""
    evidence = hit.get("evidence") or []
    shown = preview_texts(evidence) or [parse_marks(str(hit.get("snippet") or ""))[0]]
    return [str(hit.get("title") or ""), *(text.strip("…") for text in shown)]
