"""Every grant cached for one provider, in one file, and the lock that serialises changing it.

Contract:

- One file per provider, ``<cache_root>/clients/<host>.json`` (``credentials.cache_file_for``).
  Its top level is the provider's first grant, in exactly the shape the reference adapter
  reads (``provider_url``, ``authorization_server``, ``scope``, ``client``,
  ``credential{access_token, token_type, expires_at?, refresh_token?, ...}``,
  ``created_at``, ``authorization_details``), so a provider with one grant is a file the
  reference reads as its own. Further grants of the same provider (the reference AS issues
  one client grant per source) sit under ``more_grants``: a list of objects with the same
  per-grant keys. The reference adapter ignores that key and serves the first grant.
- A grant is known by ``connector``: the source the person asked for
  (``connect --connector gmail``), or ``None`` for a grant over whatever the consent page
  offered. ``matches`` also recognises a grant written before ``connector`` was recorded
  by the one source its ``authorization_details`` name. Connecting the same connector
  again replaces that grant only (``put_section``).
- Reads, writes and the lock go through ``cache_files`` (no link followed, owner and mode
  checked, a size bound): writes are atomic, the file 0600 and its directories 0700; a
  write of no grants removes the file.
- ``locked(path)`` / ``locked_async(path)``: an exclusive ``flock`` on a sidecar lock file
  (``clients/.<host>.lock``), held across "re-read, change, write". Refresh tokens rotate
  and a reused one revokes the grant at the reference AS, so every renewal and every write
  of a provider's file happens under it, across processes (two desktop chats on one cache)
  and within one (each grant has its own reader). ``GrantLockTimeout`` after
  ``LOCK_SECONDS``.
- Standard library only (a local door reads the cache before the SDK has loaded). No
  message or repr holds a token.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pdpp_gateway.local import cache_files

MORE_GRANTS: Final = "more_grants"
GRANT_KEYS: Final = (
    "connector",
    "authorization_server",
    "scope",
    "client",
    "credential",
    "authorization_details",
    "created_at",
)
LOCK_SECONDS: Final = 30.0
_POLL_SECONDS: Final = 0.02


class GrantLockTimeout(Exception):
    """Another process held the provider's cache lock for ``LOCK_SECONDS``."""


def read_payload(path: Path) -> dict[str, Any] | None:
    """The file's JSON object; ``None`` when it is missing, not JSON or not an object;
    ``cache_files.CacheRefused`` when it (or its folder) is not safe to read."""
    data = cache_files.read(path)
    return parse_payload(data) if data is not None else None


def parse_payload(data: bytes) -> dict[str, Any] | None:
    """A cache file's bytes as its JSON object; ``None`` when not JSON or not an object."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None


def sections(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every grant in the file, the top-level one first (each a dict of ``GRANT_KEYS``)."""
    first = {key: payload[key] for key in GRANT_KEYS if key in payload}
    more = payload.get(MORE_GRANTS)
    extra = [dict(entry) for entry in more if isinstance(entry, dict)] if isinstance(more, list) else []
    return [first, *extra] if isinstance(first.get("credential"), dict) or not extra else extra


def connector_of(section: Mapping[str, Any]) -> str | None:
    """The connector a grant was asked for; for an older entry, the one source it names."""
    recorded = section.get("connector")
    if isinstance(recorded, str) and recorded:
        return recorded
    sources = source_ids(section)
    return sources[0] if len(sources) == 1 else None


def source_ids(section: Mapping[str, Any]) -> list[str]:
    """The connector source ids the grant's ``authorization_details`` name, in order."""
    found: list[str] = []
    details = section.get("authorization_details")
    for entry in details if isinstance(details, list) else ():
        source = entry.get("source") if isinstance(entry, dict) else None
        ident = source.get("id") if isinstance(source, dict) else None
        if isinstance(ident, str) and ident and ident not in found:
            found.append(ident)
    return found


def short_id(connector: str) -> str:
    """A connector as a person names it: ``https://registry.pdpp.dev/connectors/gmail`` → ``gmail``."""
    return connector.rstrip("/").rsplit("/", 1)[-1]


def same_connector(asked: str | None, known: str | None) -> bool:
    """``gmail`` names the source ``https://registry.pdpp.dev/connectors/gmail`` too."""
    if asked is None or known is None:
        return asked is known
    return asked == known or asked == short_id(known) or short_id(asked) == known


def is_for(section: Mapping[str, Any], connector: str | None) -> bool:
    """Whether ``section`` is the grant for ``connector`` (``None``: any grant)."""
    return connector is None or same_connector(connector, connector_of(section))


def matches(section: Mapping[str, Any], connector: str | None) -> bool:
    """Whether a grant asked for ``connector`` (``None``: not narrowed) would replace ``section``.
    A grant that recorded no connector is replaced by an unnarrowed one, or by one for the
    only source it names."""
    recorded = section.get("connector")
    if isinstance(recorded, str) and recorded:
        return same_connector(connector, recorded)
    if connector is None:
        return True
    sources = source_ids(section)
    return len(sources) == 1 and same_connector(connector, sources[0])


def label(section: Mapping[str, Any]) -> str:
    """How the person names the grant: its connector's short id, or ``(all offered)``."""
    connector = connector_of(section)
    return short_id(connector) if connector else "(all offered)"


def put_section(existing: Sequence[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The grants with ``new`` in place of the one for the same connector (else added last)."""
    connector = new.get("connector") if isinstance(new.get("connector"), str) else None
    placed = False
    result: list[dict[str, Any]] = []
    for section in existing:
        if not placed and matches(section, connector):
            result.append(new)
            placed = True
        else:
            result.append(section)
    return result if placed else [*result, new]


def payload_of(provider_url: str, grants: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The file's JSON: the first grant at the top level, the rest under ``more_grants``."""
    first, *rest = grants
    payload: dict[str, Any] = {"provider_url": provider_url, **first}
    if rest:
        payload[MORE_GRANTS] = [dict(section) for section in rest]
    return payload


def write_grants(path: Path, provider_url: str, grants: Sequence[Mapping[str, Any]]) -> None:
    """Write the provider's grants atomically (0600); no grants left removes the file.
    The caller holds ``locked(path)``."""
    if not grants:
        cache_files.remove(path)
        return
    cache_files.write(path, json.dumps(payload_of(provider_url, grants), indent=2).encode())


def _lock_file(path: Path) -> int:
    return cache_files.open_lock(path.parent / f".{path.stem}.lock")


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def locked(path: Path, seconds: float = LOCK_SECONDS) -> Iterator[None]:
    """Hold the provider file's lock (blocking this thread, at most ``seconds``)."""
    fd = _lock_file(path)
    try:
        deadline = time.monotonic() + seconds
        while not _try(fd):
            if time.monotonic() >= deadline:
                raise GrantLockTimeout(str(path))
            time.sleep(_POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.asynccontextmanager
async def locked_async(path: Path, seconds: float = LOCK_SECONDS) -> AsyncIterator[None]:
    """``locked`` for a coroutine: waits without blocking the event loop."""
    import asyncio

    fd = _lock_file(path)
    try:
        deadline = time.monotonic() + seconds
        while not _try(fd):
            if time.monotonic() >= deadline:
                raise GrantLockTimeout(str(path))
            await asyncio.sleep(_POLL_SECONDS)
        yield
    finally:
        os.close(fd)
