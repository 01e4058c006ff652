"""A bounded table whose entries expire: the one cache shape of the gateway.

Contract: ``Expiring(entries, clock)`` keeps at most ``entries`` values, each until its own
expiry (``put(key, value, lifetime)``: ``clock() + lifetime``; a lifetime of 0 or less is
not kept). ``get`` answers a live value (and marks it most recently used) or ``None``,
dropping an expired one; past the bound the least recently used goes first.
``expiry(key)`` is a live entry's expiry, ``forget(which)`` drops every entry whose key
``which`` picks. Its users: the bearer verdict cache (``hosted.tokens.CachedValidator``),
the admissions built from those verdicts (``hosted.bearer``, kept with no expiry of their own)
and what a grant holds (``rs.memo.Memo``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Expiring(Generic[K, V]):
    def __init__(self, entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries = entries
        self._clock = clock
        self._table: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._table.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del self._table[key]
            return None
        self._table.move_to_end(key)
        return found[1]

    def expiry(self, key: K) -> float | None:
        found = self._table.get(key)
        return found[0] if found is not None and found[0] > self._clock() else None

    def put(self, key: K, value: V, lifetime: float) -> None:
        if lifetime <= 0:
            return
        self._table[key] = (self._clock() + lifetime, value)
        self._table.move_to_end(key)
        while len(self._table) > self._entries:
            self._table.popitem(last=False)

    def forget(self, which: Callable[[K], bool]) -> None:
        for key in [key for key in self._table if which(key)]:
            del self._table[key]
