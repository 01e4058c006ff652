"""One scorer of sentences against a question, and the windows of a text that carry its answer.

Contract (plain text in, scores and spans out; no I/O but the embedding model ``meaning`` loads
once; CPU-bound, call it from a thread in a server):

- ``score_sentences(question, pieces, weights)``: each sentence's score against the question,
  the one rule every ranking here uses: ``MEANING`` x its cosine similarity to the question
  (WordLlama, ``meaning.embedding_model``; 0 when the model cannot load), plus ``WORDS`` x the
  share of the question's word weight it holds (``weights``: each question word's stem, weighted
  by its rarity in the collection being ranked; matched by ``words.stem``, and a word it holds
  only through a word near it in meaning at that nearness: ``near_words``), plus ``KIND`` when
  it holds a value of the kind the question asks for (``answer_type``: an amount for "how
  much", a time or a date for "when", an identifier for "which version").
- ``rarity(question, collection)``: those weights, BM25's inverse document frequency of each
  question word's stem over ``collection`` (each item a list of texts: a document), a document
  holding it when it holds the word, a form of it or a word near it (``near_words.near_forms``).
- ``answer_windows(question, text, count, width)``: the ``count`` best sentences of ``text``
  (``meaning.sentences``; rarity over the text's own sentences), each as a ``Window`` that
  opens with the sentence before it, whole (a sentence often answers through the one it
  follows: "our Redis is configured with allkeys-lru and has lost keys" before "a lost key is
  exactly a duplicate charge"; a list row, through its heading), and at least ``BACK_CHARS``
  before it (a period inside a name, "Av. da República", ends a sentence too), and runs
  ``width`` characters on from its start (an answer follows the line that introduces it: "we
  confirm the appointment:" then "Date: Tuesday 14 April at 16:40"), whole when the sentence
  is longer (at most ``MAX_CHARS``), cut at word boundaries, best first. No two overlap: a
  sentence a better window holds is not chosen again; one a better window ends inside is
  held whole by it instead, the window growing to that sentence's end, chosen for both (the
  date in the sentence after the one that names the repair; within ``MAX_CHARS``, clear of
  the next window); and a window that would reach into a better one stops at its edge (the
  sentence before it, or what follows, is that one's to show), so the second best sentence
  is shown even when it stands near the best ("it failed 7 of the last 50 nightly builds" a
  few lines above the log line that names the test). A
  window never ends inside the sentence it was chosen for, unless that sentence alone is over
  ``MAX_CHARS``.
- ``whole_window(question, text, best)``: ``text`` whole as one window, chosen for ``best``'s
  sentence, every question word in it marked (a text short enough to show whole).
- ``Window.preview(text, limit)``: the window on one line, the question's words in ``<mark>``
  tags, ``…`` where the text goes on: the sentence before the one it was chosen for, then
  ``limit`` characters from ``BACK_CHARS`` before that one (the sentence before is shown on top
  of what follows, never instead of it), and on to the end of the sentence it was chosen for
  when that ends later (a preview never stops inside it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pdpp_gateway.question.answer_type import asked_kinds, holds_asked
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import embedding_model, sentences
from pdpp_gateway.question.near_words import LETTERS, Nearness, near_forms, near_held, nearness
from pdpp_gateway.question.passages import word_hits
from pdpp_gateway.question.words import stem

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MEANING: Final = 0.5
WORDS: Final = 0.5
KIND: Final = 0.3
WINDOW_CHARS: Final = 400
BACK_CHARS: Final = 60  # the least a window opens before its sentence
MAX_CHARS: Final = 700


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    end: int
    sentence: tuple[int, int]  # the sentence it was chosen for (two, when it grew: see _grown)
    score: float
    marks: tuple[tuple[int, int], ...]  # the question's words inside it
    matched: int  # distinct question words inside it
    asked: int  # distinct question words looked for

    def preview(self, text: str, limit: int) -> str:
        """The window on one line: the sentence before its own, then ``limit`` characters from
        ``BACK_CHARS`` before its own, never ending inside it (see the module contract)."""
        end = self.end
        opens = max(self.start, self.sentence[0] - BACK_CHARS)  # the sentence before it is extra
        if end - opens > limit:
            end = _word_end(text, max(opens + limit, self.sentence[1]), self.sentence[1])
        parts = ["…" if self.start > 0 else ""]
        position = self.start
        for first, last in self.marks:
            if last > end:
                break
            parts.extend((text[position:first], f"<mark>{text[first:last]}</mark>"))
            position = last
        parts.extend((text[position:end], "…" if end < len(text) else ""))
        return " ".join("".join(parts).split())


def word_nearness(question: Question, texts: Iterable[str]) -> Nearness:
    """The words of ``texts`` near each question word (``near_words.nearness``); none when the
    model cannot load."""
    model = embedding_model()
    return nearness(model, question, texts) if model is not None else []


def rarity(
    question: Question, collection: Sequence[Sequence[str]], near: Nearness | None = None
) -> dict[str, float]:
    """Each question word's stem, weighted by BM25's idf over ``collection`` (``near``: the
    near words measured over its texts, or more; measured here when not given)."""
    wanted = {stem(word) for word in question.terms}
    found = dict.fromkeys(wanted, 0)
    if near is None:
        near = word_nearness(question, (text for texts in collection for text in texts))
    forms = near_forms(near)
    for texts in collection:
        keys = {key for text in texts for key in _stems_in(text, wanted)}
        if forms:
            words = {word.lower() for text in texts for word in LETTERS.findall(text)}
            keys |= {key for key, near_words in forms.items() if not near_words.isdisjoint(words)}
        for key in keys:
            found[key] += 1
    count = len(collection)
    return {key: math.log(1 + (count - df + 0.5) / (df + 0.5)) for key, df in found.items()}


def score_sentences(
    question: Question, pieces: Sequence[str], weights: dict[str, float], near: Nearness | None = None
) -> npt.NDArray[np.float64]:
    """Each sentence's score against ``question`` (see the module contract; ``near``: the near
    words measured over ``pieces``, or more; measured here when not given)."""
    import numpy as np

    if not pieces:
        return np.zeros(0)
    total = sum(weights.values()) or 1.0
    exact = [_stems_in(piece, set(weights)) for piece in pieces]
    held = np.array([sum(weights[key] for key in keys) for keys in exact])
    kinds = asked_kinds(question.text)
    typed = np.array([1.0 if kinds and holds_asked(piece, kinds) else 0.0 for piece in pieces])
    model = embedding_model()
    if model is None:
        meaning = np.zeros(len(pieces))
    else:
        asked = model.embed([question.text], norm=True)[0]
        meaning = np.clip(model.embed(list(pieces), norm=True) @ asked, 0.0, None)
        near = nearness(model, question, pieces) if near is None else near
        held = held + near_held(near, pieces, weights, exact)
    held = held / total
    scores: npt.NDArray[np.float64] = MEANING * meaning + WORDS * held + KIND * typed
    return scores


def answer_windows(question: Question, text: str, count: int = 2, width: int = WINDOW_CHARS) -> list[Window]:
    """The ``count`` windows of ``text`` that best carry the answer (see the module contract)."""
    spans = sentences(text)
    pieces = [text[start:end] for start, end in spans]
    near = word_nearness(question, pieces)  # once, for the weights and the scores
    weights = rarity(question, [[piece] for piece in pieces], near)
    scores = score_sentences(question, pieces, weights, near)
    wanted = set(weights)
    chosen: list[Window] = []
    for index in sorted(range(len(spans)), key=lambda i: -float(scores[i])):
        if len(chosen) >= count:
            break
        first, last = spans[index]
        before = spans[index - 1][0] if index else first  # the sentence before it, whole
        start = min(before, _word_start(text, max(0, first - BACK_CHARS), first))
        end = _word_end(text, min(len(text), max(first + width, min(last, first + MAX_CHARS))), last)
        place = next(
            (place for place, other in enumerate(chosen) if first < other.end and other.start < last), None
        )
        if place is not None:  # a better window holds its sentence, or reaches into it
            chosen[place] = _grown(text, chosen, place, last, wanted)
            continue
        for other in chosen:  # a better window nearby keeps its room: this one stops at its edge
            if other.end <= first:
                start = max(start, other.end)
            else:
                end = min(end, other.start)
        chosen.append(_marked(text, (start, end), spans[index], float(scores[index]), wanted))
    return chosen


def whole_window(question: Question, text: str, best: Window) -> Window:
    """``text`` whole as one window, chosen for ``best``'s sentence, the question's words marked."""
    return _marked(text, (0, len(text)), best.sentence, best.score, {stem(word) for word in question.terms})


def _marked(
    text: str, span: tuple[int, int], sentence: tuple[int, int], score: float, wanted: set[str]
) -> Window:
    """The window ``span`` of ``text``, chosen for ``sentence`` with ``score``, the question's
    words (stems in ``wanted``) inside it marked and counted."""
    held = word_hits(text, wanted, *span, figure=False)
    marks = tuple((first, last) for first, last, _ in held)
    return Window(*span, sentence, score, marks, len({key for *_, key in held}), len(wanted))


def _grown(text: str, chosen: list[Window], place: int, last: int, wanted: set[str]) -> Window:
    """``chosen[place]`` run on to ``last``, the end of a sentence it stops inside, when it stays
    within ``MAX_CHARS`` and clear of the next window; as it is otherwise."""
    window = chosen[place]
    room = min((other.start for other in chosen if other.start >= window.end), default=len(text))
    if not window.end < last <= room or last - window.start > MAX_CHARS:
        return window
    sentences = (window.sentence[0], max(window.sentence[1], last))
    return _marked(text, (window.start, last), sentences, window.score, wanted)


def _stems_in(text: str, wanted: set[str]) -> set[str]:
    return {key for *_, key in word_hits(text, wanted, 0, len(text), figure=False)}


def _word_start(text: str, position: int, limit: int) -> int:
    """``position`` moved on to the start of a word (never past ``limit``)."""
    while 0 < position < limit and not text[position - 1].isspace():
        position += 1
    return position


def _word_end(text: str, position: int, least: int) -> int:
    """``position`` moved back to the end of a word (never before ``least``)."""
    while least < position < len(text) and not text[position].isspace():
        position -= 1
    return position
