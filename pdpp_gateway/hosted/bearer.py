"""The bearer check of ``/mcp``: who the caller is, decided before any read.

Contract (an aiohttp middleware over the ``/mcp`` handler):

- No ``Authorization: Bearer <token>`` (scheme case-insensitive) → 401 challenge
  (``authentication_error``). A token outside RFC 6750's ``b64token`` characters (for
  instance non-ASCII or non-UTF-8 bytes) → 401 ``invalid_token`` without any call.
- The token is validated (introspection or the ``/v1/schema`` probe, cached ≤ 60 s).
  Inactive, wrong issuer, wrong audience, revoked or expired → 401 challenge whose code
  says which, so the client knows to get a new grant.
- ``owner`` → 403 ``permission_error`` before any read; any kind other than ``client``
  and ``mcp_package`` → 403 too. Each such 403 message says how to get a scoped grant.
- ``mcp_package`` → the package resolver's usable children; none → 403
  ``package_revoked``. The context reads each child with the child's own token.
- The authorization server unreachable → 503 ``authorization_unavailable`` with
  ``Retry-After`` (never a pass, never a misleading "invalid token").

It runs before the body is read (``transport`` checks the headers first, the body
after), so an unauthenticated caller never makes the gateway buffer or parse a body.
Refusals are JSON-RPC error objects (``refusals``) with ``id: null``.

On success the request carries a ``GatewayContext`` under ``GATEWAY_CONTEXT``, whose
RS client is bound to the caller's own token, and its rate-limit key under
``limits.CALLER`` (a grant or package id, or a token hash), and nothing else in the gateway ever sees
the raw ``Authorization`` header.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Final

from aiohttp import web

from pdpp_gateway.context import GatewayContext, PackageMember
from pdpp_gateway.hosted.limits import CALLER, caller_key
from pdpp_gateway.hosted.origin import OriginPolicy
from pdpp_gateway.hosted.packages import PackageResolver
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.hosted.tokens import AuthServerUnavailable, BearerValidator, Verdict
from pdpp_gateway.logs import REQUEST_ID
from pdpp_gateway.rs.client import RsClient

GATEWAY_CONTEXT: Final = web.RequestKey("gateway_context", GatewayContext)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

OWNER_REFUSAL: Final = (
    "MCP requires a grant-scoped client token (or an MCP package token). Owner tokens are never "
    "accepted here: connect the app through the provider to get a scoped, read-only grant."
)
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_INACTIVE: Final[dict[str, tuple[str, str]]] = {
    "grant_revoked": (
        "grant_revoked",
        "The grant behind this token was revoked. Ask the person to approve a new grant for this app.",
    ),
    "grant_expired": (
        "grant_expired",
        "The grant behind this token has expired. Ask the person to approve a new grant for this app.",
    ),
    "token_expired": ("token_expired", "This token has expired. Refresh it or authorize again."),
    "token_revoked": ("token_revoked", "This token was revoked. Authorize again to get a new one."),
    "package_revoked": (
        "package_revoked",
        "This MCP package was revoked. Ask the person to approve it again.",
    ),
    "audience_mismatch": (
        "context.audience_mismatch",
        "This token was issued for another resource and is never forwarded. Get a token for this provider's /mcp resource.",
    ),
    "issuer_mismatch": (
        "context.issuer_mismatch",
        "This token comes from an authorization server this provider does not trust.",
    ),
}


@dataclass(frozen=True, slots=True)
class BearerCheck:
    validator: BearerValidator
    packages: PackageResolver | None
    rs: RsClient
    provider_url: str
    policy: OriginPolicy

    def middleware(self) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
        async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
            origin = self.policy.origin_of(request)
            token = bearer_of(request)
            if token is None:
                return refusal(401, "authentication_error", "Missing Bearer token.", origin)
            if not _B64TOKEN.fullmatch(token):
                return refusal(
                    401,
                    "invalid_token",
                    "The bearer token is malformed (RFC 6750 allows only letters, digits and -._~+/ "
                    "followed by =).",
                    origin,
                )
            try:
                verdict = await self.validator.validate(token)
            except AuthServerUnavailable:
                return refusal(
                    503,
                    "authorization_unavailable",
                    "The token could not be checked right now (the authorization server did not answer). Retry shortly.",
                    origin,
                    headers={"Retry-After": "5"},
                )
            outcome = await self._context(token, verdict, origin)
            if isinstance(outcome, web.Response):
                return outcome
            request[GATEWAY_CONTEXT] = outcome
            request[CALLER] = caller_key(verdict, token)
            response = await handler(request)
            if outcome.package:
                response.headers["X-Pdpp-Grant-Package-Member-Count"] = str(len(outcome.package))
            return response

        return check

    async def _context(self, token: str, verdict: Verdict, origin: str) -> GatewayContext | web.Response:
        if not verdict.active:
            code, message = _INACTIVE.get(
                verdict.reason or "",
                ("context.active_false", "The bearer token is not active for this resource."),
            )
            return refusal(401, code, message, origin)
        labels = {"request_id": REQUEST_ID.get() or ""}
        if verdict.kind == "client":
            return GatewayContext(
                rs=self.rs.bind(token), provider_url=self.provider_url, token_kind="client", labels=labels
            )
        if verdict.kind == "mcp_package":
            if self.packages is None:
                return refusal(
                    403,
                    "permission_error",
                    "This looks like an MCP package token: this gateway validates bearers without "
                    "introspection, so it cannot resolve packages. Use a client grant token.",
                    origin,
                    guide=True,
                )
            children = await self.packages.members(verdict)
            if children is None:
                return refusal(
                    403,
                    "permission_error",
                    "This gateway cannot resolve this MCP package's child grants; use a client grant token.",
                    origin,
                    guide=True,
                )
            if not children:
                return refusal(
                    403,
                    "package_revoked",
                    "This MCP package has no active child grant left. Approve it again.",
                    origin,
                    guide=True,
                )
            members = [
                PackageMember(
                    rs=self.rs.bind(child.token),
                    grant_id=child.grant_id,
                    connection_ids=child.connection_ids,
                    streams=child.streams,
                    connector_key=child.connector_key,
                    display_name=child.display_name,
                )
                for child in children
            ]
            return replace(GatewayContext.for_package(members, self.provider_url), labels=labels)
        if verdict.kind == "owner":
            return refusal(403, "permission_error", OWNER_REFUSAL, origin, guide=True)
        return refusal(
            403,
            "permission_error",
            f"Token kind {verdict.kind or 'unknown'!r} is not accepted at /mcp.",
            origin,
            guide=True,
        )


def bearer_of(request: web.Request) -> str | None:
    """The token of ``Authorization: Bearer <token>``; the scheme is case-insensitive
    (RFC 9110 §11.1), and the token is forwarded under the canonical ``Bearer``."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None
