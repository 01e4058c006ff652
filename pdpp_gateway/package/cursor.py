"""The cursor of a merged package search page: where every child continues, opaque to callers.

Contract:

- A package cursor is ``"pkg1." + base64url(JSON)`` (no padding) of
  ``{"v": 1, "f": <fingerprint>, "t": <turn>, "c": [[<child key>, <RS cursor or null>, <skip>], ...]}``.
  Each entry is one child that still has hits to show, in the package's member order:
  the RS cursor that fetched the page it is part-way through (null: its first page) and
  how many hits of that fetched page were already consumed. ``t`` is the index (in ``c``)
  of the child whose turn comes next in the round-robin.
- It holds child keys (``member_keys``: grant id, else first connection id), RS cursors
  and counts: never a token. ``encode`` returns ``None`` past ``MAX_CURSOR_CHARS`` (the tools' cursor bound),
  so the merged page says how to page one source at a time instead of sending a cursor the
  caller could not send back.
- ``fingerprint`` binds a cursor to the search it continues (query, mode, streams, filter;
  not ``limit``, which may change between pages).
- ``decode`` (run once per call, by the search's parser: ``tools.args``) accepts only what
  ``encode`` produces for the same search, and ``check_children`` only a cursor whose
  children the package still has: anything garbled, forged, of another version, for
  another search or naming a child the package no longer has is a typed 400
  ``invalid_cursor`` refusal telling the caller to send ``next_cursor`` exactly as
  returned, or to start over without ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import orjson
from mcp_gateway_middleware import ToolError

from pdpp_gateway.context import PackageMember
from pdpp_gateway.tools.specs import MAX_HANDLE_CHARS, MAX_PAGE_LIMIT

PREFIX: Final = "pkg1."
VERSION: Final = 1
MAX_CURSOR_CHARS: Final = MAX_HANDLE_CHARS
_FINGERPRINT_CHARS: Final = 16
_UNBOUND_ARGUMENTS: Final = frozenset({"cursor", "limit"})


@dataclass(frozen=True, slots=True)
class ChildPosition:
    """Where one child's remaining hits start: ``skip`` hits into the page ``rs_cursor`` fetches."""

    key: str
    rs_cursor: str | None
    skip: int


@dataclass(frozen=True, slots=True)
class PackageCursor:
    fingerprint: str
    children: tuple[ChildPosition, ...]
    turn: int  # index in ``children`` of the child to take the next hit from


def member_keys(members: Sequence[PackageMember]) -> list[str]:
    """Each member's stable name inside a cursor, in member order: its grant id, else its first
    connection id; a repeated name gets ``#2``, ``#3``, ... (never a token)."""
    keys: list[str] = []
    seen: Counter[str] = Counter()
    for member in members:
        name = member.grant_id or (member.connection_ids[0] if member.connection_ids else "member")
        seen[name] += 1
        keys.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return keys


def is_package_cursor(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith(PREFIX)


def fingerprint(arguments: Mapping[str, Any]) -> str:
    """A short digest of the search a cursor belongs to (every argument but cursor and limit)."""
    bound = {key: value for key, value in arguments.items() if key not in _UNBOUND_ARGUMENTS}
    digest = hashlib.sha256(orjson.dumps(bound, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return digest[:_FINGERPRINT_CHARS]


def encode(cursor: PackageCursor) -> str | None:
    """The cursor text, or ``None`` if it would exceed ``MAX_CURSOR_CHARS``."""
    payload = {
        "v": VERSION,
        "f": cursor.fingerprint,
        "t": cursor.turn,
        "c": [[child.key, child.rs_cursor, child.skip] for child in cursor.children],
    }
    text = PREFIX + base64.urlsafe_b64encode(orjson.dumps(payload)).decode("ascii").rstrip("=")
    return text if len(text) <= MAX_CURSOR_CHARS else None


def decode(text: str, *, expected_fingerprint: str) -> PackageCursor:
    """The cursor ``encode`` made for this search, or a typed ``invalid_cursor``."""
    if not is_package_cursor(text) or len(text) > MAX_CURSOR_CHARS:
        raise invalid_cursor("it is not a merged-search cursor of this gateway")
    body = text[len(PREFIX) :]
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
        payload = orjson.loads(raw)
    except (binascii.Error, ValueError):
        raise invalid_cursor("it is garbled") from None
    if not isinstance(payload, dict) or payload.get("v") != VERSION:
        raise invalid_cursor("it is garbled or from another gateway version")
    if payload.get("f") != expected_fingerprint:
        raise invalid_cursor("it belongs to a different search (query, mode, streams or filter changed)")
    children = tuple(_child(entry) for entry in _list(payload.get("c")))
    if len({child.key for child in children}) != len(children):
        raise invalid_cursor("it is garbled")
    turn = payload.get("t")
    if not _is_count(turn) or (children and turn >= len(children)) or (not children and turn != 0):
        raise invalid_cursor("it is garbled")
    return PackageCursor(fingerprint=expected_fingerprint, children=children, turn=turn)


def check_children(cursor: PackageCursor, known_keys: Collection[str]) -> PackageCursor:
    """``cursor`` if every child it continues is one of ``known_keys``, else ``invalid_cursor``."""
    if any(child.key not in known_keys for child in cursor.children):
        raise invalid_cursor("a source it continues is no longer part of this package")
    return cursor


def invalid_cursor(why: str) -> ToolError:
    return ToolError(
        {
            "type": "invalid_request_error",
            "code": "invalid_cursor",
            "message": f"This cursor cannot continue the merged package search: {why}. Pass next_cursor "
            "exactly as the previous page returned it, with the same query, mode, streams and filter, "
            "or drop cursor to start from the first page.",
            "param": "cursor",
        },
        http_status=400,
    )


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise invalid_cursor("it is garbled")
    return value


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _child(entry: object) -> ChildPosition:
    if not isinstance(entry, list) or len(entry) != 3:
        raise invalid_cursor("it is garbled")
    key, rs_cursor, skip = entry
    if not isinstance(key, str) or not (rs_cursor is None or isinstance(rs_cursor, str)):
        raise invalid_cursor("it is garbled")
    if not _is_count(skip) or skip >= MAX_PAGE_LIMIT:
        raise invalid_cursor("it is garbled")
    return ChildPosition(key=key, rs_cursor=rs_cursor, skip=skip)
