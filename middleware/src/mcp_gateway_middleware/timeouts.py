"""A deadline per tool call: each routed or fanned-out upstream call bounded.

Contract:

- ``CallTimeout(seconds, late=timed_out)`` runs the stages below within ``seconds``; when the
  deadline passes first, what is running is cancelled and the call raises ``late(call,
  seconds)``, a ``ToolError`` (by default ``upstream_timeout``, type ``api_error``, naming the
  tool and the wait). A ``TimeoutError`` that is not this deadline's propagates untouched.
- Its place is below ``FanOut`` (``Role.TIMEOUT``): there it bounds the one routed call and
  each fanned-out call alike, and a late member is a ``ToolError`` outcome the merge sees
  (a partial answer), never a stalled whole. Above ``FanOut`` it would bound the whole call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar, Generic

from mcp_gateway_middleware.errors import ToolError, gateway_error
from mcp_gateway_middleware.pipeline import C, Next, Role, ToolCall, ToolResult

__all__ = ["CallTimeout", "timed_out"]


def timed_out(call: ToolCall[C], seconds: float) -> ToolError:
    """The default late answer: ``upstream_timeout``."""
    return gateway_error(
        "upstream_timeout",
        f"{call.name} got no answer from its upstream within {seconds:g} s; retry later or narrow the call.",
        type_="api_error",
    )


class CallTimeout(Generic[C]):
    """Stage: the calls below it finish within ``seconds`` or end in ``late(call, seconds)``."""

    role: ClassVar[Role] = Role.TIMEOUT

    def __init__(self, seconds: float, late: Callable[[ToolCall[C], float], ToolError] = timed_out) -> None:
        self._seconds = seconds
        self._late = late

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        scope = asyncio.timeout(self._seconds)
        try:
            async with scope:
                return await next_(call)
        except TimeoutError:
            if not scope.expired():
                raise  # not this deadline's
            raise self._late(call, self._seconds) from None
