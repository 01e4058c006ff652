"""Renewing a cached grant's access token: one refresh per grant at a time, across processes.

Contract:

- ``renew(provider_url, cache_root, connector, stale=...)`` returns a usable ``Credential``
  for the provider's grant for ``connector`` (``None``: its first grant). Under the
  provider file's lock (``grant_cache.locked_async``) it re-reads the grant: when the
  cached access token is no longer ``stale`` (another reader or another process renewed
  it) and is not lapsing, that is the answer and the authorization server is not asked.
  Otherwise the cached refresh token is exchanged once (``oauth_flow.refresh``) and what
  the AS issued (access token, the rotated refresh token, ``expires_at``, ``issued_at``) is
  written at once, atomically and 0600, before anything else happens: nothing that fails
  later (the RS down, a check refused) can lose a refresh token the AS has already rotated.
  ``stale=None`` renews unconditionally (``connect --refresh``).
- Failures raise ``RenewalError`` (a ``ConnectError``, so the CLI prints it as one line
  with its exit code). ``refused`` is true when only a new consent helps (the AS refused
  the refresh token with 400 or 401, or none is cached): the message then names the exact
  command, ``pdpp-gateway connect URL [--connector ID] --cache-root DIR``
  (``reconnect_command``). Otherwise (the AS could not be reached or failed, the lock was
  held too long) the grant is intact and a later try can succeed.
- An AS answer labelled ``owner`` or ``mcp_package`` is never cached: the grant is removed
  from the cache and the renewal refused (77). ``discard`` removes a grant whose renewed
  token the RS itself names so (``connect --refresh`` asks it).
- No message or log line holds a token.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pdpp_gateway.local.credentials import Credential, cache_file_for, load_credential
from pdpp_gateway.local.grant_cache import (
    GrantLockTimeout,
    is_for,
    label,
    locked,
    locked_async,
    read_payload,
    sections,
    short_id,
    write_grants,
)
from pdpp_gateway.local.oauth_flow import ConnectError
from pdpp_gateway.local_verdict import REFUSED_KINDS
from pdpp_gateway.refusals import ExitCode

_log = logging.getLogger(__name__)


class RenewalError(ConnectError):
    """A grant that could not be renewed; ``refused``: only a new consent helps."""

    def __init__(self, message: str, exit_code: int, *, refused: bool, reconnect: str) -> None:
        super().__init__(message, exit_code)
        self.refused = refused
        self.reconnect = reconnect


def reconnect_command(provider_url: str, connector: str | None, cache_root: Path) -> str:
    """The exact command that approves this grant again."""
    narrowed = f" --connector {short_id(connector)}" if connector else ""
    return f"pdpp-gateway connect {provider_url}{narrowed} --cache-root {cache_root.absolute()}"


def expiry_of(answer: dict[str, Any], now: datetime) -> str | None:
    """``expires_at`` for a token answer's ``expires_in`` (ISO 8601, to the millisecond)."""
    seconds = answer.get("expires_in")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        return (now + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
    return None


async def renew(
    provider_url: str, cache_root: Path, connector: str | None, *, stale: str | None
) -> Credential:
    """A usable credential for the grant: another renewal's result, else a fresh one."""
    path = cache_file_for(provider_url, cache_root)
    again = reconnect_command(provider_url, connector, cache_root)
    try:
        async with locked_async(path):
            grants = sections(read_payload(path) or {})
            index = next((i for i, g in enumerate(grants) if is_for(g, connector)), None)
            if index is None or not isinstance(grants[index].get("credential"), dict):
                raise RenewalError(
                    f"no grant is cached for {provider_url} in {path}. Run `{again}`.",
                    ExitCode.NO_CREDENTIAL,
                    refused=True,
                    reconnect=again,
                )
            if stale is not None:
                current = load_credential(provider_url, cache_root, connector=connector, now=_epoch())
                if current.access_token != stale and not current.lapsing():
                    return current  # renewed meanwhile, by another reader or process
            grants[index] = await _refreshed(grants[index], provider_url, again)
            if _refused_label(grants[index]):
                del grants[index]
                write_grants(path, provider_url, grants)
                raise RenewalError(
                    f"the authorization server renewed the grant for {provider_url} as an owner or "
                    f"package token, which is never used; it was removed from the cache. Run `{again}`.",
                    ExitCode.REFUSED_KIND,
                    refused=True,
                    reconnect=again,
                )
            write_grants(path, provider_url, grants)
    except GrantLockTimeout:
        raise RenewalError(
            f"another process held the credential cache {path} locked too long; retry in a moment.",
            ExitCode.UNAVAILABLE,
            refused=False,
            reconnect=again,
        ) from None
    _log.info("renewed the access token of the %s grant for %s", label(grants[index]), provider_url)
    return load_credential(provider_url, cache_root, connector=connector, now=_epoch())


def discard(provider_url: str, cache_root: Path, connector: str | None) -> None:
    """Remove the grant for ``connector`` from the cache (the RS named its renewed token an
    owner or package token: the cache must never hold one)."""
    path = cache_file_for(provider_url, cache_root)
    with locked(path):
        grants = sections(read_payload(path) or {})
        write_grants(path, provider_url, [g for g in grants if not is_for(g, connector)])


def _epoch() -> datetime:
    """A time before any expiry: loading must not refuse a token that just lapsed."""
    return datetime(1970, 1, 2, tzinfo=UTC)


async def _refreshed(section: dict[str, Any], provider_url: str, again: str) -> dict[str, Any]:
    """The grant with what the AS issued for its refresh token (the request made once)."""
    import aiohttp

    from pdpp_gateway.local import oauth_flow as flow

    credential: dict[str, Any] = dict(section["credential"])
    client = section.get("client")
    refresh_token, endpoint = credential.get("refresh_token"), credential.get("token_endpoint")
    client_id = client.get("client_id") if isinstance(client, dict) else None
    if not (isinstance(refresh_token, str) and isinstance(endpoint, str) and isinstance(client_id, str)):
        raise RenewalError(
            f"the grant cached for {provider_url} has no refresh token; approve a new one: `{again}`.",
            ExitCode.NO_CREDENTIAL,
            refused=True,
            reconnect=again,
        )
    try:
        async with aiohttp.ClientSession() as session:
            answer = await flow.refresh(session, endpoint, client_id, refresh_token, provider_url)
    except ConnectError as error:
        # refused: the AS said no to this grant (RFC 6749 §5.2: 400 invalid_grant, 401
        # invalid_client); anything else (unreachable, 5xx, a wrong endpoint) may pass
        refused = error.http_status in (400, 401)
        step = f"approve it again: `{again}`." if refused else "the grant is intact; retry in a moment."
        raise RenewalError(
            f"{error.message.split('. Run', 1)[0].rstrip('.')}; {step}",
            error.exit_code,
            refused=refused,
            reconnect=again,
        ) from None
    now = datetime.now(UTC)
    credential["access_token"] = answer["access_token"]
    credential["issued_at"] = now.isoformat(timespec="milliseconds")
    expires_at = expiry_of(answer, now)
    if expires_at:
        credential["expires_at"] = expires_at
    else:
        credential.pop("expires_at", None)
    if isinstance(answer.get("refresh_token"), str):
        credential["refresh_token"] = answer["refresh_token"]
    if isinstance(answer.get("grant_id"), str):
        credential["grant_id"] = answer["grant_id"]
    if isinstance(answer.get("pdpp_token_kind"), str):
        credential["pdpp_token_kind"] = answer["pdpp_token_kind"]
    renewed = {**section, "credential": credential}
    if isinstance(answer.get("authorization_details"), list):
        renewed["authorization_details"] = answer["authorization_details"]
    if answer.get("grant_package_id"):
        credential["pdpp_token_kind"] = "mcp_package"
    return renewed


def _refused_label(section: dict[str, Any]) -> bool:
    kind = str(section["credential"].get("pdpp_token_kind", "")).lower()
    return kind in REFUSED_KINDS
