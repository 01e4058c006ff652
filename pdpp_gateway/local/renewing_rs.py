"""A reader over one cached grant that keeps its access token alive (stdio and terminal commands).

Contract: ``RenewingRs`` is an ``RsReader`` reading with the cached grant's access token.

- Ahead of time: a read that finds less than the token's renewal margin left
  (``Credential.lapsing``: a minute, or a tenth of its lifetime when shorter) renews first.
  If that renewal fails the read still goes ahead with the token it has (it may still
  be good); only the RS's refusal decides.
- After the fact: when the RS refuses the access token itself (``local.package.token_lapsed``:
  401 with a token code, or the reference RS's 403 ``grant_expired``; never a stream or
  connection outside the grant) it renews once and repeats that read with the new token.
- When the RS refuses even the renewed token (the grant is gone at the RS while the
  authorization server still renews it), later refusals are not renewed for
  ``FIRST_HOLD_SECONDS``, doubling at each such refusal up to ``MAX_HOLD_SECONDS``: the
  refusal is answered at once instead of costing a renewal per call. A read that passes
  ends the spacing.
- Renewals go through ``renewal.renew``: one per grant at a time in this reader (concurrent
  reads wait for the same one), and across processes the provider file's lock, where a
  reader that finds a newer token in the cache uses it instead of refreshing.
- When the renewal is refused (the refresh token is spent or revoked), the read fails
  with the RS's own error object plus ``reconnect``, the exact ``pdpp-gateway connect``
  command that approves the grant again (``render.errors.next_step`` words it). Later
  reads do not ask the authorization server again until the cache holds another token
  (the person reconnected, in any terminal): then that token is used. When the AS cannot
  be reached the read fails as ``upstream_unavailable`` (the grant is intact; retry).
- No token is logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

from pdpp_gateway.local.credentials import Credential, load_credential
from pdpp_gateway.local.package import token_lapsed
from pdpp_gateway.local.renewal import RenewalError, reconnect_command, renew
from pdpp_gateway.local_verdict import CredentialError
from pdpp_gateway.rs.client import BoundRsClient, RsBlob, RsClient, RsResponse
from pdpp_gateway.rs.errors import RsStatusError, RsUnavailableError

_log = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_HOLD_SECONDS: Final = 30.0
MAX_HOLD_SECONDS: Final = 600.0


class RenewingRs:
    def __init__(self, rs: RsClient, credential: Credential, cache_root: Path) -> None:
        self._rs = rs
        self._credential = credential
        self._cache_root = cache_root
        self._reader = rs.bind(credential.access_token)
        self._lock = asyncio.Lock()
        self._refused: RenewalError | None = None
        self._hold = 0.0  # how long renewals wait after the RS refused a renewed token
        self._held_until = 0.0  # (monotonic) no renewal on a refusal before this

    @property
    def credential(self) -> Credential:
        return self._credential

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        return await self._read(lambda reader: reader.get_json(path, query))

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        return await self._read(lambda reader: reader.get_bytes(path, query, max_bytes=max_bytes))

    async def memoised(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        return await self._read(lambda reader: reader.memoised(path, query))

    async def _read(self, call: Callable[[BoundRsClient], Awaitable[T]]) -> T:
        if self._credential.lapsing() and self._credential.refreshable and self._refused is None:
            try:
                await self._renew(self._credential.access_token)
            except RenewalError as early:
                _log.warning("could not renew the access token ahead of its expiry: %s", early.message)
        used = self._credential.access_token
        try:
            return await call(self._reader)
        except RsStatusError as error:
            if not token_lapsed(error.status, error.code):
                raise  # not the token's fault
            if time.monotonic() < self._held_until:  # renewing has just not helped: approve again
                raise self._with_reconnect(error) from None
            try:
                await self._renew(used)
            except RenewalError as failure:
                raise _failed(error, failure) from None
        try:
            answer = await call(self._reader)
        except RsStatusError as error:
            if token_lapsed(error.status, error.code):  # the RS refuses even a renewed token
                self._hold = min(max(2 * self._hold, FIRST_HOLD_SECONDS), MAX_HOLD_SECONDS)
                self._held_until = time.monotonic() + self._hold
                _log.warning(
                    "the resource server refused a renewed access token; not renewing again for %.0f s",
                    self._hold,
                )
                raise self._with_reconnect(error) from None
            raise
        self._hold = 0.0
        return answer

    async def _renew(self, stale: str) -> None:
        """Make the reader's token newer than ``stale`` (or raise ``RenewalError``)."""
        async with self._lock:
            if self._credential.access_token != stale:
                return  # another read renewed it meanwhile
            if self._refused is not None and not self._adopt_cached(stale):
                raise self._refused
            if self._credential.access_token != stale:
                return  # the person reconnected: the cache holds a new grant
            try:
                credential = await renew(
                    self._credential.provider_url, self._cache_root, self._credential.connector, stale=stale
                )
            except RenewalError as failure:
                if failure.refused:
                    self._refused = failure
                _log.warning("the access token could not be renewed: %s", failure.message)
                raise
            self._use(credential)

    def _with_reconnect(self, error: RsStatusError) -> RsStatusError:
        """The RS's refusal with the exact command that approves this grant again (its
        provider, connector and cache), not a placeholder."""
        again = reconnect_command(self._credential.provider_url, self._credential.connector, self._cache_root)
        return RsStatusError(error.status, {**error.envelope, "reconnect": again}, error.request_id)

    def _adopt_cached(self, stale: str) -> bool:
        """Use the cache's token when it is no longer ``stale``; False when it still is."""
        try:
            cached = load_credential(
                self._credential.provider_url, self._cache_root, connector=self._credential.connector
            )
        except CredentialError:
            return False
        if cached.access_token == stale:
            return False
        self._use(cached)
        return True

    def _use(self, credential: Credential) -> None:
        self._credential = credential
        self._reader = self._rs.bind(credential.access_token)
        self._refused = None


def _failed(error: RsStatusError, failure: RenewalError) -> Exception:
    """The read's error once renewing failed: the RS's refusal with the command that
    approves the grant again, or ``upstream_unavailable`` when the AS could not be asked."""
    if not failure.refused:
        return RsUnavailableError(
            "the access token lapsed and the authorization server could not be reached to renew it"
        )
    return RsStatusError(error.status, {**error.envelope, "reconnect": failure.reconnect}, error.request_id)
