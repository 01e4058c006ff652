"""Whether any member of one fanned-out package search found a record holding every word.

A package is one person's data held under several grants, so "no record holds every word
of the question" (``retrieval.search`` step 2, the turn to meaning-based search) is a
fact about the whole package, not about one member: when one member's first lexical page
has hits, another member's empty page is simply empty, and its meaning-based reads would
only add approximate hits (and RS reads) beside records that hold the words.

Contract (one ``FirstPages`` per fanned-out first page, shared by its member calls through
``GatewayContext.first_pages``; ``package.search.search_calls`` makes it):

- ``FirstPages(members, wait, fused_limit)``: made for ``members`` member calls;
  ``fused_limit`` is each member's share of a page of meaning-based hits when the caller
  set no ``limit`` (``None`` when it did): a package's fused page holds about as many
  approximate hits as one grant's (``retrieval.search.FUSED_LIMIT``), not a share of 25
  each.
- ``report(found)``: a member's first lexical page had hits (``True``) or not (a page
  meeting a two-word question's words only apart counts as none: ``retrieval.search``
  step 1). Each member reports exactly once; a member that fails or is cancelled before
  its page reports ``False`` (its caller does so in a ``finally``), so no member waits on
  one that will never answer.
- ``any_found(found)``: reports, then waits until every member has reported, at most
  ``wait`` seconds (a slow member is not waited for past that: its page counts as empty;
  the fan-out sets a third of a member's deadline, so the waiting member still has time to
  search by meaning), and answers whether any member's page had hits.
"""

from __future__ import annotations

import asyncio
import contextlib


class FirstPages:
    """The first lexical pages of one fanned-out package search (see the module contract)."""

    __slots__ = ("_all_in", "_any", "_left", "_wait", "fused_limit")

    def __init__(self, members: int, wait: float, fused_limit: int | None = None) -> None:
        self._left, self._wait = members, wait
        self.fused_limit = fused_limit
        self._any = False
        self._all_in = asyncio.Event()
        if members <= 0:
            self._all_in.set()

    def report(self, found: bool) -> None:
        self._any = self._any or found
        self._left -= 1
        if self._left <= 0:
            self._all_in.set()

    async def any_found(self, found: bool) -> bool:
        self.report(found)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_in.wait(), self._wait)
        return self._any
