"""Finding the passage of a long text field that answers a question, through field-window reads.

Contract:

- ``scan_field(rs, ref, field, limit_chars, enough=...)`` reads one text field of one record
  from its start through the RS's field-window route (GETs only, the caller's own client),
  the first window alone (it tells the field's length, and ``enough`` of its text may say it
  will do: the rest is not read), the rest concurrently, each at most ``WINDOW_CHARS`` (the
  RS's largest window), at most ``limit_chars`` in all. It answers the
  text read, the field's whole length and the connection the RS served. RS failures
  propagate as ``RsError`` (a field that is not text: the RS's 422).
- ``read_windows(rs, ref, field, question, count, limit_chars)`` scans the field (only its
  first window when one stretch of it holds every word of the question: the rest is not
  read) and answers what it read with its ``count`` windows that best carry the answer
  (``sentences.answer_windows``, in a thread): the one scorer behind a search's evidence and
  an aimed ``near`` read alike.
- ``window_evidence(scanned, window, naming, field, limit)`` is the search-hit evidence for an
  answer window (``sentences.answer_windows``): its marked preview (``Window.preview``, at most
  ``limit``: ``PREVIEW_CHARS``, the width the window was chosen with, so the answer that follows
  the line introducing it is shown, not left to a read; more when the sentence chosen runs on),
  where it lies (``at_chars`` of ``total_chars``), ``provenance: "passage"`` and, unless the
  preview shows the whole field, the ``read_record_field`` arguments that open around it.
- ``windows_evidence(scanned, windows, question, naming, field)``: the evidence of a field's
  windows, best first; a field read whole that fits one window (``sentences.MAX_CHARS``) is
  one window, the whole text (``sentences.whole_window``), with no read offered: its two best
  windows would show it in two pieces, each offering a read of it all.
- ``window_around(scanned, passage, limit_chars)`` is the field-window answer centred on a
  passage, holding its sentences whole where they fit (never ending inside the sentence it
  was aimed at), in the RS's own window shape (offsets, ``has_more``, next/previous offsets and
  the match span), so ``read_record_field`` renders it as any other window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from pdpp_gateway.context import RsReader
from pdpp_gateway.documents import CONTEXT_CHARS
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.marks import shows_part
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.passages import Passage, best_passage, sentence_bounds
from pdpp_gateway.question.sentences import MAX_CHARS, Window, answer_windows, whole_window
from pdpp_gateway.question.sentences import WINDOW_CHARS as ANSWER_WINDOW_CHARS
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.rs.errors import RsProtocolError
from pdpp_gateway.tools.specs import MAX_WINDOW_CHARS

WINDOW_CHARS: Final = MAX_WINDOW_CHARS
PREVIEW_CHARS: Final = ANSWER_WINDOW_CHARS  # the width an answer window was chosen with
READ_AROUND_CHARS: Final = 1_200  # an answer window's read-more: the window and what surrounds it


@dataclass(frozen=True, slots=True)
class ScannedField:
    text: str  # the field from its first character, as far as it was read
    total: int  # the field's whole length
    connection_id: str | None  # the connection the RS served it from


async def scan_field(
    rs: RsReader,
    ref: RecordRef,
    field: str,
    limit_chars: int,
    *,
    enough: Callable[[str], bool] = lambda text: False,
) -> ScannedField:
    """The field's text from its start, at most ``limit_chars``, or only its first window when
    ``enough`` says that one will do (see the module contract)."""
    path = rs_path("v1", "streams", ref.stream, "records", ref.record_id, "field-window")
    naming = [("connection_id", ref.connection_id)] if ref.connection_id else []

    async def window(offset: int) -> Mapping[str, Any]:
        size = min(WINDOW_CHARS, limit_chars - offset)
        query = [*naming, ("field", field), ("offset_chars", str(offset)), ("limit_chars", str(size))]
        response = await rs.get_json(path, query)
        shown = as_mapping(response.body.get("window"))
        if not isinstance(shown.get("text"), str):
            raise RsProtocolError("its field-window answer has no window text")
        return response.body

    first = await window(0)
    shown = as_mapping(first.get("window"))
    text = str(shown["text"])
    total = shown.get("total_chars")
    total = total if isinstance(total, int) and total >= len(text) else len(text)
    done = not text or enough(text)
    offsets = range(0) if done else range(len(text), min(total, limit_chars), WINDOW_CHARS)
    rest = await asyncio.gather(*(window(offset) for offset in offsets))
    parts = [text, *(str(as_mapping(body.get("window"))["text"]) for body in rest)]
    connection = first.get("connection_id")
    return ScannedField(
        text="".join(parts),
        total=total,
        connection_id=connection if isinstance(connection, str) and connection else ref.connection_id,
    )


async def read_windows(
    rs: RsReader, ref: RecordRef, field: str, question: Question, count: int, limit_chars: int
) -> tuple[ScannedField, list[Window]]:
    """The field as far as it was read and its answer windows for ``question`` (see the contract)."""
    enough = partial(_holds_all, question.terms)
    scanned = await scan_field(rs, ref, field, limit_chars, enough=enough)
    return scanned, await asyncio.to_thread(answer_windows, question, scanned.text, count)


def _holds_all(words: Sequence[str], text: str) -> bool:
    """Whether one stretch of ``text`` holds every one of ``words`` (``passages.best_passage``)."""
    passage = best_passage(text, words)
    return passage is not None and passage.matched == passage.asked


def windows_evidence(
    scanned: ScannedField,
    windows: Sequence[Window],
    question: Question,
    naming: Mapping[str, str],
    field: str,
) -> list[dict[str, Any]]:
    """The hit evidence of a field's answer windows, best first (see the module contract)."""
    if windows and len(scanned.text) == scanned.total <= MAX_CHARS:
        whole = whole_window(question, scanned.text, windows[0])
        return [window_evidence(scanned, whole, naming, field, limit=scanned.total)]
    return [window_evidence(scanned, window, naming, field) for window in windows]


def window_evidence(
    scanned: ScannedField, window: Window, naming: Mapping[str, str], field: str, limit: int = PREVIEW_CHARS
) -> dict[str, Any]:
    """The hit evidence of an answer window of the scanned field, with the read that opens
    around it (``READ_AROUND_CHARS``, from a little before it) unless it shows the whole field."""
    preview = window.preview(scanned.text, limit)
    evidence: dict[str, Any] = {
        "field": field,
        "preview": preview,
        "truncated": True,
        "provenance": "passage",
        "at_chars": window.start,
        "total_chars": scanned.total,
        "words_matched": window.matched,
        "words_asked": window.asked,
    }
    if shows_part(preview) or scanned.total > len(scanned.text):  # a text shown whole: nothing to read
        evidence["read"] = {
            "tool": "read_record_field",
            "arguments": {
                **naming,
                "field": field,
                "offset_chars": max(0, window.start - CONTEXT_CHARS),
                "limit_chars": READ_AROUND_CHARS,
            },
        }
    return evidence


def window_around(scanned: ScannedField, passage: Passage, limit_chars: int) -> dict[str, Any]:
    """The field window of ``limit_chars`` centred on ``passage``, in the RS's window shape,
    holding the passage's sentences whole where they fit."""
    text = scanned.text
    middle = (passage.start + passage.end) // 2
    start = max(0, min(middle - limit_chars // 2, len(text) - limit_chars))
    end = min(len(text), start + limit_chars)
    first, last = sentence_bounds(text, passage.start, passage.end)
    if last - first <= limit_chars:  # slide the window over the whole sentence, not past it
        if first < start:
            start, end = first, min(len(text), first + limit_chars)
        elif last > end:
            end = last
            start = max(0, last - limit_chars)
    return {
        "text": text[start:end],
        "start_chars": start,
        "end_chars": end,
        "limit_chars": limit_chars,
        "total_chars": scanned.total,
        "complete": start == 0 and end == scanned.total,
        "has_more": end < scanned.total,
        "next_offset_chars": end if end < scanned.total else None,
        "previous_offset_chars": max(0, start - limit_chars) if start > 0 else None,
        "match_start_chars": passage.start,
        "match_end_chars": passage.end,
    }
