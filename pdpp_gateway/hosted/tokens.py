"""What a hosted caller's bearer is: RFC 7662 introspection, or the ``/v1/schema`` probe.

Contract: a ``BearerValidator`` turns a bearer into ``caller.BearerFacts`` (active or
not, its token kind, its grant, and for package tokens the introspection claims the
package resolver reads); whether those facts may read is ``caller.authenticate``'s
call, not a validator's. Two implementations:

- ``IntrospectionValidator``: ``POST`` to the authorization server's introspection
  endpoint with HTTP Basic client credentials. An active answer must carry the
  expected ``iss`` and an ``aud`` (a string or a list) of which at least one value, in
  ``normal_resource`` form, is among the audiences it was built with
  (``OriginPolicy.audiences()``: the origins the gateway may advertise, the provider's
  origin and its full URL, each bare or as its ``/mcp`` URL); otherwise the token is
  treated as invalid and never forwarded.
- ``SchemaProbeValidator``: without introspection credentials, the shared
  ``rs.token_kind.SchemaProbe`` (``GET /v1/schema`` with the bearer) and its
  ``bearer.token_kind`` (what the RS itself says the token is).

Both sit behind ``CachedValidator``: verdicts are cached under a hash of the token for
no longer than min(exp, the configured bound ≤ 60 s), so a revoked grant stops working
within that bound. Concurrent checks of one uncached token share a single upstream
check (single flight), so a burst of calls costs one introspection or probe. An unreachable authorization server is ``AuthServerUnavailable``
(a 503 to the caller), never a silent pass and never a false "invalid token".
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

import aiohttp
import orjson

from pdpp_gateway.caller import BearerFacts
from pdpp_gateway.expiring import Expiring
from pdpp_gateway.hosted.origin import normal_resources
from pdpp_gateway.hosted.shared_state import SharedRefusals
from pdpp_gateway.rs.bearer_report import refused
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsError, RsStatusError
from pdpp_gateway.rs.token_kind import SchemaProbe

CACHE_ENTRIES: Final = 10_000
INTROSPECTION_TIMEOUT: Final = aiohttp.ClientTimeout(total=5.0, sock_connect=2.0)


class AuthServerUnavailable(Exception):
    """The token could not be checked (the introspection endpoint or RS did not answer)."""


class BearerValidator(Protocol):
    async def validate(self, token: str) -> BearerFacts: ...


class VerdictCache(BearerValidator, Protocol):
    """A validator that keeps verdicts, and learns a refusal found otherwise (an RS read)."""

    async def refuse(self, token: str, reason: str) -> None: ...


class IntrospectionValidator:
    """RFC 7662 introspection with client credentials; issuer and audience checked."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        client_id: str,
        client_secret: str,
        *,
        issuer: str | None,
        audiences: frozenset[str],
    ) -> None:
        self._session = session
        self._url = url
        self._headers = {
            "Accept": "application/json",
            "Authorization": aiohttp.encode_basic_auth(client_id, client_secret),
        }
        self._issuer = issuer
        self._audiences = frozenset(normal_resources(audiences))

    async def validate(self, token: str) -> BearerFacts:
        try:
            async with self._session.post(
                self._url,
                data={"token": token},
                headers=self._headers,
                timeout=INTROSPECTION_TIMEOUT,
            ) as response:
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            raise AuthServerUnavailable(f"introspection failed: {type(error).__name__}") from None
        if status != 200:
            raise AuthServerUnavailable(f"introspection answered HTTP {status}")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise AuthServerUnavailable("introspection answered a non-JSON body") from None
        if not isinstance(answer, dict):
            raise AuthServerUnavailable("introspection answered a non-object body")
        return self._judge(answer)

    def _judge(self, answer: dict[str, Any]) -> BearerFacts:
        if answer.get("active") is not True:
            reason = answer.get("inactive_reason")
            return BearerFacts.inactive(reason if isinstance(reason, str) else "inactive")
        if self._issuer is not None and str(answer.get("iss", "")).rstrip("/") != self._issuer:
            return BearerFacts.inactive("issuer_mismatch")
        audience = answer.get("aud")
        named = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if not normal_resources(named) & self._audiences:
            return BearerFacts.inactive("audience_mismatch")
        exp = answer.get("exp")
        if isinstance(exp, int | float) and exp <= time.time():
            return BearerFacts.inactive("token_expired")
        return BearerFacts(
            active=True,
            kind=_text(answer.get("pdpp_token_kind")),
            grant_id=_text(answer.get("grant_id")),
            client_id=_text(answer.get("client_id")),
            expires_at=float(exp) if isinstance(exp, int | float) else None,
            claims=answer,
        )


class SchemaProbeValidator:
    """Without introspection credentials: ask the RS what the bearer is, with the shared
    ``SchemaProbe`` (compact form, plain-form fallback, remembered form). Reading it:

    - a report → active, with its ``token_kind`` / ``grant_id`` / ``client_id`` (none
      when the document names no ``bearer``, which the ladder refuses);
    - 404 ``not_found`` → an active ``mcp_package`` token, refused by the bearer check as
      a package this gateway cannot serve without introspection;
    - 401/403 → inactive, the RS's code kept as the reason without its ``context.``
      prefix (the RS checks issuer and audience itself: the reference RS answers 401
      ``context.audience_mismatch`` for a token issued for another resource, which
      becomes the gateway's own audience challenge);
    - anything else (other 4xx, 5xx, no answer) → ``AuthServerUnavailable``: never a
      pass and never a false "invalid token".
    """

    def __init__(self, rs: RsClient) -> None:
        self._rs = rs
        self._probe = SchemaProbe()

    async def validate(self, token: str) -> BearerFacts:
        try:
            return await self._probe.probe(self._rs.bind(token))
        except RsStatusError as error:
            answer = refused(error.status, error.code)
            if answer is None:
                raise AuthServerUnavailable(
                    f"the RS answered HTTP {error.status} to the bearer probe"
                ) from None
            return answer.facts
        except RsError:
            raise AuthServerUnavailable("the RS did not answer the bearer probe") from None


class CachedValidator:
    """Caches verdicts for at most min(exp, ``ttl``) seconds, bounded in entries. With
    ``shared``, a refusal learned here is published to the other replicas, and a cached
    active verdict yields to one they published (``shared_state.SharedRefusals``).
    ``refuse`` learns a refusal the RS made of an admitted token (``refused_tokens``)."""

    def __init__(
        self,
        inner: BearerValidator,
        ttl: float,
        *,
        on_lookup: Callable[[bool], None] = lambda hit: None,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = CACHE_ENTRIES,
        shared: SharedRefusals | None = None,
    ) -> None:
        self._inner = inner
        self._shared = shared
        self._ttl = ttl
        self._on_lookup = on_lookup
        self._clock = clock
        self._entries: Expiring[bytes, BearerFacts] = Expiring(max_entries, clock)
        self._pending: dict[bytes, asyncio.Future[BearerFacts]] = {}

    async def validate(self, token: str) -> BearerFacts:
        key = hashlib.sha256(token.encode()).digest()
        cached = self._entries.get(key)
        if cached is not None:
            if cached.active and self._shared is not None:
                reason = await self._shared.refused(key.hex())
                expires = self._entries.expiry(key)
                if reason is not None and expires is not None:
                    # another replica saw it refused: so do we, from now on
                    refused = BearerFacts.inactive(reason)
                    self._entries.put(key, refused, expires - self._clock())
                    self._on_lookup(True)
                    return refused
            self._on_lookup(True)
            return cached
        self._on_lookup(False)
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._check(key, token))
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._settled(key, done))
        # shield: a caller that goes away does not cancel the check the others wait on
        return await asyncio.shield(pending)

    async def refuse(self, token: str, reason: str) -> None:
        """The RS refused ``token`` (``reason``) after it was admitted: from now on it is
        refused here, for the bound a verdict lasts, and, with ``shared``, on every replica."""
        key = hashlib.sha256(token.encode()).digest()
        if self._shared is not None:
            await self._shared.publish(key.hex(), reason)
        self._entries.put(key, BearerFacts.inactive(reason), self._ttl)

    def _settled(self, key: bytes, done: asyncio.Future[BearerFacts]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved here too, in case every waiter went away

    async def _check(self, key: bytes, token: str) -> BearerFacts:
        verdict = await self._inner.validate(token)
        if not verdict.active and self._shared is not None:
            await self._shared.publish(key.hex(), verdict.reason or "inactive")
        lifetime = self._ttl
        if verdict.expires_at is not None:
            lifetime = min(lifetime, verdict.expires_at - time.time())
        self._entries.put(key, verdict, lifetime)
        return verdict


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
