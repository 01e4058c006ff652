"""The bearer check of ``/mcp``: who the caller is, decided before any read.

Contract (an aiohttp middleware over the ``/mcp`` handler: the generic
``mcp_gateway_middleware.http.bearer_check`` given this gateway's ``authenticate`` and ``refuse``).
``authenticate`` gathers facts and lets the one ladder decide (``caller.read_bearer``,
then ``caller.authenticate``); ``refuse`` renders every refusal from the one table
(``refusals.rejected``):

- the header sent twice → 400 ``duplicate_credentials`` (two credentials: ambiguous);
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
  before any read;
- a single-grant caller's reads are watched (``refused_tokens``): when the RS refuses the
  token itself during the call (a grant revoked inside the verdict's minute), the answer is
  that refusal's 401 with its challenge, not a tool error, and the verdict cache (every
  replica's, with Redis) refuses the token from then on, without another RS read.

It runs before the body is read (``transport`` checks the headers first, the body
after), so an unauthenticated caller never makes the gateway buffer or parse a body.
Refusals are JSON-RPC error objects (``refusals``) with ``id: null``.

On success the request carries a ``GatewayContext`` under ``GATEWAY_CONTEXT``, whose
RS client is bound to the caller's own token, and its rate-limit key under
``limits.CALLER`` (a grant or package id, or a token hash); a package caller's answer
names its member count (``X-Pdpp-Grant-Package-Member-Count``). Nothing past
``authenticate`` ever sees the raw ``Authorization`` header.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Final, NamedTuple

from aiohttp import web
from aiohttp.typedefs import Handler
from mcp_gateway_middleware.http import bearer_check

from pdpp_gateway.caller import BearerFacts, Caller, Rejection, TokenKind, authenticate, read_bearer
from pdpp_gateway.context import GatewayContext, PackageMember
from pdpp_gateway.expiring import Expiring
from pdpp_gateway.hosted.limits import CALLER, caller_key
from pdpp_gateway.hosted.origin import OriginPolicy
from pdpp_gateway.hosted.packages import PackageResolver
from pdpp_gateway.hosted.refusals import rejected
from pdpp_gateway.hosted.refused_tokens import RefusalWatch, watching
from pdpp_gateway.hosted.tokens import CACHE_ENTRIES, AuthServerUnavailable, VerdictCache
from pdpp_gateway.rs.client import RsClient

GATEWAY_CONTEXT: Final = web.RequestKey("gateway_context", GatewayContext)


@dataclass(frozen=True, slots=True)
class Admission:
    """An accepted bearer, as the generic stage stores it: its context and rate-limit key."""

    context: GatewayContext
    caller_key: str


_ADMISSION: Final = web.RequestKey("pdpp_admission", Admission)


class _Admitted(NamedTuple):
    """A single-grant bearer admitted before: the verdict its admission was built from."""

    token: str
    facts: BearerFacts
    admission: Admission


MAX_ADMITTED: Final = CACHE_ENTRIES  # as many as the verdict cache holds; least recently used out


@dataclass(frozen=True, slots=True)
class BearerCheck:
    """The ``/mcp`` bearer stage: ``mcp_gateway_middleware.http.bearer_check`` given this gateway's
    ``authenticate`` and ``refuse``, then the admitted caller seated on the request.

    A single-grant caller's admission (its context, its reader bound to its token, its
    rate-limit key) is built once per verdict: while the validator answers the very facts
    it was built from (its cache, at most a minute), the same admission serves the same
    header. A new verdict, a refusal or a package caller (whose members the resolver names
    on every call) builds it again."""

    validator: VerdictCache
    packages: PackageResolver | None
    rs: RsClient
    provider_url: str
    policy: OriginPolicy
    # Kept while the validator answers the same facts (checked on every call), so no expiry of its own.
    _admitted: Expiring[str, _Admitted] = field(
        default_factory=lambda: Expiring(MAX_ADMITTED), init=False, repr=False
    )

    def middleware(self) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
        admit = bearer_check(
            self.authenticate,
            self.refuse,
            _ADMISSION,
            rejection=Rejection,
            duplicate=Rejection("duplicate_credentials"),
        )

        async def seat(request: web.Request, handler: Handler) -> web.StreamResponse:
            admission = request[_ADMISSION]
            request[GATEWAY_CONTEXT] = admission.context
            request[CALLER] = admission.caller_key
            with watching() as seen:
                response = await handler(request)
            if seen.reason is not None:  # the RS refused the token itself: sign in again
                verdict: Caller[PackageMember] | Rejection = authenticate(BearerFacts.inactive(seen.reason))
                if isinstance(verdict, Rejection):
                    return self.refuse(request, verdict)
            members = admission.context.caller.members
            if members:
                response.headers["X-Pdpp-Grant-Package-Member-Count"] = str(len(members))
            return response

        async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await admit(request, lambda admitted: seat(admitted, handler))

        return check

    async def authenticate(self, header: str | None) -> Admission | Rejection:
        """The one ladder over what the header, the validator and the package resolver say."""
        known = self._admitted.get(header) if header is not None else None
        token = read_bearer(header) if known is None else known.token
        if isinstance(token, Rejection):
            return token
        try:
            facts = await self.validator.validate(token)
        except AuthServerUnavailable:
            return Rejection("authorization_unavailable")
        if known is not None and known.facts is facts:
            return known.admission  # the very verdict this admission was built from
        admission = await self._admit(facts, token)
        if header is not None and isinstance(admission, Admission) and not admission.context.caller.members:
            # An entry whose facts the validator no longer answers is never served again; it
            # waits for the bound to push it out.
            self._admitted.put(header, _Admitted(token, facts, admission), math.inf)
        return admission

    async def _admit(self, facts: BearerFacts, token: str) -> Admission | Rejection:
        members = await self._members(facts)
        caller = authenticate(facts, serves_packages=True, package_members=members)
        if isinstance(caller, Rejection):
            return caller
        watched = (
            None
            if caller.members
            else RefusalWatch(self.rs.bind(token), partial(self.validator.refuse, token))
        )
        context = GatewayContext.for_caller(caller, self.provider_url, rs=watched)
        return Admission(context, caller_key(facts, token))

    def refuse(self, request: web.Request, rejection: Rejection) -> web.Response:
        return rejected(rejection, self.policy.base_of(request))

    async def _members(self, facts: BearerFacts) -> tuple[PackageMember, ...] | None:
        """An active package bearer's usable members, or ``None`` when unknown here."""
        if not facts.active or facts.kind != TokenKind.PACKAGE or self.packages is None:
            return None
        found = await self.packages.members(facts, self.rs.bind)
        return None if found is None else tuple(found)
