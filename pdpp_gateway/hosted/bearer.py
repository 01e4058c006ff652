"""The bearer check of ``/mcp``: who the caller is, decided before any read.

Contract (an aiohttp middleware over the ``/mcp`` handler). It gathers facts and lets
the one ladder decide (``caller.read_bearer``, then ``caller.authenticate``); every
refusal is rendered from the one table by ``refusals.rejected``:

- the header alone: no ``Authorization: Bearer <token>`` (scheme case-insensitive) →
  ``missing_token``; a token outside RFC 6750's ``b64token`` characters (for instance
  non-ASCII or non-UTF-8 bytes) → ``invalid_token``, without any call;
- the token's facts from the validator (introspection or the ``/v1/schema`` probe,
  cached ≤ 60 s); the authorization server unreachable → 503
  ``authorization_unavailable`` with ``Retry-After`` (never a pass, never a misleading
  "invalid token");
- for an active ``mcp_package`` bearer, its usable members from the package resolver,
  each reading with the child's OWN token (no resolver, or one that does not know the
  package: ``package_unresolvable``; none active: ``package_revoked``);
- the ladder's verdict: inactive → 401 naming why; owner or any other kind → 403
  before any read.

It runs before the body is read (``transport`` checks the headers first, the body
after), so an unauthenticated caller never makes the gateway buffer or parse a body.
Refusals are JSON-RPC error objects (``refusals``) with ``id: null``.

On success the request carries a ``GatewayContext`` under ``GATEWAY_CONTEXT``, whose
RS client is bound to the caller's own token, and its rate-limit key under
``limits.CALLER`` (a grant or package id, or a token hash), and nothing else in the gateway ever sees
the raw ``Authorization`` header.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from pdpp_gateway.caller import BearerFacts, Rejection, TokenKind, authenticate, read_bearer
from pdpp_gateway.context import GatewayContext, PackageMember
from pdpp_gateway.hosted.limits import CALLER, caller_key
from pdpp_gateway.hosted.origin import OriginPolicy
from pdpp_gateway.hosted.packages import PackageResolver
from pdpp_gateway.hosted.refusals import rejected
from pdpp_gateway.hosted.tokens import AuthServerUnavailable, BearerValidator
from pdpp_gateway.logs import REQUEST_ID
from pdpp_gateway.rs.client import RsClient

GATEWAY_CONTEXT: Final = web.RequestKey("gateway_context", GatewayContext)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
            token = read_bearer(request.headers.get("Authorization"))
            if isinstance(token, Rejection):
                return rejected(token, origin)
            try:
                facts = await self.validator.validate(token)
            except AuthServerUnavailable:
                return rejected(Rejection("authorization_unavailable"), origin)
            members = await self._members(facts)
            caller = authenticate(facts, serves_packages=True, package_members=members)
            if isinstance(caller, Rejection):
                return rejected(caller, origin)
            context = GatewayContext.for_caller(
                caller,
                self.provider_url,
                rs=None if caller.members else self.rs.bind(token),
                labels={"request_id": REQUEST_ID.get() or ""},
            )
            request[GATEWAY_CONTEXT] = context
            request[CALLER] = caller_key(facts, token)
            response = await handler(request)
            if caller.members:
                response.headers["X-Pdpp-Grant-Package-Member-Count"] = str(len(caller.members))
            return response

        return check

    async def _members(self, facts: BearerFacts) -> tuple[PackageMember, ...] | None:
        """An active package bearer's usable members, or ``None`` when unknown here."""
        if not facts.active or facts.kind != TokenKind.PACKAGE or self.packages is None:
            return None
        found = await self.packages.members(facts, self.rs.bind)
        return None if found is None else tuple(found)
