"""The one table of refusals: every code a credential can be refused with, and what each
door says and does with it.

Contract (standard library only: the stdio door reads it before the SDK has loaded):

- ``REFUSALS[code]`` is a ``Refusal``: the RS-style error ``type``, the HTTP status of
  the hosted door (its JSON-RPC code follows from it: ``wire.codes``), the exit code of the
  local doors and terminal commands, what happened (``message``) and the one thing to do
  next (``next_step``). A code absent from the table is a defect (a ``KeyError``).
- Text is written here only (a cache or command-line problem adds which file or value
  in parentheses: ``local_verdict.problem``). ``explain(rejection, connect)`` fills the templates:
  ``{kind}`` the refused token kind, ``{reason}`` the upstream reason of a catch-all,
  ``{connect}`` how this door's caller gets a scoped grant (the hosted door: the
  metadata URL to follow; a local door: ``pdpp-gateway connect <provider-url>``).
- Each door renders from here and nowhere else: ``hosted.refusals.rejected`` (HTTP
  status, ``Retry-After``, a JSON-RPC error object), ``local_verdict.CredentialError``
  (exit code and one stderr line), ``rs.token_kind.refused_read`` (a typed tool error
  for a read the stdio door could only check late).
- ``ExitCode`` lists every exit status the CLI uses, refusals or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from pdpp_gateway.caller import Rejection
from pdpp_gateway.wire import codes as rpc_codes


class ExitCode(IntEnum):
    """Exit statuses of the CLI (BSD ``sysexits`` where one fits)."""

    OK = 0
    FAILED = 1  # a tool call answered with an error
    USAGE = 64
    REGISTRATION_REFUSED = 65
    DENIED = 66
    TIMEOUT = 67
    STATE_MISMATCH = 68
    UNAVAILABLE = 69
    TOKEN_REFUSED = 70
    REFUSED_KIND = 77  # an owner, package or unknown token: never used here
    NO_CREDENTIAL = 78  # none cached, or expired, malformed, revoked, rejected


@dataclass(frozen=True, slots=True)
class Refusal:
    type: str
    http_status: int
    exit_code: ExitCode
    message: str
    next_step: str
    retry_after: int | None = None  # seconds, for a refusal that passes by itself

    @property
    def rpc_code(self) -> int:
        """The JSON-RPC code of a door that answers this refusal over JSON-RPC (``wire.codes``)."""
        return rpc_codes.for_status(self.http_status, caller_fault=rpc_codes.INVALID_REQUEST)


_REAPPROVE: Final = "Ask the person to approve a new grant for this app: {connect}."
_NEW_GRANT: Final = "Get a scoped, read-only client grant: {connect}."


def _unauthenticated(message: str, next_step: str = _NEW_GRANT) -> Refusal:
    return Refusal("authentication_error", 401, ExitCode.NO_CREDENTIAL, message, next_step)


def _kind_refused(message: str) -> Refusal:
    return Refusal("permission_error", 403, ExitCode.REFUSED_KIND, message, _NEW_GRANT)


REFUSALS: Final[Mapping[str, Refusal]] = {
    # No usable bearer at all.
    "missing_token": _unauthenticated("No bearer token was sent."),
    "invalid_token": _unauthenticated(
        "The bearer token is malformed (RFC 6750 allows only letters, digits and -._~+/ followed by =)."
    ),
    "duplicate_credentials": Refusal(
        "invalid_request_error",
        400,
        ExitCode.USAGE,
        "The request names more than one credential (the Authorization header appears more than once), "
        "so which one speaks for the caller is ambiguous.",
        "Send exactly one Authorization: Bearer header.",
    ),
    # The authorization server or RS says the bearer is not active.
    "grant_revoked": _unauthenticated("The grant behind this token was revoked.", _REAPPROVE),
    "grant_expired": _unauthenticated("The grant behind this token has expired.", _REAPPROVE),
    "token_expired": _unauthenticated("This token has expired.", "Refresh it or authorize again: {connect}."),
    "token_revoked": _unauthenticated("This token was revoked.", "Authorize again: {connect}."),
    "context.audience_mismatch": _unauthenticated(
        "This token was issued for another resource and is never forwarded.",
        "Get a token for this provider's resource: {connect}.",
    ),
    "context.issuer_mismatch": _unauthenticated(
        "This token comes from an authorization server this provider does not trust."
    ),
    "context.active_false": _unauthenticated("The resource server does not accept this token ({reason})."),
    # Active, but of a kind that never reads here.
    "owner_token_refused": _kind_refused(
        "This is an owner token, which opens the person's whole store. Owner tokens are never accepted here."
    ),
    "mcp_package_token_refused": _kind_refused(
        "This is an mcp_package token: it is valid only at a hosted /mcp endpoint, never on the resource "
        "server's /v1 API, which this door reads."
    ),
    "token_kind_refused": _kind_refused(
        "The resource server reports a token kind of {kind}; only grant-scoped client tokens read here."
    ),
    "package_unresolvable": _kind_refused(
        "This is an MCP package token, and this gateway cannot resolve the child grants it stands for "
        "(it needs token introspection or a package file for that)."
    ),
    "package_revoked": Refusal(
        "permission_error",
        403,
        ExitCode.NO_CREDENTIAL,
        "This MCP package has no active child grant left.",
        "Ask the person to approve the package again: {connect}.",
    ),
    # The bearer could not be checked.
    "authorization_unavailable": Refusal(
        "api_error",
        503,
        ExitCode.UNAVAILABLE,
        "The token could not be checked right now (the authorization server or resource server did not answer).",
        "Retry in a few seconds; nothing was read.",
        retry_after=5,
    ),
    # The local credential cache (messages name the file; these give status and exit code).
    "not_connected": _unauthenticated(
        "No scoped credential is cached for this provider.", "Connect first: {connect}."
    ),
    "credential_invalid": _unauthenticated("The cached credential is unusable.", "Connect again: {connect}."),
    "credential_expired": _unauthenticated("The cached credential has expired.", "Connect again: {connect}."),
    "cache_unsafe": _unauthenticated(
        "A credential cache file or folder is not safe to use (a link, not a regular file, another user's, "
        "or open to other users).",
        "Apply the fix the message names, then run the command again.",
    ),
    "invalid_provider_url": Refusal(
        "invalid_request_error",
        400,
        ExitCode.USAGE,
        "The provider URL is invalid.",
        "Use the resource server's origin, e.g. https://pdpp.example.com.",
    ),
    "invalid_package": Refusal(
        "invalid_request_error",
        400,
        ExitCode.USAGE,
        "The package cannot be read.",
        "Name its providers with --provider-url, or fix the package file.",
    ),
}


def explain(rejection: Rejection, connect: str) -> tuple[str, str]:
    """The refusal's message and next step, for a door whose way to a grant is ``connect``."""
    refusal = REFUSALS[rejection.code]
    kind = repr(rejection.kind) if rejection.kind else "nothing (it names no kind)"
    fields = {"kind": kind, "reason": rejection.reason or "inactive", "connect": connect}
    return refusal.message.format_map(fields), refusal.next_step.format_map(fields)


def local_connect(provider_url: str) -> str:
    """How a local door's user gets a scoped grant for ``provider_url``."""
    return f"run `pdpp-gateway connect {provider_url}`"
