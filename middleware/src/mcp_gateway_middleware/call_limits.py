"""Limits per tool call: a token bucket per caller (and, if wanted, per tool) in the pipeline.

Contract:

- ``LimitCalls(limiter, caller_of, per_tool=False, refusal=too_many_calls)`` takes one token per
  tool call from ``caller_of(call)``'s bucket (``None``: this call is not limited) before any
  stage below runs, so a burst of N calls spends N tokens however they reach the gateway (one
  HTTP message each, a batch, stdio). With ``per_tool`` the bucket is the caller's for that
  tool (key ``"<caller>/<tool>"``), so one busy tool does not starve the others.
- A refused call raises ``refusal(call, decision)``, a ``ToolError``: by default
  ``rate_limited`` (type ``rate_limit_error``) whose message names the tool and the wait and
  whose envelope carries ``retry_after_seconds``, so the model sees when to try again.
- ``limiter`` is any ``ratelimit.Limiter`` (``LocalLimiter``, ``FailoverLimiter`` over Redis;
  ``rate_of`` gives callers their own rates). Nothing here imports a web framework.
- Its place is below ``PreserveErrors`` and above ``ValidateArguments`` (``Role.LIMIT``): a
  malformed call costs a token too, and a fanned-out call costs one, not one per upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic

from mcp_gateway_middleware.errors import ToolError, gateway_error
from mcp_gateway_middleware.pipeline import C, Next, Role, ToolCall, ToolResult
from mcp_gateway_middleware.ratelimit import Decision, Limiter

__all__ = ["LimitCalls", "too_many_calls"]


def too_many_calls(call: ToolCall[C], decision: Decision) -> ToolError:
    """The default refusal: ``rate_limited``, naming the tool and the wait."""
    wait = decision.retry_after_seconds
    return gateway_error(
        "rate_limited",
        f"Too many calls: wait {wait} s before calling {call.name} again.",
        type_="rate_limit_error",
        retry_after_seconds=wait,
    )


class LimitCalls(Generic[C]):
    """Stage: one token per tool call from the caller's bucket (module contract)."""

    role: ClassVar[Role] = Role.LIMIT

    def __init__(
        self,
        limiter: Limiter,
        caller_of: Callable[[ToolCall[C]], str | None],
        *,
        per_tool: bool = False,
        refusal: Callable[[ToolCall[C], Decision], ToolError] = too_many_calls,
    ) -> None:
        self._limiter = limiter
        self._caller_of = caller_of
        self._per_tool = per_tool
        self._refusal = refusal

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        caller = self._caller_of(call)
        if caller is not None:
            decision = await self._limiter.take(f"{caller}/{call.name}" if self._per_tool else caller)
            if not decision.allowed:
                raise self._refusal(call, decision)
        return await next_(call)
