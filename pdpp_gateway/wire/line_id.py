"""The id of a stdin line the SDK's JSON parser refused, read without recursion and in bounded time.

Contract: ``request_id(line)`` is the integer or string value of the line's one top-level
``"id"`` member, or ``None`` when it cannot be read safely: the line is not one object
(brackets and strings unbalanced, or text after it), holds no ``"id"`` or more than one,
the id is neither an integer nor a string, or a string holding an unpaired surrogate (it
could not be written back as UTF-8). What lies inside a nested value is not read, only
skipped, so a line the parser refused for what it holds deep down (nesting past its depth
limit, a lone surrogate escape, a number past 4,300 digits, a raw control character)
still gives its id back, and its sender gets its answer instead of waiting for ever.

Nothing here recurses: brackets are counted, and each run of openers or closers between
two strings is counted in one pass of C code (``str.count``), so a line nested a million
deep costs a few steps. Work is bounded by ``MAX_STEPS`` strings and bracket runs; past
it the id is ``None``.
"""

from __future__ import annotations

import json
import re
from typing import Final

MAX_STEPS: Final = 100_000
_SPACE: Final = re.compile(r"[ \t\n\r]*")
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR: Final = re.compile(r'[^\s,:\[\]{}"]+')  # a number, true/false/null, or a bare word
_INTEGER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
_UP_TO_CLOSER: Final = re.compile(r'[^"\]}]*')
_UP_TO_OPENER: Final = re.compile(r'[^"\[{]*')


class _OutOfSteps(Exception):
    pass


class _Scan:
    """One pass over a line, ``MAX_STEPS`` at most; ``None`` from a step: not readable."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.steps = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _OutOfSteps

    def skip(self, pos: int, run: re.Pattern[str] = _SPACE) -> int:
        """The end of ``run`` (which may match nothing) from ``pos``."""
        match = run.match(self.line, pos)
        return match.end() if match else pos

    def string(self, pos: int) -> int | None:
        self.step()
        match = _STRING.match(self.line, pos)
        return match.end() if match else None

    def value(self, pos: int) -> int | None:
        """The end of the value starting at ``pos``."""
        first = self.line[pos : pos + 1]
        if first == '"':
            return self.string(pos)
        if first in ("[", "{"):
            return self.nested(pos)
        match = _SCALAR.match(self.line, pos)
        return match.end() if match else None

    def nested(self, pos: int) -> int | None:
        """The end of the array or object opening at ``pos``, its brackets counted."""
        line, depth = self.line, 0
        while True:
            self.step()
            end = self.skip(pos, _UP_TO_CLOSER)
            depth += line.count("[", pos, end) + line.count("{", pos, end)
            pos = end
            if pos == len(line):
                return None
            if line[pos] == '"':
                after = self.string(pos)
                if after is None:
                    return None
                pos = after
                continue
            end = self.skip(pos, _UP_TO_OPENER)
            closers = line.count("]", pos, end) + line.count("}", pos, end)
            if closers < depth:
                depth -= closers
                pos = end
                continue
            return _after_closer(line, pos, end, depth)


def _after_closer(line: str, start: int, end: int, nth: int) -> int:
    """The position just after the ``nth`` closing bracket in ``line[start:end]`` (which holds
    at least ``nth``): at once when the run begins with ``nth`` closers in a row (deep
    nesting, closed), else found by halving, each probe one C-speed count."""
    if line.count("]", start, start + nth) + line.count("}", start, start + nth) == nth:
        return start + nth
    low, high = start, end
    while low < high:
        middle = (low + high) // 2
        if line.count("]", start, middle + 1) + line.count("}", start, middle + 1) >= nth:
            high = middle
        else:
            low = middle + 1
    return low + 1


def request_id(line: str) -> int | str | None:
    """The line's top-level id, when it can be read safely (see the module contract)."""
    try:
        token = _id_token(_Scan(line))
    except _OutOfSteps:
        return None
    if token is None:
        return None
    if token.startswith('"'):
        text = _text(token)
        return text if text is not None and _writable(text) else None
    if not _INTEGER.fullmatch(token):
        return None
    try:
        return int(token)
    except ValueError:  # past Python's 4,300-digit bound
        return None


def _writable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (no unpaired surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _text(token: str) -> str | None:
    """A string token's text (one flat string: no nesting to recurse into)."""
    try:
        text = json.loads(token)
    except ValueError:
        return None
    return text if isinstance(text, str) else None


def _id_token(scan: _Scan) -> str | None:
    """The raw text of the one top-level ``"id"`` member's value."""
    line = scan.line
    pos = scan.skip(0)
    if line[pos : pos + 1] != "{":
        return None
    pos = scan.skip(pos + 1)
    tokens: list[str] = []
    while line[pos : pos + 1] != "}":
        key_end = scan.string(pos)
        if key_end is None:
            return None
        key = line[pos:key_end]
        pos = scan.skip(key_end)
        if line[pos : pos + 1] != ":":
            return None
        start = scan.skip(pos + 1)
        end = scan.value(start)
        if end is None:
            return None
        if key == '"id"' or ("\\" in key and _text(key) == "id"):
            tokens.append(line[start:end])
        pos = scan.skip(end)
        if line[pos : pos + 1] == ",":
            pos = scan.skip(pos + 1)
        elif line[pos : pos + 1] != "}":
            return None
    if scan.skip(pos + 1) != len(line):
        return None  # text after the object: not one message
    return tokens[0] if len(tokens) == 1 else None
