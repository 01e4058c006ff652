"""A reader over the cached grant that renews its access token mid-session (stdio).

Contract: ``RenewingRs`` is an ``RsReader`` reading with the token cached for the provider.
When the RS answers 401 saying the access token itself is no good (``TOKEN_REFUSED``:
expired, revoked or unknown; not a stream or connection outside the grant) it renews the grant
once with the cached refresh token (``commands.connect.refresh_cached``: the same
checks as ``pdpp-gateway connect --refresh``, the cache rewritten), then repeats the
read with the new token. Concurrent reads that hit the same 401 share one renewal. When
there is nothing to renew with, or the renewal is refused, the original 401 stands (the
caller sees the same error as without renewal). No token is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

import anyio

from pdpp_gateway.rs.client import BoundRsClient, RsBlob, RsClient, RsResponse
from pdpp_gateway.rs.errors import RsStatusError

_log = logging.getLogger(__name__)
T = TypeVar("T")
# 401 codes that mean "this access token is no longer good" (not "outside the grant":
# context.stream_not_allowed / instance_mismatch are answered as they are)
TOKEN_REFUSED: Final = frozenset({"context.active_false", "authentication_error", "invalid_token"})


class RenewingRs:
    def __init__(self, rs: RsClient, provider_url: str, token: str, cache_root: Path) -> None:
        self._rs = rs
        self._provider_url = provider_url
        self._cache_root = cache_root
        self._reader = rs.bind(token)
        self._lock = anyio.Lock()

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        return await self._read(lambda reader: reader.get_json(path, query))

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        return await self._read(lambda reader: reader.get_bytes(path, query, max_bytes=max_bytes))

    async def _read(self, call: Callable[[BoundRsClient], Awaitable[T]]) -> T:
        reader = self._reader
        try:
            return await call(reader)
        except RsStatusError as error:
            if error.status != 401 or error.code not in TOKEN_REFUSED or not await self._renew(reader):
                raise
        return await call(self._reader)

    async def _renew(self, stale: BoundRsClient) -> bool:
        from pdpp_gateway.commands.connect import refresh_cached
        from pdpp_gateway.credentials import CredentialError, load_credential
        from pdpp_gateway.oauth_flow import ConnectError

        async with self._lock:
            if self._reader is not stale:  # another read renewed it meanwhile
                return True
            try:
                await refresh_cached(self._provider_url, self._cache_root)
                credential = load_credential(self._provider_url, self._cache_root)
            except (ConnectError, CredentialError) as error:
                _log.warning("the access token was refused and could not be renewed: %s", error.message)
                return False
            self._reader = self._rs.bind(credential.access_token)
            _log.info("renewed the access token with the cached refresh token")
            return True
