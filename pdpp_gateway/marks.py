"""Matched text as RS search shows it: ``<mark>`` tags parsed, and previews cut around a mark.

Contract (plain strings in and out; no I/O):

- ``parse_marks(text)``: the visible text of a ``<mark>``-tagged string and its marked
  ``[start, end)`` ranges; tags cut at either end are dropped, an unclosed mark is closed.
- ``balance_marks(text)``: ``text`` with well-formed tags (stray closers and nested openers
  dropped, an unclosed mark closed at the end).
- ``preview_around_mark(text, limit)``: at most ``limit`` visible characters centred on the
  first match, tags well-formed, ``…`` where text was cut, cut at word boundaries; with
  whether it cut.
- ``shows_part(preview)``: whether a preview shows part of its field (``…`` at an end).
- ``read_more_query(text)``: a literal, distinctive span of a preview around its first match,
  for ``read_record_field q`` (the RS's ``q`` lands on the first occurrence in the field).
"""

from __future__ import annotations

import re
from typing import Final

PREVIEW_CHARS: Final = 240
QUERY_CHARS: Final = 80
_SNAP_CHARS: Final = 24
_TAG: Final = re.compile(r"</?mark>")
_CUT_TAG_START: Final = re.compile(r"^(?:/?mark>|ark>|rk>|k>)")
_CUT_TAG_END: Final = re.compile(r"</?(?:m(?:a(?:rk?)?)?)?$")


def balance_marks(text: str) -> str:
    """``text`` with well-formed ``<mark>`` tags: cut tags at either end dropped, stray
    closers and nested openers dropped, an unclosed mark closed at the end."""
    plain, marks = parse_marks(text)
    return _render_marks(plain, marks, 0, len(plain))


def parse_marks(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The visible text of a ``<mark>``-tagged string and its marked ``[start, end)`` ranges."""
    text = _CUT_TAG_END.sub("", _CUT_TAG_START.sub("", text))
    parts: list[str] = []
    marks: list[tuple[int, int]] = []
    size = position = 0
    opened: int | None = None
    for tag in _TAG.finditer(text):
        chunk = text[position : tag.start()]
        parts.append(chunk)
        size += len(chunk)
        position = tag.end()
        if tag.group() == "<mark>":
            opened = size if opened is None else opened
        elif opened is not None:
            if size > opened:
                marks.append((opened, size))
            opened = None
    parts.append(text[position:])
    size += len(parts[-1])
    if opened is not None and size > opened:
        marks.append((opened, size))
    return "".join(parts), marks


def _render_marks(plain: str, marks: list[tuple[int, int]], lo: int, hi: int) -> str:
    out: list[str] = []
    position = lo
    for start, end in marks:
        start, end = max(start, lo), min(end, hi)
        if start >= end:
            continue
        out.append(plain[position:start])
        out.append(f"<mark>{plain[start:end]}</mark>")
        position = end
    out.append(plain[position:hi])
    return "".join(out)


def _snap(plain: str, lo: int, hi: int, keep: tuple[int, int], bounds: tuple[int, int]) -> tuple[int, int]:
    """Move a cut ``[lo, hi)`` inward to word boundaries, never past ``keep`` or by much."""
    floor, ceiling = bounds
    if lo > floor and not plain[lo - 1].isspace():
        space = plain.find(" ", lo, min(keep[0], lo + _SNAP_CHARS))
        lo = space + 1 if space >= 0 else lo
    if hi < ceiling and not plain[hi].isspace():
        space = plain.rfind(" ", max(keep[1], hi - _SNAP_CHARS), hi)
        hi = space if space >= 0 else hi
    return lo, hi


def _around(first: tuple[int, int], budget: int, bounds: tuple[int, int]) -> tuple[int, int]:
    """A span of at most ``budget`` chars inside ``bounds``, centred on ``first``."""
    floor, ceiling = bounds
    start, end = first
    if end - start >= budget:
        return start, start + budget
    lo = max(floor, start - (budget - (end - start)) // 2)
    hi = min(ceiling, lo + budget)
    return max(floor, hi - budget), hi


def preview_around_mark(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """At most ``limit`` visible chars (tags do not count) centred on the first match,
    with well-formed tags and ``…`` where text was cut; (preview, cut).

    A single mark longer than the limit is itself cut (and still closed)."""
    plain, marks = parse_marks(text)
    if len(plain) <= limit:
        return _render_marks(plain, marks, 0, len(plain)), False
    budget = max(1, limit - 2)  # room for an ellipsis on each side
    first = marks[0] if marks else (0, 0)
    lo, hi = _around(first, budget, (0, len(plain)))
    lo, hi = _snap(plain, lo, hi, (first[0], min(first[1], hi)), (0, len(plain)))
    body = _render_marks(plain, marks, lo, hi)
    return ("…" if lo else "") + body + ("…" if hi < len(plain) else ""), True


def shows_part(preview: object) -> bool:
    """Whether a preview shows part of its field (``…`` where the text goes on), not all of it."""
    text = str(preview or "").strip()
    return text.startswith("…") or text.endswith("…")


def read_more_query(text: str, limit: int = QUERY_CHARS) -> str | None:
    """A literal span of the preview around its first match, for ``read_record_field q``.

    The RS window ``q`` lands on the FIRST occurrence in the field, so the bare marked
    term can land far from the previewed match. A longer stretch of the preview's own
    text (one line, no ellipsis, up to ``limit`` chars, whole words) is distinctive
    enough to land on the window the preview shows."""
    plain, marks = parse_marks(text)
    if not marks:
        return None
    start, end = marks[0]
    floor = max(plain.rfind("\n", 0, start), plain.rfind("…", 0, start)) + 1
    stops = [i for i in (plain.find("\n", end), plain.find("…", end)) if i >= 0]
    ceiling = min(stops) if stops else len(plain)
    lo, hi = _around((start, end), limit, (floor, ceiling))
    lo, hi = _snap(plain, lo, hi, (start, min(end, hi)), (floor, ceiling))
    query = plain[lo:hi].strip()
    return query or plain[start:end].strip() or None
