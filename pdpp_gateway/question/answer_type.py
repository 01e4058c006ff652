"""What kind of answer a question asks for, and whether a sentence holds one of that kind.

Contract (plain text in, plain values out; no I/O):

- ``asked_kinds(question)``: the kinds of value the question's own wording asks for, from the
  way English asks for them (the interrogative and the noun it asks about): ``money`` ("how
  much", a cost, a price, a fee), ``time`` ("what time", "when", hours), ``date`` ("when",
  "what day", a deadline, "until when"), ``number`` ("how many", "how long", "how often"),
  ``code`` (a code, number, version, name or id of a thing), ``name`` ("who", "where",
  "which"). Empty when it asks for none of them (a why or how question).
- ``held_kinds(sentence)``: the kinds of value a sentence holds: an amount with a currency, a
  clock time, a day or month date, a digit, a duration, an identifier (letters with digits or
  underscores, or code in backticks), a capitalised name inside the sentence.
- ``holds_asked(sentence, kinds)``: whether the sentence holds any of ``kinds``.

A sentence holding the kind of value asked for is likelier the answer than one that only
repeats the question's words: "Total premium paid: 87,40 EUR" for "how much did we pay".
"""

from __future__ import annotations

import re
from typing import Final

_MONTH: Final = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY: Final = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun)"
_HELD: Final[dict[str, re.Pattern[str]]] = {
    "money": re.compile(r"\d[\d.,]*\s*(€|eur\b|euros?\b|usd\b|\$|£|gbp\b)|(€|\$|£)\s*\d", re.IGNORECASE),
    "time": re.compile(r"\b\d{1,2}[:h]\d{2}\b|\b\d{1,2}\s*(am|pm)\b", re.IGNORECASE),
    "date": re.compile(
        rf"\b\d{{1,2}}(st|nd|rd|th)?\s+(of\s+)?{_MONTH}\b|\b{_MONTH}\s+\d{{1,2}}\b|\b{_DAY}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b",
        re.IGNORECASE,
    ),
    "number": re.compile(r"\d"),
    "code": re.compile(
        r"`[^`]+`|\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[\w-]+(\.[\w-]+)+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{2,}-?\d+\b"
    ),
    "name": re.compile(r"(?<=[a-z,;:(] )[A-Z][\w'’-]+"),
}
_ASKED: Final[tuple[tuple[re.Pattern[str], frozenset[str]], ...]] = (
    (
        re.compile(
            r"\bhow much\b|\b(cost|costs|price|fee|fees|charge|charged|paid|pay|spend|refund\w*)\b", re.I
        ),
        frozenset({"money", "number"}),
    ),
    (re.compile(r"\bwhat time\b|\bhow (early|late)\b|\bhours\b", re.I), frozenset({"time"})),
    (
        re.compile(
            r"\bwhen\b|\bwhat (day|date)\b|\bwhich (day|date)\b|\bdeadline\b|\b(until|by) when\b", re.I
        ),
        frozenset({"date", "time"}),
    ),
    (re.compile(r"\bhow (many|long|often|old|far|big|fast)\b", re.I), frozenset({"number"})),
    (
        re.compile(r"\b(code|number|version|release|id|ref|reference|name of|called)\b", re.I),
        frozenset({"code", "number"}),
    ),
    (re.compile(r"\b(who|whom|whose|where|which)\b", re.I), frozenset({"name"})),
)


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of value ``question`` asks for (see the module contract)."""
    kinds: set[str] = set()
    for pattern, named in _ASKED:
        if pattern.search(question):
            kinds |= named
    return frozenset(kinds)


def held_kinds(sentence: str) -> frozenset[str]:
    """The kinds of value ``sentence`` holds."""
    return frozenset(kind for kind, pattern in _HELD.items() if pattern.search(sentence))


def holds_asked(sentence: str, kinds: frozenset[str]) -> bool:
    """Whether ``sentence`` holds a value of one of ``kinds``."""
    return any(_HELD[kind].search(sentence) for kind in kinds)
