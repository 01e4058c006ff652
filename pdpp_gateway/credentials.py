"""The credential cache (``pdpp-gateway connect``, like the reference ``pdpp connect``): where a local gateway finds its scoped token.

Contract:

- File: ``<cache_root>/clients/<host>.json`` where ``<host>`` is the provider URL's
  host including port, every character outside ``[A-Za-z0-9.-]`` replaced by ``_``
  (``localhost:7663`` → ``localhost_7663.json``). Shape as ``pdpp-gateway connect`` writes it:
  ``{provider_url, authorization_server, scope, client, credential{access_token,
  token_type, expires_at?, grant_id?, scope?}, created_at}``.
- ``load_credential`` fails closed with a ``CredentialError`` whose message names the
  fix (``pdpp-gateway connect <provider-url>``) and whose exit code the CLI returns: 78 for a
  missing, expired or malformed credential, 77 for one labelled ``owner`` or
  ``mcp_package`` (package tokens are only valid at a hosted ``/mcp``), 64 for a bad
  provider URL. A file whose ``provider_url`` names another origin is refused, so a
  copied file cannot send a token elsewhere.
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

import json
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

_log = logging.getLogger(__name__)

EXIT_USAGE: Final = 64
EXIT_OWNER_REFUSED: Final = 77
EXIT_NO_CREDENTIAL: Final = 78
OWNER_ENV_VARS: Final = ("PDPP_OWNER_TOKEN", "PDPP_OWNER_SESSION_COOKIE")
_KIND_FLAGS: Final = ("pdpp_token_kind", "token_kind", "kind", "role")
REFUSED_KINDS: Final = frozenset({"owner", "mcp_package"})


class CredentialError(Exception):
    """No usable scoped credential; ``message`` is one stderr-ready line."""

    def __init__(self, code: str, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class Credential:
    provider_url: str
    access_token: str = field(repr=False)
    token_type: str
    grant_id: str | None
    scope: str | None
    expires_at: datetime | None
    cache_file: Path


def normalize_provider_url(raw: str) -> str:
    """``https://`` by default; http/https only; no userinfo, query, fragment or trailing slash."""
    text = raw.strip()
    if "://" not in text:
        text = "https://" + text
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise CredentialError(
            "invalid_provider_url",
            f"Invalid provider URL {raw!r}: use the RS origin, e.g. https://pdpp.example.com",
            EXIT_USAGE,
        )
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def cache_file_for(provider_url: str, cache_root: Path) -> Path:
    host = urlsplit(normalize_provider_url(provider_url)).netloc
    return cache_root / "clients" / (re.sub(r"[^A-Za-z0-9.-]", "_", host) + ".json")


def load_credential(provider_url: str, cache_root: Path, *, now: datetime | None = None) -> Credential:
    """The cached scoped credential for ``provider_url``, or a ``CredentialError``."""
    url = normalize_provider_url(provider_url)
    path = cache_file_for(url, cache_root)
    connect = f"Run `pdpp-gateway connect {url}`"
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CredentialError(
            "not_connected",
            f"No scoped PDPP credential cached for {url} (looked in {path}). {connect} first.",
            EXIT_NO_CREDENTIAL,
        ) from None
    except OSError as error:
        raise CredentialError(
            "credential_invalid",
            f"Cannot read {path} ({error.strerror}). {connect} again.",
            EXIT_NO_CREDENTIAL,
        ) from None
    _warn_if_readable_by_others(path)
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("credential"), dict):
        raise CredentialError(
            "credential_invalid",
            f"The cached credential in {path} is malformed. {connect} again.",
            EXIT_NO_CREDENTIAL,
        )
    credential: dict[str, Any] = payload["credential"]
    refused = _refused_kind(payload) or _refused_kind(credential)
    if refused is not None:
        raise refused_kind_error(url, refused)
    cached_url = payload.get("provider_url")
    if isinstance(cached_url, str) and cached_url and _same_origin(cached_url, url) is False:
        raise CredentialError(
            "credential_invalid",
            f"{path} holds a credential for another provider; refusing to send it to {url}. {connect}.",
            EXIT_NO_CREDENTIAL,
        )
    token = credential.get("access_token")
    token_type = credential.get("token_type") or "Bearer"
    if not isinstance(token, str) or not token.strip() or str(token_type).lower() != "bearer":
        raise CredentialError(
            "credential_invalid",
            f"The cached credential in {path} has no usable bearer token. {connect} again.",
            EXIT_NO_CREDENTIAL,
        )
    try:
        expires_at = _parse_time(credential.get("expires_at"))
    except ValueError:
        raise CredentialError(
            "credential_invalid",
            f"The cached credential in {path} has an unreadable expires_at (not an ISO 8601 time or epoch "
            f"seconds). {connect} again.",
            EXIT_NO_CREDENTIAL,
        ) from None
    if expires_at is not None and expires_at <= (now or datetime.now(UTC)):
        raise CredentialError(
            "credential_expired",
            f"The credential cached for {url} expired at {expires_at.isoformat()}. {connect} again.",
            EXIT_NO_CREDENTIAL,
        )
    return Credential(
        provider_url=url,
        access_token=token.strip(),
        token_type="Bearer",
        grant_id=_text(credential.get("grant_id")) or _text(payload.get("grant_id")),
        scope=_text(credential.get("scope")) or _text(payload.get("scope")),
        expires_at=expires_at,
        cache_file=path,
    )


def refused_kind_error(provider_url: str, kind: str) -> CredentialError:
    """The refusal for a credential of a kind the local gateway never uses (owner, mcp_package)."""
    connect = f"Run `pdpp-gateway connect {provider_url}`"
    if kind == "mcp_package":
        what = "an mcp_package token (valid only at a hosted /mcp endpoint, never on /v1)"
    else:
        what = f"an {kind} credential" if kind[:1] in "aeiou" else f"a {kind} credential"
    return CredentialError(
        f"{kind}_token_refused" if kind in REFUSED_KINDS else "token_kind_refused",
        f"The credential cached for {provider_url} is {what}; the gateway only uses grant-scoped client "
        f"tokens. {connect} to approve a scoped grant.",
        EXIT_OWNER_REFUSED,
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
) -> Path:
    """Write a credential file the way ``pdpp-gateway connect`` does (0700 dir, 0600 file, atomic).

    ``client`` is the registered client as cached (else ``{client_id}``);
    ``authorization_details`` the granted details, kept for ``connect --list``.
    """
    url = normalize_provider_url(provider_url)
    path = cache_file_for(url, cache_root)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(cache_root, 0o700)
    os.chmod(path.parent, 0o700)
    gitignore = cache_root / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("*\n!.gitignore\n", encoding="utf-8")
    credential: dict[str, Any] = {"access_token": access_token, "token_type": "Bearer", "scope": "pdpp:read"}
    if grant_id:
        credential["grant_id"] = grant_id
    if expires_at:
        credential["expires_at"] = expires_at
    credential.update(extra or {})
    payload: dict[str, Any] = {
        "provider_url": url,
        "authorization_server": authorization_server or url,
        "scope": "pdpp:read",
        "client": dict(client) if client else {"client_id": client_id} if client_id else None,
        "credential": credential,
        "created_at": datetime.now(UTC).isoformat(),
    }
    if authorization_details is not None:
        payload["authorization_details"] = authorization_details
    import tempfile  # only writers need it (and it costs a local door's start ~10 ms)

    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


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


def _warn_if_readable_by_others(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        _log.warning("%s is readable by other users; `chmod 600` it (it holds a bearer token)", path)
