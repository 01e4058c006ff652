"""Where in a long text a question is answered: the passage that best holds its words.

Contract (pure: text in, a span out; no I/O):

- ``best_passage(text, words)`` finds the stretch of at most ``SPAN_CHARS`` characters of
  ``text`` holding the most distinct question words (matched by ``words.stem``, so "payable"
  meets "pay"), ties broken by the fewer sentences the stretch spans (words said in one
  sentence speak of each other; an opening that names the question's topics in two does
  not), then by the words' rarity in this text (a word said once outweighs one said ten
  times: decoys repeat the question's common words, the answer's sentence holds its rare
  ones) and then by the tighter span; with ``figure`` (the question asks how
  much, when, which number), a number in the stretch counts as half a word. It answers
  ``None`` when no question word occurs. The ``Passage`` it returns has the span's character
  offsets in ``text``, the matched word spans, and how many distinct question words it holds.
- ``word_hits(text, wanted, start, end, figure=...)``: the question words (stems in
  ``wanted``) in ``text[start:end]``, in order, each with the stem it stands for: the one way
  every ranking here matches a text's words to a question's.
- ``sentence_bounds(text, start, end)`` is the span of the whole sentences a span lies in.
- ``Passage.preview(text, limit)`` is that passage widened to whole sentences where the
  budget allows, at most ``limit`` visible characters, one line, with every matched word in
  ``<mark>`` tags and ``…`` where the text goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pdpp_gateway.question.words import WORD, stands_for, stem

SPAN_CHARS: Final = 240
FIGURE: Final = "\0figure"  # a number in the text, for a question that asks for one
_SENTENCE_ENDS: Final = ".!?\n"


@dataclass(frozen=True, slots=True)
class Passage:
    start: int
    end: int
    marks: tuple[tuple[int, int], ...]  # matched word spans inside [start, end)
    matched: int  # distinct question words in the passage
    asked: int  # distinct question words looked for
    figure: bool = False  # whether it holds a number (looked for only when the question asks one)

    @property
    def answers(self) -> bool:
        """Whether it reads as the answer: half the question's words or more, or a question
        word beside the number asked for."""
        return 2 * self.matched >= self.asked or (self.figure and self.matched > 0)

    def preview(self, text: str, limit: int) -> str:
        """The passage within whole sentences where ``limit`` allows, matches marked."""
        lo, hi = _widen(text, self.start, self.end, limit)
        parts: list[str] = ["…" if lo > 0 else ""]
        position = lo
        for start, end in self.marks:
            if start < lo or end > hi:
                continue
            parts.append(text[position:start])
            parts.append(f"<mark>{text[start:end]}</mark>")
            position = end
        parts.append(text[position:hi])
        parts.append("…" if hi < len(text) else "")
        return " ".join("".join(parts).split())


def best_passage(text: str, words: Sequence[str], *, figure: bool = False) -> Passage | None:
    """The densest stretch of ``text`` in the question's ``words`` (see the module contract)."""
    wanted = {stem(word) for word in words}
    hits = word_hits(text, wanted, 0, len(text), figure=figure)
    if not any(key != FIGURE for _, _, key in hits):
        return None
    counts: dict[str, int] = {}
    for _, _, key in hits:
        counts[key] = counts.get(key, 0) + 1
    # (distinct, -sentence breaks, rarity, -width, first, last)
    best: tuple[float, int, float, int, int, int] | None = None
    first = 0
    for last in range(len(hits)):
        while hits[last][1] - hits[first][0] > SPAN_CHARS:
            first += 1
        keys = {key for _, _, key in hits[first : last + 1]}
        if keys == {FIGURE}:
            continue  # a figure alone answers nothing asked
        distinct = len(keys) - (FIGURE in keys) / 2  # a figure counts half a word
        start, end = hits[first][0], hits[last][1]
        score = (distinct, -_breaks(text, start, end), sum(1 / counts[key] for key in keys), start - end)
        if best is None or score > best[:4]:
            best = (*score, first, last)
    assert best is not None
    *_, first, last = best
    chosen = hits[first : last + 1]
    return _passage(chosen[0][0], chosen[-1][1], chosen, len(wanted))


def sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the whole sentences ``text[start:end]`` lies in."""
    return _sentence_start(text, start), _sentence_end(text, max(start, end - 1))


def _breaks(text: str, start: int, end: int) -> int:
    """The sentence ends in ``text[start:end]``."""
    return sum(text.count(mark, start, end) for mark in _SENTENCE_ENDS)


def word_hits(
    text: str, wanted: set[str], start: int, end: int, *, figure: bool
) -> list[tuple[int, int, str]]:
    """The question words of ``text[start:end]`` in order, each ``(start, end, its question
    word's stem)``, and with ``figure`` its numbers too (``FIGURE``)."""
    hits: list[tuple[int, int, str]] = []
    for match in WORD.finditer(text, start, end):
        key = stands_for(stem(match.group()), wanted)
        if key is not None:
            hits.append((match.start(), match.end(), key))
        elif figure and match.group()[0].isdigit():
            hits.append((match.start(), match.end(), FIGURE))
    return hits


def _passage(start: int, end: int, hits: Sequence[tuple[int, int, str]], asked: int) -> Passage:
    """The passage ``[start, end)`` holding ``hits``, its question words marked and counted."""
    return Passage(
        start=start,
        end=end,
        marks=tuple((first, last) for first, last, key in hits if key != FIGURE),
        matched=len({key for _, _, key in hits} - {FIGURE}),
        asked=asked,
        figure=any(key == FIGURE for _, _, key in hits),
    )


def _widen(text: str, start: int, end: int, limit: int) -> tuple[int, int]:
    """``[start, end)`` grown to the sentence around it while it fits ``limit`` characters,
    else centred on it; never cut inside a word."""
    if end - start >= limit:
        return start, start + limit
    lo = max(_sentence_start(text, start), end - limit)
    hi = min(_sentence_end(text, end), lo + limit)
    spare = limit - (hi - lo)
    if spare > 0:  # room left: show what comes before and after, evenly
        lo = max(0, lo - spare // 2)
        hi = min(len(text), hi + spare - spare // 2)
    while lo > 0 and lo < start and not text[lo - 1].isspace():
        lo += 1
    while hi < len(text) and hi > end and not text[hi].isspace():
        hi -= 1
    return lo, hi


def _sentence_start(text: str, position: int) -> int:
    cut = max(text.rfind(mark, 0, position) for mark in _SENTENCE_ENDS)
    return cut + 1 if cut >= 0 else 0


def _sentence_end(text: str, position: int) -> int:
    found = [i for i in (text.find(mark, position) for mark in _SENTENCE_ENDS) if i >= 0]
    return min(found) + 1 if found else len(text)
