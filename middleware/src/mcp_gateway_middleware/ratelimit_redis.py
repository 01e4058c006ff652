"""The shared rate limiter: the same token buckets, kept in Redis for every replica.

Contract: ``RedisLimiter(client, per_caller, ceiling, prefix, rate_of=None)`` implements
``ratelimit.Limiter``. One Lua script refills and takes from the caller's bucket and
the global bucket together, on Redis's own clock (``TIME``), so two replicas can never
both spend the last token and replicas need no synchronised clocks. Keys are
``<prefix>:<sha256 of the caller key>`` and ``<prefix>:*global*``: a caller key never
reaches Redis in clear. Buckets expire once they would be full again, so idle callers
cost nothing. Any Redis error propagates: ``FailoverLimiter`` decides what that means.

``client`` is a redis-py asyncio client (the library's extra ``redis`` installs redis-py;
this module never imports it, and ``import mcp_gateway_middleware`` never imports this module).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final

from mcp_gateway_middleware.ratelimit import GLOBAL, Decision, Rate

__all__ = ["RedisLimiter"]

# KEYS: caller bucket, global bucket. ARGV: caller rate, caller burst, global rate, global burst.
# A rate <= 0 means that bucket does not limit. Returns {allowed, retry_after (string)}.
_TAKE: Final = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local function level(key, rate, burst)
  if rate <= 0 then return nil end
  local saved = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(saved[1]) or burst
  local at = tonumber(saved[2]) or now
  return math.min(burst, tokens + math.max(0, now - at) * rate)
end
local rates = {tonumber(ARGV[1]), tonumber(ARGV[3])}
local bursts = {tonumber(ARGV[2]), tonumber(ARGV[4])}
local levels = {level(KEYS[1], rates[1], bursts[1]), level(KEYS[2], rates[2], bursts[2])}
local wait = 0
for i = 1, 2 do
  if levels[i] ~= nil and levels[i] < 1 then wait = math.max(wait, (1 - levels[i]) / rates[i]) end
end
local allowed = 0
if wait == 0 then allowed = 1 end
for i = 1, 2 do
  if levels[i] ~= nil then
    local tokens = levels[i] - allowed
    redis.call('HSET', KEYS[i], 'tokens', tostring(tokens), 'at', tostring(now))
    redis.call('PEXPIRE', KEYS[i], math.ceil((bursts[i] - tokens) / rates[i] * 1000) + 1000)
  end
end
return {allowed, tostring(wait)}
"""


class RedisLimiter:
    def __init__(
        self,
        client: Any,
        per_caller: Rate,
        ceiling: Rate,
        *,
        prefix: str,
        rate_of: Callable[[str], Rate | None] | None = None,
    ) -> None:
        self._script = client.register_script(_TAKE)
        self._args = [per_caller.per_second, per_caller.burst, ceiling.per_second, ceiling.burst]
        self._rate_of = rate_of
        self._prefix = prefix

    def key_for(self, caller: str) -> str:
        return f"{self._prefix}:{hashlib.sha256(caller.encode()).hexdigest()}"

    async def take(self, caller: str) -> Decision:
        own = self._rate_of(caller) if self._rate_of is not None else None
        args = self._args if own is None else [own.per_second, own.burst, *self._args[2:]]
        allowed, wait = await self._script(keys=[self.key_for(caller), f"{self._prefix}:{GLOBAL}"], args=args)
        return Decision(bool(int(allowed)), float(wait), backend="shared")
