"""The credential cache (``pdpp-gateway connect``, like the reference ``pdpp connect``): where a local gateway finds its scoped token.

Contract:

- File: ``<cache_root>/clients/<host>.json`` where ``<host>`` is the provider URL's
  host including port, every character outside ``[A-Za-z0-9.-]`` replaced by ``_``
  (``localhost:7663`` → ``localhost_7663.json``). Shape as ``pdpp-gateway connect`` writes it:
  ``{provider_url, authorization_server, scope, client, credential{access_token,
  token_type, expires_at?, grant_id?, scope?}, created_at}``.
- A provider's file may hold several grants, one per connector (``grant_cache``):
  ``load_credentials`` returns each (narrowed to ``connectors``), lapsed ones included, with
  what a reader needs to renew it (``connector``, ``issued_at``, ``refreshable``,
  ``lapsing``: less than a minute, or a tenth of its lifetime, left); ``load_credential``
  the one for ``connector`` (else the first), refusing a lapsed one.
- ``load_credential`` fails closed with a ``CredentialError`` whose message names the
  fix (``pdpp-gateway connect <provider-url>``) and whose exit code the CLI returns, both
  from the one table (``refusals.REFUSALS``): 78 for a missing, expired or malformed
  credential, 77 for one labelled ``owner`` or ``mcp_package`` (package tokens are only
  valid at a hosted ``/mcp``), 64 for a bad provider URL. A file whose ``provider_url``
  names another origin is refused, so a copied file cannot send a token elsewhere.
  The file is read through ``cache_files``: a link, a FIFO or device, another user's file,
  one not mode 600, or a folder others can write is refused (78) with the fix.
- What a local door makes of a bearer's facts (``judge``, ``CredentialError``) is
  ``local_verdict``'s, below the RS readers that use it too.
- ``expires_at`` is an ISO 8601 timestamp or a number of epoch seconds; anything else
  (``"garbage"``, a boolean, an out-of-range number) makes the credential malformed
  rather than never-expiring.
- Labels are only a first filter: the stdio door also asks the RS what the token is
  (``rs.token_kind``) before any data read, since an unlabelled owner token looks like
  any other bearer here.
- Owner credentials in the environment (``PDPP_OWNER_TOKEN``,
  ``PDPP_OWNER_SESSION_COOKIE``) are never read for use; ``owner_env_warning`` only
  says they are ignored.
- No message, repr or log line contains a token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from pdpp_gateway.caller import BearerFacts
from pdpp_gateway.local import cache_files
from pdpp_gateway.local.grant_cache import (
    connector_of,
    is_for,
    label,
    locked,
    parse_payload,
    put_section,
    read_payload,
    sections,
    write_grants,
)
from pdpp_gateway.local_verdict import REFUSED_KINDS, CredentialError, judge, problem

OWNER_ENV_VARS: Final = ("PDPP_OWNER_TOKEN", "PDPP_OWNER_SESSION_COOKIE")
_KIND_FLAGS: Final = ("pdpp_token_kind", "token_kind", "kind", "role")


@dataclass(frozen=True, slots=True)
class Credential:
    provider_url: str
    access_token: str = field(repr=False)
    token_type: str
    grant_id: str | None
    scope: str | None
    expires_at: datetime | None
    cache_file: Path
    connector: str | None = None  # the source the grant was asked for (``connect --connector``)
    issued_at: datetime | None = None  # when this access token was issued, where recorded
    refreshable: bool = False  # a refresh token and a token endpoint are cached with it

    def renew_margin(self) -> float:
        """Seconds before ``expires_at`` at which a reader renews: a minute, or a tenth of
        the token's lifetime when that is shorter (a 10-minute token: 60 s; 5 s: 0.5 s)."""
        if self.expires_at is None or self.issued_at is None:
            return 60.0
        lifetime = (self.expires_at - self.issued_at).total_seconds()
        return max(0.0, min(60.0, lifetime / 10))

    def lapsing(self, now: datetime | None = None) -> bool:
        """True once less than ``renew_margin`` is left (or it has lapsed)."""
        if self.expires_at is None:
            return False
        left = (self.expires_at - (now or datetime.now(UTC))).total_seconds()
        return left <= self.renew_margin()

    def lapsed(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or datetime.now(UTC))


def normalize_url(raw: str) -> str:
    """``https://`` by default; http/https only; no userinfo, query, fragment or trailing slash."""
    text = raw.strip()
    if "://" not in text:
        text = "https://" + text
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise problem("invalid_provider_url", repr(raw))
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def normalize_provider_url(raw: str) -> str:
    """``normalize_url``, and an MCP endpoint URL (a path ending in ``/mcp``, what a client's
    settings show) names the provider it fronts: the ``/mcp`` is dropped (the RS's ``/v1``
    never lives under it)."""
    url = normalize_url(raw)
    return url.removesuffix("/mcp") if urlsplit(url).path.endswith("/mcp") else url


def cache_file_for(provider_url: str, cache_root: Path) -> Path:
    host = urlsplit(normalize_provider_url(provider_url)).netloc
    return cache_root / "clients" / (re.sub(r"[^A-Za-z0-9.-]", "_", host) + ".json")


def load_credential(
    provider_url: str, cache_root: Path, *, connector: str | None = None, now: datetime | None = None
) -> Credential:
    """The cached scoped credential for ``provider_url`` (its grant for ``connector``, else
    its first grant), or a ``CredentialError`` (``credential_expired`` once it has lapsed)."""
    url = normalize_provider_url(provider_url)
    (credential,) = load_credentials(url, cache_root, connectors=(connector,) if connector else ())[:1]
    if credential.lapsed(now):
        assert credential.expires_at is not None
        raise problem(
            "credential_expired", f"the one for {url} expired at {credential.expires_at.isoformat()}", url
        )
    return credential


def load_credentials(
    provider_url: str, cache_root: Path, *, connectors: Sequence[str] = ()
) -> list[Credential]:
    """Every grant cached for ``provider_url`` (narrowed to ``connectors`` when given, in
    that order), lapsed ones included (``Credential.lapsed``), or a ``CredentialError``."""
    url = normalize_provider_url(provider_url)
    path = cache_file_for(url, cache_root)
    data = cache_files.read(path)  # CacheRefused: a link, a FIFO, another owner, mode not 600
    if data is None:
        raise problem("not_connected", f"looked for {url} in {path}", url)
    payload = parse_payload(data)
    if payload is None or not isinstance(payload.get("credential"), dict):
        raise problem("credential_invalid", f"{path} is malformed", url)
    cached_url = payload.get("provider_url")
    if isinstance(cached_url, str) and cached_url and _same_origin(cached_url, url) is False:
        raise problem(
            "credential_invalid",
            f"{path} holds a credential for another provider; it is never sent to {url}",
            url,
        )
    if _refused_kind(payload) is not None:  # a label on the file: its first grant's
        judge(BearerFacts(kind=_refused_kind(payload)), url)
    grants = sections(payload)
    if connectors:
        chosen: list[dict[str, Any]] = []
        for asked in connectors:
            found = next((g for g in grants if is_for(g, asked)), None)
            if found is None:
                cached = ", ".join(label(g) for g in grants)
                raise problem(
                    "not_connected",
                    f"no grant for connector {asked!r} of {url} in {path}; cached: {cached}",
                    url,
                )
            if all(found is not g for g in chosen):
                chosen.append(found)
        grants = chosen
    return [_credential(url, path, grant) for grant in grants]


def _credential(url: str, path: Path, section: Mapping[str, Any]) -> Credential:
    """One grant of the file as a ``Credential``; ``CredentialError`` when it is unusable."""
    credential = section.get("credential")
    if not isinstance(credential, dict):
        raise problem("credential_invalid", f"{path} is malformed", url)
    refused_label = _refused_kind(section) or _refused_kind(credential)
    if refused_label is not None:  # a label can only refuse; the RS decides what the token is
        judge(BearerFacts(kind=refused_label), url)
    token = credential.get("access_token")
    token_type = credential.get("token_type") or "Bearer"
    if not isinstance(token, str) or not token.strip() or str(token_type).lower() != "bearer":
        raise problem("credential_invalid", f"{path} has no usable bearer token", url)
    try:
        expires_at = _parse_time(credential.get("expires_at"))
        issued_at = _parse_time(credential.get("issued_at"))
    except ValueError:
        raise problem(
            "credential_invalid",
            f"{path} has an unreadable expires_at: not an ISO 8601 time or epoch seconds",
            url,
        ) from None
    client = section.get("client")
    return Credential(
        provider_url=url,
        access_token=token.strip(),
        token_type="Bearer",
        grant_id=_text(credential.get("grant_id")) or _text(section.get("grant_id")),
        scope=_text(credential.get("scope")) or _text(section.get("scope")),
        expires_at=expires_at,
        cache_file=path,
        connector=connector_of(section),
        issued_at=issued_at,
        refreshable=bool(
            _text(credential.get("refresh_token"))
            and _text(credential.get("token_endpoint"))
            and isinstance(client, dict)
            and _text(client.get("client_id"))
        ),
    )


def owner_env_warning(env: Mapping[str, str]) -> str | None:
    """A notice that owner credentials in the environment are ignored (never their value)."""
    present = [name for name in OWNER_ENV_VARS if env.get(name)]
    if not present:
        return None
    return f"{' and '.join(present)} is set and ignored: the gateway never uses owner credentials."


def write_credential(
    cache_root: Path,
    provider_url: str,
    access_token: str,
    *,
    grant_id: str | None = None,
    expires_at: str | None = None,
    client_id: str | None = None,
    authorization_server: str | None = None,
    extra: Mapping[str, Any] | None = None,
    client: Mapping[str, Any] | None = None,
    authorization_details: list[Any] | None = None,
    connector: str | None = None,
) -> Path:
    """Cache a grant the way ``pdpp-gateway connect`` does (0700 dir, 0600 file, atomic),
    in place of the provider's grant for the same ``connector`` (``grant_cache``); the
    provider's other grants stay.

    ``client`` is the registered client as cached (else ``{client_id}``);
    ``authorization_details`` the granted details, kept for ``connect --list``.
    """
    url = normalize_provider_url(provider_url)
    path = cache_file_for(url, cache_root)
    section = grant_section(
        access_token,
        grant_id=grant_id,
        expires_at=expires_at,
        authorization_server=authorization_server or url,
        extra=extra,
        client=dict(client) if client else {"client_id": client_id} if client_id else None,
        authorization_details=authorization_details,
        connector=connector,
    )
    with locked(path):
        payload = read_payload(path)
        same = payload is not None and _same_origin(str(payload.get("provider_url") or url), url)
        existing = sections(payload) if payload is not None and same else []
        write_grants(path, url, put_section(existing, section))
    return path


def grant_section(
    access_token: str,
    *,
    grant_id: str | None,
    expires_at: str | None,
    authorization_server: str,
    extra: Mapping[str, Any] | None,
    client: dict[str, Any] | None,
    authorization_details: list[Any] | None,
    connector: str | None,
) -> dict[str, Any]:
    """One grant as the cache holds it (``grant_cache.GRANT_KEYS``)."""
    credential: dict[str, Any] = {"access_token": access_token, "token_type": "Bearer", "scope": "pdpp:read"}
    if grant_id:
        credential["grant_id"] = grant_id
    if expires_at:
        credential["expires_at"] = expires_at
    credential.update(extra or {})
    section: dict[str, Any] = {}
    if connector:
        section["connector"] = connector
    section |= {
        "authorization_server": authorization_server,
        "scope": "pdpp:read",
        "client": client,
        "credential": credential,
        "created_at": datetime.now(UTC).isoformat(),
    }
    if authorization_details is not None:
        section["authorization_details"] = authorization_details
    return section


def _refused_kind(section: Mapping[str, Any]) -> str | None:
    for flag in _KIND_FLAGS:
        kind = str(section.get(flag, "")).strip().lower()
        if kind in REFUSED_KINDS:
            return kind
    return None


def _same_origin(a: str, b: str) -> bool | None:
    try:
        return urlsplit(normalize_provider_url(a)).netloc.lower() == urlsplit(b).netloc.lower()
    except CredentialError:
        return None


def _parse_time(value: object) -> datetime | None:
    """``None`` when absent; epoch seconds or ISO 8601; ``ValueError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("boolean expires_at")
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*", value):
        value = float(value)
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("expires_at out of range") from None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expires_at is not a time")
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
