"""``FanOut`` alone: pass-through, routing, concurrent fan-out, outcomes in order, merge_single."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from mcp_gateway_middleware import FanOut, Outcome, ToolCall, ToolError, ToolResult, compose


class Upstreams:
    """A terminal that answers each call from the upstream named in its context."""

    def __init__(
        self,
        *,
        fail: frozenset[str] = frozenset(),
        delays: dict[str, float] | None = None,
        barrier: asyncio.Barrier | None = None,
    ) -> None:
        self.calls: list[ToolCall] = []
        self.fail = fail
        self.delays = delays or {}
        self.barrier = barrier

    async def __call__(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        if self.barrier is not None:  # every sub-call must be under way before any goes on
            await asyncio.wait_for(self.barrier.wait(), timeout=5)
        await asyncio.sleep(self.delays.get(str(call.context), 0))
        if call.context in self.fail:
            raise ToolError({"code": f"{call.context}_down", "message": "down"})
        return ToolResult(structured={"from": call.context})


class Merges:
    def __init__(self) -> None:
        self.seen: list[tuple[ToolCall, list[Outcome]]] = []

    def __call__(self, call: ToolCall, subs: Sequence[ToolCall], outcomes: Sequence[Outcome]) -> ToolResult:
        self.seen.append((call, list(outcomes)))
        return ToolResult(
            structured={
                "merged": [o.structured["from"] if isinstance(o, ToolResult) else o.code for o in outcomes]
            }
        )


def fan_to(*upstreams: str) -> Any:
    def plan(call: ToolCall) -> list[ToolCall] | None:
        if call.arguments.get("pass"):
            return None
        return [ToolCall(call.name, call.arguments, context=name) for name in upstreams]

    return plan


async def test_a_call_the_plan_declines_reaches_the_next_stage_untouched() -> None:
    upstreams, merges = Upstreams(), Merges()
    pipeline = compose([FanOut(fan_to("a", "b"), merges)], upstreams)
    call = ToolCall("t", {"pass": True}, context="caller")
    result = await pipeline(call)
    assert upstreams.calls == [call]
    assert result.structured == {"from": "caller"}
    assert merges.seen == []


async def test_one_sub_call_is_routing_its_answer_returned_as_is() -> None:
    upstreams, merges = Upstreams(), Merges()
    result = await compose([FanOut(fan_to("a"), merges)], upstreams)(ToolCall("t", {}, None))
    assert result.structured == {"from": "a"}
    assert merges.seen == []


async def test_one_failing_sub_call_raises_its_own_error_when_routing() -> None:
    pipeline = compose([FanOut(fan_to("a"), Merges())], Upstreams(fail=frozenset({"a"})))
    with pytest.raises(ToolError) as raised:
        await pipeline(ToolCall("t", {}, None))
    assert raised.value.code == "a_down"


async def test_merge_single_sends_one_answer_or_error_through_merge() -> None:
    merges = Merges()
    stage = FanOut(fan_to("a"), merges, merge_single=lambda call: call.arguments.get("cursor") is not None)
    pipeline = compose([stage], Upstreams(fail=frozenset({"a"})))
    result = await pipeline(ToolCall("t", {"cursor": "c"}, None))
    assert result.structured == {"merged": ["a_down"]}
    with pytest.raises(ToolError):
        await pipeline(ToolCall("t", {}, None))


async def test_sub_calls_run_concurrently_and_outcomes_keep_sub_call_order() -> None:
    # The barrier only opens once all three are in flight (sequential calls time out);
    # "a" answers last, and its outcome must still come first.
    upstreams = Upstreams(
        fail=frozenset({"b"}), delays={"a": 0.05, "b": 0.02, "c": 0.0}, barrier=asyncio.Barrier(3)
    )
    merges = Merges()
    pipeline = compose([FanOut(fan_to("a", "b", "c"), merges)], upstreams)
    result = await pipeline(ToolCall("t", {}, None))
    assert result.structured == {"merged": ["a", "b_down", "c"]}
    assert [call.context for call in upstreams.calls] == ["a", "b", "c"]


async def test_a_defect_in_one_branch_propagates_instead_of_becoming_a_partial_result() -> None:
    async def terminal(call: ToolCall) -> ToolResult:
        if call.context == "b":
            raise KeyError("bug")
        return ToolResult(structured={"from": call.context})

    merges = Merges()
    with pytest.raises(KeyError):
        await compose([FanOut(fan_to("a", "b"), merges)], terminal)(ToolCall("t", {}, None))
    assert merges.seen == []


async def test_an_empty_plan_calls_nothing_and_merges_no_outcomes() -> None:
    upstreams, merges = Upstreams(), Merges()
    result = await compose([FanOut(fan_to(), merges)], upstreams)(ToolCall("t", {}, None))
    assert upstreams.calls == []
    assert result.structured == {"merged": []}
