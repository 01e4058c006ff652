"""Fan-out: run one call against several upstreams and merge what comes back.

Contract: ``FanOut(plan, merge, merge_single=None, deadline=None)``.

- ``plan(call)`` returns ``None`` to pass the call through untouched, or the list of
  sub-calls to make instead (each typically carries another upstream in its context).
- One sub-call: its result is returned as-is (routing, no merge), unless
  ``merge_single(call)`` says this call's single answer must still be merged (for
  example a continuation whose one remaining upstream answer needs re-shaping); its
  error then reaches ``merge`` as an outcome like any other.
- Several: they run concurrently; each outcome is a ``ToolResult`` or the ``ToolError``
  it raised. ``merge(call, sub_calls, outcomes)`` (outcomes in sub-call order) builds
  the single result (and decides what a
  partial failure means). Anything other than a ``ToolError`` propagates: a defect in
  one branch is not dressed up as a partial result.
- ``deadline``, a ``Deadline(seconds, late)``: when several sub-calls run, each gets at most
  ``seconds``; one still running then is cancelled and its outcome is ``late(sub_call,
  seconds)``, a ``ToolError`` naming it, so one stalled upstream delays the merged answer by
  at most that long, never by its own timeouts. A single routed sub-call keeps the whole
  budget of the call.
- An empty plan is a routing decision with nothing to call; ``merge`` gets no outcomes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar, Generic, NamedTuple

from mcp_gateway_middleware.errors import ToolError
from mcp_gateway_middleware.pipeline import C, Next, Role, ToolCall, ToolResult

__all__ = ["Deadline", "FanOut", "Merge", "Outcome", "Plan"]

Outcome = ToolResult | ToolError
Plan = Callable[[ToolCall[C]], Sequence[ToolCall[C]] | None]
Merge = Callable[[ToolCall[C], Sequence[ToolCall[C]], Sequence[Outcome]], ToolResult]


class Deadline(NamedTuple, Generic[C]):
    """How long each of several sub-calls may take, and the error one that took longer gets."""

    seconds: float
    late: Callable[[ToolCall[C], float], ToolError]


class FanOut(Generic[C]):
    """Stage: route a call to one upstream, or fan it out to several and merge."""

    role: ClassVar[Role] = Role.FAN_OUT

    def __init__(
        self,
        plan: Plan[C],
        merge: Merge[C],
        *,
        merge_single: Callable[[ToolCall[C]], bool] | None = None,
        deadline: Deadline[C] | None = None,
    ) -> None:
        self._plan = plan
        self._merge = merge
        self._merge_single = merge_single
        self._deadline = deadline

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        sub_calls = self._plan(call)
        if sub_calls is None:
            return await next_(call)
        if len(sub_calls) == 1 and not (self._merge_single and self._merge_single(call)):
            return await next_(sub_calls[0])
        outcomes = await asyncio.gather(*(_attempt(next_, sub, self._deadline) for sub in sub_calls))
        return self._merge(call, sub_calls, outcomes)


async def _attempt(next_: Next[C], call: ToolCall[C], deadline: Deadline[C] | None = None) -> Outcome:
    if deadline is None:
        return await _outcome(next_, call)
    scope = asyncio.timeout(deadline.seconds)
    try:
        async with scope:
            return await _outcome(next_, call)
    except TimeoutError:
        if not scope.expired():
            raise  # not the deadline's: a defect, not a late answer
        return deadline.late(call, deadline.seconds)


async def _outcome(next_: Next[C], call: ToolCall[C]) -> Outcome:
    try:
        return await next_(call)
    except ToolError as error:
        return error
