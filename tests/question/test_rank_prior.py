"""The page's order is the judge's score of what each hit shows plus a prior for the hit's place in
the search's own order (``retrieval.order``): the RS ranked whole fields, the page shows windows."""

from __future__ import annotations

from typing import Any

import pytest

from pdpp_gateway.question.relevance import judge
from pdpp_gateway.retrieval.order import RANK_PRIOR, order_by_relevance
from pdpp_gateway.tools.args import parse_search

QUESTION = "when does the swimming pool open on sundays"
TEXTS = [
    "The pool opens at 9:00 on Sundays and closes at 18:00.",  # the answer
    "Sunday swimming lessons for children start again in May.",  # the topic, not the answer
    "The gym is closed for repairs this week.",  # neither
    "On Sundays the swimming pool opens later than on weekdays.",  # near: no time
    "The swimming pool is open on Sundays too.",  # as near
]


def _hits(order: list[int]) -> list[dict[str, Any]]:
    return [{"id": f"h{i}", "title": "", "snippet": TEXTS[i]} for i in order]


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2], [2, 1, 0], [1, 2, 0]])
async def test_each_hit_is_scored_by_what_it_shows_plus_the_prior_of_its_place(order: list[int]) -> None:
    args = parse_search({"query": QUESTION})
    hits = _hits(order)
    judged = judge(args.question, [["", TEXTS[i]] for i in order])
    expected = {
        f"h{i}": round(j.score + RANK_PRIOR / (1 + place), 4)
        for place, (i, j) in enumerate(zip(order, judged, strict=True))
    }
    await order_by_relevance(hits, args)
    assert {hit["id"]: hit["relevance"] for hit in hits} == expected
    assert [hit["relevance"] for hit in hits] == sorted(expected.values(), reverse=True)


async def test_a_near_tie_keeps_the_search_s_order_and_a_clear_answer_overtakes() -> None:
    args = parse_search({"query": QUESTION})
    near, nearer = judge(args.question, [["", TEXTS[3]], ["", TEXTS[4]]])
    assert 0 < nearer.score - near.score < RANK_PRIOR / 2  # the judge alone would swap them
    hits = _hits([3, 4])
    await order_by_relevance(hits, args)
    assert [hit["id"] for hit in hits] == ["h3", "h4"]
    topic, answer = judge(args.question, [["", TEXTS[1]], ["", TEXTS[0]]])
    assert answer.score - topic.score > RANK_PRIOR / 2
    hits = _hits([1, 0])  # the search ranked the topic first
    await order_by_relevance(hits, args)
    assert [hit["id"] for hit in hits] == ["h0", "h1"]
