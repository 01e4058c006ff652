"""The words of a question that can find its answer: content words, their stems, their weight.

Contract (plain text in, plain values out; no I/O):

- ``content_words(text)`` is the question's words in order, each once (case-insensitively),
  without stop words, question words, auxiliaries, pronouns and the verbs a question is
  framed with ("need", "want", "tell", "know", "say": ``STOP_WORDS``): "what did I
  pay for the Lisbon apartment deposit" gives ``["pay", "Lisbon", "apartment", "deposit"]``.
  A word is a run of letters and digits (``\\w+``); an apostrophe ends it ("what's" is
  "what" and "s", and "didn't" is "didn" and "t": all dropped).
- ``stem(word)`` is a light, deterministic suffix strip (plural, past, -ing, -able, -ly,
  -ation), lower-cased and without accents ("megane" meets "Mégane", as the RS's own
  full-text index folds them), never under three letters: enough that "payable" meets "pay"
  and "approval" meets "approve" when text is matched word by word. It is for matching only: a
  stem is never shown or sent as a query.
- ``stands_for(token, wanted)`` is the question word (a stem in ``wanted``) a text word's
  stem stands for: the same stem, or one the other begins with when both have four
  letters or more ("confirm" in "confirmation"); ``None`` when it stands for none.
- ``asks_for_figure(question)``: whether the question asks for a number, an amount, a time or
  a code ("how much", "when", "what time", "opening hours", "cost", "password", "ref", ...),
  so the answer's passage likely holds digits.
- ``asks_who_or_when(question)``: whether the question asks who sent or made something, or
  the date it came ("who", "from", "sent", "sender", "date", "company", "provider",
  "arrived", "came", "received"), so the answer is where a record comes from rather than
  what its text says.
- ``most_distinctive(words, count)`` picks the words most likely to single out a record: the
  longest, ties to the earlier, returned in the question's order.
- ``deeds(question)``: the words the question says as deeds, lower-cased: each right after
  the person doing it (``DOERS``: "did I pay", "we ordered"), so they name no stream.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Final

WORD: Final = re.compile(r"\w+", re.UNICODE)
RELAXED_WORDS: Final = 2  # the words a search relaxed from a question keeps (``most_distinctive``)
STOP_WORDS: Final = frozenset(
    """
    a about above after again all am an and any anybody anyone anything are as at be been before
    being below between both but by can could did do does doing done down during each everybody
    everyone everything few for from further get gets got had has have having he her here hers him
    his how i if in into is it its itself just let me mine more most my myself no nobody nor not
    nothing now of off on once only or other our ours out over own please s same she should so some
    somebody someone something such t than that the their theirs them then there these they this
    those through to too under until up us very was we were what whats when where which while who
    whom whose why will with would you your yours need needs want wants tell know say says said
    much many ever
    aren couldn didn doesn don hadn hasn haven isn ll mustn re shan shouldn ve wasn weren wouldn
    """.split()  # noqa: SIM905 - a word list reads best as words
)
# the people who do things: the word after one is a deed, not a thing ("did I pay", not "my pay");
# an auxiliary is not one ("did mum say": it comes before the doer)
DOERS: Final = frozenset({"i", "we", "you", "they", "he", "she"})
_SUFFIXES: Final = (
    ("ations", ""),
    ("ation", ""),
    ("ables", ""),
    ("able", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("als", ""),
    ("al", ""),
    ("ly", ""),
    ("es", ""),
    ("ed", ""),
    ("e", ""),
    ("s", ""),
)
_MIN_STEM: Final = 3
_FIGURE_ASKED: Final = re.compile(
    r"\b(how (much|many|long|old|far)|when|what (time|date|day)|cost|costs|price|paid|pay|worth|"
    r"number|code|ref|reference|amount|password|pin|total|hours)\b",
    re.IGNORECASE,
)
_ORIGIN_ASKED: Final = re.compile(
    r"\b(who|whom|whose|from|sent|send|sends|sender|date|company|provider|"
    r"arrive|arrived|arrives|came|come|receive|received)\b",
    re.IGNORECASE,
)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its meaning, in order, each once."""
    seen: set[str] = set()
    kept: list[str] = []
    for word in WORD.findall(text):
        folded = word.lower()
        if folded in STOP_WORDS or folded in seen or (len(folded) < 2 and not folded.isdigit()):
            continue
        seen.add(folded)
        kept.append(word)
    return kept


@lru_cache(maxsize=1 << 16)  # a page stems the same words again and again
def stem(word: str) -> str:
    """``word`` lower-cased, its accents dropped, with one common suffix removed (never below
    three letters)."""
    folded = _unaccented(word.lower())
    for suffix, replacement in _SUFFIXES:
        if folded.endswith(suffix) and len(folded) - len(suffix) + len(replacement) >= _MIN_STEM:
            return folded[: len(folded) - len(suffix)] + replacement
    return folded


def _unaccented(text: str) -> str:
    """``text`` without its diacritics ("Mégane" is "Megane", "nações" is "nacoes"): people
    often type without them."""
    if text.isascii():
        return text
    return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char))


def stands_for(token: str, wanted: set[str]) -> str | None:
    """The question word (stem) in ``wanted`` that ``token`` (a stem) stands for, if any."""
    if token in wanted:
        return token
    if len(token) >= 4:
        for key in wanted:
            if len(key) >= 4 and (token.startswith(key) or key.startswith(token)):
                return key
    return None


def deeds(question: str) -> set[str]:
    """The words of ``question`` (lower-cased) said as deeds: each right after the person
    doing it (``DOERS``: "did I pay", "we ordered")."""
    tokens = [token.lower() for token in WORD.findall(question)]
    return {token for before, token in pairwise(tokens) if before in DOERS}


def most_distinctive(words: Sequence[str], count: int) -> list[str]:
    """The ``count`` longest of ``words`` (ties to the earlier), in their original order."""
    ranked = sorted(range(len(words)), key=lambda i: (-len(words[i]), i))[:count]
    return [words[i] for i in sorted(ranked)]


def asks_for_figure(question: str) -> bool:
    """Whether ``question`` asks for a number, amount, time or code."""
    return _FIGURE_ASKED.search(question) is not None


def asks_who_or_when(question: str) -> bool:
    """Whether ``question`` asks who sent something, or the date it came."""
    return _ORIGIN_ASKED.search(question) is not None
