"""Per-caller rate limits of ``/mcp``, wired from settings.

Contract:

- The stage runs after the bearer check and the body's shape checks, so it limits
  authenticated callers only (an unauthenticated request is refused before it could
  spend anyone's tokens), and it counts what the README says: the calls that read the
  RS (``tools/call`` and ``resources/read``: ``counted``), never ``initialize``,
  ``tools/list``, pings or notifications. The caller is the grant (``grant:<grant_id>``),
  the package (``package:<id>``) or, when the authorization server names neither, a
  SHA-256 of the token: never the token.
- Each caller has a token bucket (``--rate-limit`` per second, ``--rate-burst``), all
  callers together a global one (``--global-rate-limit``); ``0`` turns either off.
- Without ``--redis-url`` the buckets live in each process. With it they live in Redis
  (``mcp_gateway_middleware.ratelimit_redis``), shared by every worker and replica; if Redis fails,
  or answers nothing in time for a second, each process limits on its own at once, to its share of the
  limit (the limit divided by the processes last counted: ``shared_state.Replicas``), logs it once and says so in
  ``/readyz``'s detail (``degraded``), and goes back to Redis when it answers steadily
  again (``shared_state.shared_store``).
- A refused call is a 429 with ``Retry-After`` and a JSON-RPC error (``rate_limited``)
  that answers the request's id (the body has been read by then) and whose message says
  when to try again; it is counted with outcome ``rate_limited``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from aiohttp import web
from mcp_gateway_middleware.http import Stage, rate_limit
from mcp_gateway_middleware.ratelimit import Decision, FailoverLimiter, Limiter, LocalLimiter, Rate

from pdpp_gateway.caller import BearerFacts, TokenKind
from pdpp_gateway.hosted.inbound import request_id_of
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.hosted.shared_state import SharedStore
from pdpp_gateway.settings import HostedSettings

CALLER: Final = web.RequestKey("rate_limit_caller", str)
SHARED_PREFIX: Final = "pdpp:rl"  # the shared buckets' Redis keys: pdpp:rl:<hash>, pdpp:rl:*global*


def caller_key(facts: BearerFacts, token: str) -> str:
    """Who spends from a bucket: the grant or package, else a hash of the token."""
    package = facts.claims.get("grant_package_id") if facts.kind == TokenKind.PACKAGE else None
    if isinstance(package, str) and package:
        return f"package:{package}"
    if facts.grant_id:
        return f"{'package' if facts.kind == TokenKind.PACKAGE else 'grant'}:{facts.grant_id}"
    return "token:" + hashlib.sha256(token.encode()).hexdigest()


@dataclass
class RateLimits:
    limiter: Limiter | None  # None: no limit configured

    @property
    def degraded(self) -> str | None:
        return self.limiter.degraded if isinstance(self.limiter, FailoverLimiter) else None

    def stages(
        self, base_of: Callable[[web.Request], str], counted: Callable[[web.Request], bool]
    ) -> list[Stage]:
        """The aiohttp stage for the ``/mcp`` chain, or none when no limit is configured;
        ``counted(request)`` says whether a request spends from its caller's bucket."""
        if self.limiter is None:
            return []

        def refuse(request: web.Request, decision: Decision) -> web.Response:
            wait = decision.retry_after_seconds
            return refusal(
                429,
                "rate_limited",
                f"Too many calls from this grant: wait {wait} s before the next call, then pace the calls "
                "(prefer aggregate over paging and counting, and narrower searches).",
                base_of(request),
                headers={"Retry-After": str(wait)},
                retry_after_seconds=wait,
                request_id=request_id_of(request),
            )

        def caller_of(request: web.Request) -> str | None:
            return request.get(CALLER) if counted(request) else None

        return [rate_limit(self.limiter, caller_of, refuse)]


def rate_limits(settings: HostedSettings, store: SharedStore | None) -> RateLimits:
    """The limits the settings ask for; shared through Redis when there is a ``store``."""
    per_caller, ceiling = Rate(*settings.caller_rate), Rate(*settings.global_rate)
    if per_caller.unlimited and ceiling.unlimited:
        return RateLimits(None)
    local = LocalLimiter(per_caller, ceiling)
    if store is None:
        return RateLimits(local)
    from mcp_gateway_middleware.ratelimit_redis import RedisLimiter

    shared = RedisLimiter(store.client, per_caller, ceiling, prefix=SHARED_PREFIX)
    return RateLimits(FailoverLimiter(shared, local, store.guard, lambda: store.replicas.known))
