"""The sandbox authorization server's memory: clients, pending consents, codes and issued tokens.

Contract: one ``OAuthStore`` per sandbox app (``app[OAUTH]``). In memory, lost on restart,
unless the app was given a state file (``oauth_state``): then every change is handed to its
``saver`` and a restarted sandbox starts from what was saved.

- Clients come from RFC 7591 registration; public clients only (no secret).
- A ``PendingConsent`` is one authorization request waiting on the consent page: it carries
  the validated request and a CSRF token the form must echo (and the browser's cookie must
  match). It lives ``CONSENT_SECONDS`` and is consumed by the first decision.
- An authorization code lives ``CODE_SECONDS`` and is consumed by its first exchange; a
  second exchange of the same code revokes every token issued from it (RFC 6749 §4.1.2).
- Access tokens live ``access_seconds`` (``ACCESS_SECONDS`` unless the sandbox was started
  with ``--access-token-ttl``); each names a real sandbox ``Principal`` (a client grant over
  exactly the approved streams, its ``expires_at`` stamped) and is honoured by ``/v1`` and
  introspection until then. A lapsed one is still known (``principal`` returns it), so
  ``/v1`` can answer it as the reference RS does: 403 ``grant_expired``.
- Refresh tokens rotate: each works once and yields a new access and refresh token. As at
  the reference authorization server, presenting one a second time is taken for theft: it
  revokes every token of its family (``take_refresh``), so a client that renews twice with
  the same refresh token loses the grant.
- Every table is bounded (``MAX_ENTRIES``): expired entries go first, then the oldest.
- Token values are random and the store never keeps one: codes, access and refresh tokens
  are filed under their SHA-256 (``token_key``), so a saved store holds no usable token and
  ``repr`` shows none.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from aiohttp import web

from pdpp_gateway.sandbox.config import Principal

CONSENT_SECONDS: Final = 600.0
CODE_SECONDS: Final = 60.0
ACCESS_SECONDS: Final = 3600.0
REFRESH_SECONDS: Final = 30 * 24 * 3600.0
MAX_ENTRIES: Final = 2000
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    issued_at: int


@dataclass(frozen=True, slots=True)
class Selection:
    """One (connector source id, stream name) a consent may grant."""

    source_id: str
    stream: str

    @property
    def value(self) -> str:
        return f"{self.source_id}#{self.stream}"


@dataclass(frozen=True, slots=True)
class PendingConsent:
    request_id: str
    client: Client
    redirect_uri: str
    state: str | None
    code_challenge: str
    resource: str | None
    offered: tuple[Selection, ...]
    purpose: str | None
    csrf: str = field(repr=False)
    expires: float
    issuer: str  # named in every redirect back (``iss``, RFC 9207)


@dataclass(frozen=True, slots=True)
class IssuedCode:
    client_id: str
    redirect_uri: str
    code_challenge: str
    resource: str | None
    principal: Principal
    expires: float


@dataclass(frozen=True, slots=True)
class RefreshEntry:
    client_id: str
    principal: Principal
    family: str  # the key of the authorization code this family descends from
    expires: float


def token_key(token: str) -> str:
    """What the store files a code or token under: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass(slots=True)
class OAuthStore:
    clients: dict[str, Client] = field(default_factory=dict)
    pending: dict[str, PendingConsent] = field(default_factory=dict)
    # every key below is a ``token_key``
    codes: dict[str, IssuedCode] = field(default_factory=dict, repr=False)
    used_codes: dict[str, float] = field(default_factory=dict, repr=False)
    access: dict[str, Principal] = field(default_factory=dict, repr=False)
    refresh: dict[str, RefreshEntry] = field(default_factory=dict, repr=False)
    families: dict[str, set[str]] = field(default_factory=dict, repr=False)  # code -> tokens issued
    used_refresh: dict[str, str] = field(default_factory=dict, repr=False)  # spent refresh token -> family
    access_seconds: float = ACCESS_SECONDS
    saver: Callable[[OAuthStore], None] | None = field(default=None, repr=False)  # called after each change

    def _changed(self) -> None:
        if self.saver is not None:
            self.saver(self)

    def register(self, name: str, redirect_uris: tuple[str, ...]) -> Client:
        client = Client(f"sbx_dcr_{secrets.token_hex(8)}", name, redirect_uris, int(time.time()))
        _bound(self.clients, lambda c: False)
        self.clients[client.client_id] = client
        self._changed()
        return client

    def add_pending(self, pending: PendingConsent) -> None:
        _bound(self.pending, lambda p: p.expires < time.time())
        self.pending[pending.request_id] = pending

    def take_pending(self, request_id: str) -> PendingConsent | None:
        pending = self.pending.pop(request_id, None)
        return pending if pending is not None and pending.expires >= time.time() else None

    def add_code(self, issued: IssuedCode) -> str:
        code = secrets.token_urlsafe(32)
        _bound(self.codes, lambda c: c.expires < time.time())
        self.codes[token_key(code)] = issued
        self._changed()
        return code

    def take_code(self, code: str) -> IssuedCode | None:
        """The code's grant, once. A replay revokes what the first exchange issued."""
        key = token_key(code)
        issued = self.codes.pop(key, None)
        if issued is None:
            if key in self.used_codes:
                self.revoke_family(key)
            return None
        _bound(self.used_codes, lambda t: t < time.time() - REFRESH_SECONDS)
        self.used_codes[key] = time.time()
        self._changed()
        return issued

    def issue(self, client_id: str, principal: Principal, family: str) -> tuple[str, str, Principal]:
        """A new access token (with its expiry stamped on the principal) and refresh token,
        in ``family`` (the ``token_key`` of the code the grant was first issued for)."""
        expires = time.time() + self.access_seconds
        stamped = Principal(
            principal.kind,
            principal.client_id,
            principal.grant_id,
            principal.streams,
            expires_at=expires,
        )
        access = f"sbx_at_{secrets.token_urlsafe(32)}"
        refresh = f"sbx_rt_{secrets.token_urlsafe(32)}"
        _bound(self.access, lambda p: (p.expires_at or 0) < time.time())
        _bound(self.refresh, lambda r: r.expires < time.time())
        access_key, refresh_key = token_key(access), token_key(refresh)
        self.access[access_key] = stamped
        self.refresh[refresh_key] = RefreshEntry(client_id, principal, family, time.time() + REFRESH_SECONDS)
        self.families.setdefault(family, set()).update((access_key, refresh_key))
        if len(self.families) > MAX_ENTRIES:
            self.families.pop(next(iter(self.families)))
        self._changed()
        return access, refresh, stamped

    def take_refresh(self, token: str) -> RefreshEntry | None:
        """The refresh token's grant, once. A spent one presented again revokes its family."""
        key = token_key(token)
        entry = self.refresh.pop(key, None)
        if entry is None:
            family = self.used_refresh.get(key)
            if family is not None:
                self.revoke_family(family)
            return None
        _bound(self.used_refresh, lambda _family: False)
        self.used_refresh[key] = entry.family
        self._changed()
        return entry if entry.expires >= time.time() else None

    def revoke_family(self, family: str) -> None:
        """Revoke every token issued from the code whose ``token_key`` is ``family``."""
        for key in self.families.pop(family, set()):
            self.access.pop(key, None)
            self.refresh.pop(key, None)
        self._changed()

    def principal(self, token: str) -> Principal | None:
        """The grant an issued access token names, lapsed or not (``expires_at`` says)."""
        return self.access.get(token_key(token))


def _bound(table: dict[str, V], expired: Callable[[V], bool]) -> None:
    """Drop expired entries, then the oldest, so the table stays under ``MAX_ENTRIES``."""
    if len(table) < MAX_ENTRIES:
        return
    for key in [k for k, v in table.items() if expired(v)]:
        del table[key]
    while len(table) >= MAX_ENTRIES:
        del table[next(iter(table))]


OAUTH: Final = web.AppKey("oauth", OAuthStore)
