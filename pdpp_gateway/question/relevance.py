"""One relevance judge for a page of hits: how well each candidate's best sentence answers the question.

Contract (plain text in, scores out; no I/O but the embedding model loads once; CPU-bound, a
few ms a page: call it from a thread in a server):

- ``judge(question, candidates)`` scores each candidate (the texts a page shows of one hit: its
  title, its evidence or snippet, or windows read for it) the same way, whatever source or
  search mode it came from: its best sentence's score (``sentences.score_sentences``: meaning,
  the question's words weighted by how rare they are among the page's candidates, and the kind
  of value asked for), and answers one ``Relevance`` per candidate, in the order given. Scores
  of different candidates, sources and modes are comparable: one scorer, one question, one page.
- A candidate with no text scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import sentences
from pdpp_gateway.question.sentences import rarity, score_sentences, word_nearness


@dataclass(frozen=True, slots=True)
class Relevance:
    score: float  # its best sentence's
    best: str | None  # that sentence


def judge(question: Question, candidates: Sequence[Sequence[str]]) -> list[Relevance]:
    """Each candidate's relevance to ``question`` (see the module contract)."""
    owners: list[int] = []
    pieces: list[str] = []
    for index, texts in enumerate(candidates):
        for text in texts:
            for start, end in sentences(text):
                owners.append(index)
                pieces.append(text[start:end])
    # the near words measured once, for the weights and the scores alike
    near = word_nearness(question, [*(text for texts in candidates for text in texts), *pieces])
    weights = rarity(question, candidates, near)
    scores = score_sentences(question, pieces, weights, near)
    best: list[Relevance] = [Relevance(0.0, None)] * len(candidates)
    for index, piece, score in zip(owners, pieces, scores, strict=True):
        if best[index].best is None or float(score) > best[index].score:
            best[index] = Relevance(float(score), piece)
    return best
