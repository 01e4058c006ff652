"""Who is calling: the one ladder from what a bearer was found to be to a caller or a refusal.

Contract (standard library only: the stdio door runs it before the SDK has loaded):

- ``BearerFacts`` is what a door learned about a bearer, whichever way it asked: RFC 7662
  introspection or the RS's ``/v1/schema`` ``bearer`` section (the hosted door), the RS's
  answer at start-up or before the first read (the local doors). An inactive bearer
  carries the ``reason`` the authorization server or RS gave.
- ``read_bearer(header)`` decides what the ``Authorization`` header alone can: the token,
  or ``missing_token`` / ``invalid_token`` (RFC 6750 ``b64token`` only).
- ``authenticate(facts, ...)`` is pure (no I/O) and is the only place that decides
  whether a bearer may read. Every door and terminal command calls it:

  1. inactive → the code its reason names (``grant_revoked``, ``token_expired``,
     ``context.audience_mismatch``, ...), else ``context.active_false``;
  2. ``owner`` → ``owner_token_refused``, always, before any read;
  3. ``mcp_package`` → where the door serves no packages (a local door: the RS refuses
     package tokens on ``/v1``) ``mcp_package_token_refused``; members unknown to the
     door ``package_unresolvable``; no active member left ``package_revoked``; else a
     package ``Caller`` with those members;
  4. ``client`` → a client ``Caller``;
  5. any other kind, or none reported → ``token_kind_refused`` (fail closed).

- A ``Rejection`` is a code of ``refusals.REFUSALS`` plus the facts its text needs;
  each door renders it its own way from that one table (HTTP status and JSON-RPC error,
  exit code and one stderr line, or a typed tool error).
- Nothing here holds a token in a message or a repr.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Generic, TypeVar

M = TypeVar("M")

# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# Inactive reasons with a refusal of their own; any other reason is ``context.active_false``.
_INACTIVE_CODES: Final[Mapping[str, str]] = {
    "grant_revoked": "grant_revoked",
    "grant_expired": "grant_expired",
    "token_expired": "token_expired",
    "token_revoked": "token_revoked",
    "package_revoked": "package_revoked",
    "audience_mismatch": "context.audience_mismatch",
    "issuer_mismatch": "context.issuer_mismatch",
}


class TokenKind(StrEnum):
    """The kinds of bearer a PDPP resource server issues; only two may ever read here."""

    CLIENT = "client"
    PACKAGE = "mcp_package"
    OWNER = "owner"


@dataclass(frozen=True, slots=True)
class BearerFacts:
    """What a bearer is, as the authorization server or the RS reported it."""

    active: bool = True
    kind: str | None = None  # as reported; ``TokenKind`` values are the known ones
    grant_id: str | None = None
    client_id: str | None = None
    reason: str | None = None  # why inactive: grant_revoked, audience_mismatch, ...
    expires_at: float | None = None  # epoch seconds, when the token says
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # ``mcp_package`` read from the RS's 404 ``not_found`` on ``/v1/schema`` (capture 40),
    # not from a report: the RS never names a package token there.
    by_route: bool = False

    @classmethod
    def inactive(cls, reason: str) -> BearerFacts:
        return cls(active=False, reason=reason)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused bearer: a code of ``refusals.REFUSALS`` and the facts its text names."""

    code: str
    kind: str | None = None  # the refused token kind, when that is the reason
    reason: str | None = None  # the upstream reason, when the code is a catch-all


@dataclass(frozen=True, slots=True)
class Caller(Generic[M]):
    """A bearer that may read: a client grant, or a package of ``members``."""

    kind: TokenKind
    grant_id: str | None = None
    client_id: str | None = None
    members: tuple[M, ...] = ()


def read_bearer(header: str | None) -> str | Rejection:
    """The token of ``Authorization: Bearer <token>`` (scheme case-insensitive, RFC 9110
    §11.1), or why there is none worth asking anyone about."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return Rejection("missing_token")
    if not _B64TOKEN.fullmatch(token):
        return Rejection("invalid_token")
    return token


def authenticate(
    facts: BearerFacts,
    *,
    serves_packages: bool = False,
    package_members: Sequence[M] | None = None,
) -> Caller[M] | Rejection:
    """The ladder of the module contract. ``package_members`` are the usable members the
    door resolved for an active package bearer (``None``: it could not tell)."""
    if not facts.active:
        reason = facts.reason or "inactive"
        code = _INACTIVE_CODES.get(reason.removeprefix("context."))
        return Rejection(code) if code else Rejection("context.active_false", reason=reason)
    if facts.kind == TokenKind.OWNER:
        return Rejection("owner_token_refused", kind=facts.kind)
    if facts.kind == TokenKind.PACKAGE:
        if not serves_packages:
            return Rejection("mcp_package_token_refused", kind=facts.kind)
        if package_members is None:
            return Rejection("package_unresolvable", kind=facts.kind)
        if not package_members:
            return Rejection("package_revoked", kind=facts.kind)
        return Caller(TokenKind.PACKAGE, facts.grant_id, facts.client_id, tuple(package_members))
    if facts.kind == TokenKind.CLIENT:
        return Caller(TokenKind.CLIENT, facts.grant_id, facts.client_id)
    return Rejection("token_kind_refused", kind=facts.kind)
