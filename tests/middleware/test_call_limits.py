"""Limits per tool call (``LimitCalls``): a burst of calls spends one token each, per caller.

The issue that asked for it: a burst of 40 calls against a bucket of 30 gave 28 successes,
because the HTTP limit counted messages. Here the bucket refills too slowly to matter within
a test (one token per 1000 s), so every count is exact.
"""

from __future__ import annotations

from typing import Any

from mcp_gateway_middleware import (
    LimitCalls,
    PreserveErrors,
    RenderContent,
    ToolCall,
    ToolResult,
    ValidateArguments,
    compose,
)
from mcp_gateway_middleware.ratelimit import LocalLimiter, Rate

SLOW = 0.001  # tokens per second: no refill within a test
SCHEMAS = {"forecast": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


async def tools(call: ToolCall[str]) -> ToolResult:
    return ToolResult({"tool": call.name, "caller": call.context})


def pipeline(limiter: LocalLimiter, *, per_tool: bool = False) -> Any:
    return compose(
        [
            RenderContent[str]({}, lambda call, result: result.structured["error"]["message"]),
            PreserveErrors[str](),
            LimitCalls[str](limiter, lambda call: call.context, per_tool=per_tool),
            ValidateArguments(SCHEMAS),
        ],
        tools,
    )


async def test_a_burst_of_forty_calls_against_thirty_tokens_gives_thirty_answers() -> None:
    run = pipeline(LocalLimiter(Rate(SLOW, 30), Rate(0, 0)))
    results = [await run(ToolCall("forecast", {"city": "Oslo"}, "ada")) for _ in range(40)]
    assert sum(not result.is_error for result in results) == 30
    refused = results[-1]
    error = refused.structured["error"]
    assert (error["code"], error["type"]) == ("rate_limited", "rate_limit_error")
    assert error["retry_after_seconds"] >= 1
    assert (
        refused.text
        == f"Too many calls: wait {error['retry_after_seconds']} s before calling forecast again."
    )
    assert not (await run(ToolCall("forecast", {"city": "Oslo"}, "bob"))).is_error  # bob's own bucket


async def test_a_malformed_call_spends_a_token_too() -> None:
    run = pipeline(LocalLimiter(Rate(SLOW, 1), Rate(0, 0)))
    first = await run(ToolCall("forecast", {}, "ada"))
    assert first.structured["error"]["code"] == "invalid_arguments"
    assert (await run(ToolCall("forecast", {"city": "Oslo"}, "ada"))).structured["error"][
        "code"
    ] == "rate_limited"


async def test_per_tool_buckets_and_per_caller_rates() -> None:
    paying = {"ada": Rate(SLOW, 3)}
    run = pipeline(
        LocalLimiter(Rate(SLOW, 1), Rate(0, 0), rate_of=lambda key: paying.get(key.split("/")[0])),
        per_tool=True,
    )
    answers = [await run(ToolCall(tool, {"city": "Oslo"}, "ada")) for tool in ["forecast"] * 4 + ["stations"]]
    assert [result.is_error for result in answers] == [False, False, False, True, False]  # 3 each, per tool
    bob = [await run(ToolCall("forecast", {"city": "Oslo"}, "bob")) for _ in range(2)]
    assert [result.is_error for result in bob] == [False, True]  # the default rate: 1
