"""A caller's token the RS refuses in the middle of a call: learned once, answered as a 401.

The bearer stage trusts a verdict for up to a minute (``tokens.CachedValidator``). A grant its
owner revokes inside that minute is still admitted, and the RS refuses every read: without
this, each call would cost an RS read and answer a tool error at HTTP 200, and an OAuth client
would never be asked to sign in again.

Contract:

- ``RefusalWatch(reader, learn)`` wraps a single-grant caller's bound reader (its memoised
  reads kept: ``rs.memo``). A read the RS answers with a refusal of the token itself
  (``token_refusal``: a 401 other than a refusal of what was asked,
  ``errors.ASKED_OUTSIDE_GRANT``; a 403 revoking or expiring the grant or the token) raises as
  before, and first notes its reason for the request in flight and, once per request, hands it
  to ``learn`` (the verdict cache's ``refuse``: the cached verdict turns inactive and, with
  Redis, every replica's does: ``shared_state.SharedRefusals``).
- ``watching()``: the bearer stage enters it around each request's handler; the ``Seen`` it
  yields holds the reason noted during that request (reads in tasks the handler started
  included: they share the request's context), else ``None``. The stage then answers the
  request with the refusal's 401 and its ``WWW-Authenticate`` challenge instead.
- Nothing here sees or logs the token: ``learn`` is bound to it by the caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from pdpp_gateway.rs.errors import ASKED_OUTSIDE_GRANT, RsStatusError
from pdpp_gateway.rs.memo import memoised_read

if TYPE_CHECKING:
    from pdpp_gateway.context import RsReader
    from pdpp_gateway.rs.client import RsBlob, RsResponse

T = TypeVar("T")

# what a 403 says of the grant or the token itself (not of what was asked)
_REFUSED_403: Final = frozenset({"grant_revoked", "grant_expired", "token_revoked", "token_expired"})


@dataclass(slots=True)
class Seen:
    reason: str | None = None  # the RS's refusal of the caller's token during the request


_SEEN: Final[ContextVar[Seen | None]] = ContextVar("pdpp_refused_token", default=None)


@contextmanager
def watching() -> Iterator[Seen]:
    """The refusal of the caller's token seen while the block runs (see the contract)."""
    seen = Seen()
    mark = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(mark)


def token_refusal(error: RsStatusError) -> str | None:
    """The reason an RS error refuses the caller's token itself, or ``None``."""
    code = error.code.removeprefix("context.")
    if error.status == 401 and error.code not in ASKED_OUTSIDE_GRANT:
        return code or "inactive"
    if error.status == 403 and code in _REFUSED_403:
        return code
    return None


@dataclass(frozen=True, slots=True)
class RefusalWatch:
    """A bound reader that notes the RS's refusal of its token (see the contract)."""

    reader: RsReader
    learn: Callable[[str], Awaitable[None]]

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        return await self._watched(self.reader.get_json(path, query))

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        return await self._watched(self.reader.get_bytes(path, query, max_bytes=max_bytes))

    async def memoised(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        """The reader's memoised read (``rs.memo``), watched the same way."""
        response: RsResponse = await self._watched(memoised_read(self.reader, path, query))
        return response

    async def _watched(self, read: Awaitable[T]) -> T:
        """``read``'s answer; a refusal of the token is noted before it propagates."""
        try:
            return await read
        except RsStatusError as error:
            await self._note(error)
            raise

    async def _note(self, error: RsStatusError) -> None:
        reason = token_refusal(error)
        if reason is None:
            return
        seen = _SEEN.get()
        first = seen is None or seen.reason is None
        if seen is not None:
            seen.reason = reason
        if first:
            await self.learn(reason)
