"""The credential cache (``pdpp-gateway connect``, like the reference ``pdpp connect``): where a local gateway finds its scoped token.

Contract:

- File: ``<cache_root>/clients/<host>.json`` where ``<host>`` is the provider URL's
  host including port, every character outside ``[A-Za-z0-9.-]`` replaced by ``_``
  (``localhost:7663`` → ``localhost_7663.json``). Shape as ``pdpp-gateway connect`` writes it:
  ``{provider_url, authorization_server, scope, client, credential{access_token,
  token_type, expires_at?, grant_id?, scope?}, created_at}``.
- ``load_credential`` fails closed with a ``CredentialError`` whose message names the
  fix (``pdpp-gateway connect <provider-url>``) and whose exit code the CLI returns, both
  from the one table (``refusals.REFUSALS``): 78 for a missing, expired or malformed
  credential, 77 for one labelled ``owner`` or ``mcp_package`` (package tokens are only
  valid at a hosted ``/mcp``), 64 for a bad provider URL. A file whose ``provider_url``
  names another origin is refused, so a copied file cannot send a token elsewhere.
- ``judge(facts, provider_url)`` is a local door's use of ``caller.authenticate``: the
  accepted kind, or the ``CredentialError`` of the rejection (``CredentialRejected``,
  with the RS's status, when the RS itself answered 401/403).
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

from pdpp_gateway.caller import BearerFacts, Caller, Rejection, TokenKind, authenticate
from pdpp_gateway.refusals import REFUSALS, explain, local_connect

_log = logging.getLogger(__name__)

OWNER_ENV_VARS: Final = ("PDPP_OWNER_TOKEN", "PDPP_OWNER_SESSION_COOKIE")
_KIND_FLAGS: Final = ("pdpp_token_kind", "token_kind", "kind", "role")
REFUSED_KINDS: Final = frozenset({TokenKind.OWNER, TokenKind.PACKAGE})


class CredentialError(Exception):
    """No usable scoped credential; ``message`` is one stderr-ready line; the exit code
    is the table's for ``code`` (``refusals.REFUSALS``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = int(REFUSALS[code].exit_code)


class CredentialRejected(CredentialError):
    """The RS itself refused the token; ``status`` is its 401 or 403 (a 401 may be renewable)."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.status = status


def problem(code: str, detail: str, provider_url: str = "<provider-url>") -> CredentialError:
    """A problem of the cache itself (or of the command line): the table's words for
    ``code`` with ``detail`` (which file, which value) in parentheses."""
    message, step = explain(Rejection(code), local_connect(provider_url))
    return CredentialError(code, f"{message.removesuffix('.')} ({detail}). {step}")


def refused(rejection: Rejection, provider_url: str, *, status: int | None = None) -> CredentialError:
    """The local doors' form of a rejection: one line saying what and what to do."""
    message, step = explain(rejection, local_connect(provider_url))
    line = f"{provider_url}: {message} {step}"
    if status is not None:
        return CredentialRejected(rejection.code, line, status)
    return CredentialError(rejection.code, line)


def judge(facts: BearerFacts, provider_url: str, *, status: int | None = None) -> TokenKind:
    """The kind a local door may read with (``client``), or the rejection's error.
    Local doors read ``/v1`` with the token itself, so a package token is refused."""
    outcome: Caller[object] | Rejection = authenticate(facts)
    if isinstance(outcome, Rejection):
        raise refused(outcome, provider_url, status=status)
    return outcome.kind


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
        raise problem("invalid_provider_url", repr(raw))
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
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise problem("not_connected", f"looked for {url} in {path}", url) from None
    except OSError as error:
        raise problem("credential_invalid", f"cannot read {path}: {error.strerror}", url) from None
    _warn_if_readable_by_others(path)
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("credential"), dict):
        raise problem("credential_invalid", f"{path} is malformed", url)
    credential: dict[str, Any] = payload["credential"]
    label = _refused_kind(payload) or _refused_kind(credential)
    if label is not None:  # a label can only refuse; the RS decides what the token is
        judge(BearerFacts(kind=label), url)
    cached_url = payload.get("provider_url")
    if isinstance(cached_url, str) and cached_url and _same_origin(cached_url, url) is False:
        raise problem(
            "credential_invalid",
            f"{path} holds a credential for another provider; it is never sent to {url}",
            url,
        )
    token = credential.get("access_token")
    token_type = credential.get("token_type") or "Bearer"
    if not isinstance(token, str) or not token.strip() or str(token_type).lower() != "bearer":
        raise problem("credential_invalid", f"{path} has no usable bearer token", url)
    try:
        expires_at = _parse_time(credential.get("expires_at"))
    except ValueError:
        raise problem(
            "credential_invalid",
            f"{path} has an unreadable expires_at: not an ISO 8601 time or epoch seconds",
            url,
        ) from None
    if expires_at is not None and expires_at <= (now or datetime.now(UTC)):
        raise problem("credential_expired", f"the one for {url} expired at {expires_at.isoformat()}", url)
    return Credential(
        provider_url=url,
        access_token=token.strip(),
        token_type="Bearer",
        grant_id=_text(credential.get("grant_id")) or _text(payload.get("grant_id")),
        scope=_text(credential.get("scope")) or _text(payload.get("scope")),
        expires_at=expires_at,
        cache_file=path,
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
