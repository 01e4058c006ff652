"""What a grant holds, learned once per caller and kept at most a minute.

Contract: a ``Memo`` keeps successful RS answers to read-only questions about a grant (the
compact schema of one stream: its connections and ``expand_capabilities``) so the stages
that need them (the expand gate, the merged-sources note) cost no RS read per call in
steady state. An entry is keyed by the caller (a digest of the token it was read with,
never the token) and the exact path and query, in an ``expiring.Expiring`` table; it
lives ``seconds`` (60, the bound of the bearer verdict cache: a grant changed at the RS is
seen within it; less with ``PDPP_GRANT_MEMO_SECONDS``, 0 to turn it off, never more), the
table holds at most ``entries`` (least recently used first out). Failures are never kept. When the
RS refuses one of a caller's reads because the grant itself changed (``grant_changed``: a
401 other than a stream or connection outside the grant, a 403 ``grant_revoked`` or
``grant_expired``) every entry of that caller is dropped (``forget``).

``BoundRsClient.memoised(path, query)`` reads through the memo of its ``RsClient``;
readers that wrap one (the stdio door's kind check and renewal) pass ``memoised`` on,
and ``memoised_read(rs, path, query)`` falls back to a plain read for any other reader.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from pdpp_gateway.expiring import Expiring
from pdpp_gateway.rs.errors import ASKED_OUTSIDE_GRANT

MEMO_SECONDS: Final = 60.0  # the most it may be: the bearer verdict cache's bound


def memo_seconds(env: Mapping[str, str] | None = None) -> float:
    """``PDPP_GRANT_MEMO_SECONDS`` (0 turns the memo off), never above ``MEMO_SECONDS``."""
    raw = (os.environ if env is None else env).get("PDPP_GRANT_MEMO_SECONDS", "")
    try:
        seconds = float(raw) if raw.strip() else MEMO_SECONDS
    except ValueError:
        return MEMO_SECONDS
    return min(max(seconds, 0.0), MEMO_SECONDS) if seconds == seconds else MEMO_SECONDS


MEMO_ENTRIES: Final = 4096
Key = tuple[str, str, tuple[tuple[str, str], ...]]


def grant_changed(status: int, code: str) -> bool:
    """Whether an RS refusal says the caller's grant itself changed (lapsed, revoked, unknown):
    then what the memo knew of it is dropped. A read outside the grant says nothing new."""
    if status == 401:
        return code not in ASKED_OUTSIDE_GRANT
    return status == 403 and code in ("grant_revoked", "grant_expired")


def caller_key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:32]


class Memo:
    def __init__(
        self,
        seconds: float | None = None,
        entries: int = MEMO_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._seconds = memo_seconds() if seconds is None else seconds
        self._table: Expiring[Key, Any] = Expiring(entries, clock)

    def get(self, key: Key) -> Any | None:
        return self._table.get(key)

    def put(self, key: Key, value: Any) -> None:
        self._table.put(key, value, self._seconds)

    def forget(self, caller: str) -> None:
        self._table.forget(lambda key: key[0] == caller)


class _Memoising(Protocol):
    async def memoised(self, path: str, query: Sequence[tuple[str, str]] = ()) -> Any: ...


async def memoised_read(rs: Any, path: str, query: Sequence[tuple[str, str]] = ()) -> Any:
    """``rs.memoised(path, query)`` where the reader has a memo, else ``rs.get_json``."""
    reader: _Memoising | None = rs if callable(getattr(rs, "memoised", None)) else None
    if reader is not None:
        return await reader.memoised(path, query)
    return await rs.get_json(path, query)
