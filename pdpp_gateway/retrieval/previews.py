"""What a hit's evidence previews say of a question: do they answer it, hold every word, or meet by chance.

Contract (plain values in and out; no I/O):

- ``preview_texts(evidence)``: each preview's plain text (marks dropped);
  ``preview_passages(evidence, words, figure)``: the best passage of each that holds a question
  word (``passages.best_passage``).
- ``answers(evidence, words, figure)``: a preview's passage reads as the answer
  (``Passage.answers``), holding a number when the question asks for one;
  ``holds_every_word(evidence, words)``: a preview holds every word of the question.
- ``mark_snippet(hit, field, snippet, words)``: a whole short field the RS showed becomes the
  hit's evidence, the question's words marked (``provenance: "meaning_match"``; not for a title
  field, which the hit's title shows already).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pdpp_gateway.documents import TITLE_FIELDS
from pdpp_gateway.marks import parse_marks
from pdpp_gateway.question.passages import Passage, best_passage


def holds_every_word(evidence: Sequence[Mapping[str, Any]], words: Sequence[str]) -> bool:
    """Whether a preview of a hit's evidence holds every word of the question."""
    return any(p.matched == p.asked for p in preview_passages(evidence, words, figure=False))


def answers(evidence: Sequence[Mapping[str, Any]], words: Sequence[str], figure: bool) -> bool:
    """Whether a hit's evidence reads as an answer: a preview whose passage answers
    (``Passage.answers``), holding a number when the question asks for one."""
    return any(p.answers and (not figure or p.figure) for p in preview_passages(evidence, words, figure))


def preview_passages(
    evidence: Sequence[Mapping[str, Any]], words: Sequence[str], figure: bool
) -> list[Passage]:
    """The best passage of each of a hit's evidence previews that holds a question word."""
    found = (best_passage(text, words, figure=figure) for text in preview_texts(evidence))
    return [passage for passage in found if passage is not None]


def preview_texts(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """The plain text (marks dropped) of each of a hit's evidence previews."""
    return [parse_marks(str(item.get("preview") or ""))[0] for item in evidence]


def mark_snippet(hit: dict[str, Any], field: str, snippet: str, words: Sequence[str]) -> None:
    """A whole short field the RS showed, as evidence with the question's words marked
    (not for a title field: the hit's title already shows it)."""
    plain = parse_marks(snippet)[0]
    passage = best_passage(plain, words)
    if passage is None or field in TITLE_FIELDS:
        return
    hit["evidence"] = [
        {
            "field": field,
            "preview": passage.preview(plain, len(plain)),
            "truncated": False,
            "provenance": "meaning_match",
        }
    ]
