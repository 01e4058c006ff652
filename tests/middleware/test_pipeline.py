"""compose(): stage order, short-circuits, fan-out and any request shape, with a recording terminal."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcp_gateway_middleware import Next, ToolCall, ToolResult, compose


def _recording_stage(name: str, log: list[str]):  # type: ignore[no-untyped-def]
    async def stage(call: ToolCall, next_: Next) -> ToolResult:
        log.append(f"{name}:in")
        result = await next_(call)
        log.append(f"{name}:out")
        return result

    return stage


async def test_first_stage_is_outermost() -> None:
    log: list[str] = []

    async def terminal(call: ToolCall) -> ToolResult:
        log.append("terminal")
        return ToolResult(structured={"ok": True})

    chain = compose([_recording_stage("a", log), _recording_stage("b", log)], terminal)
    result = await chain(ToolCall("t", {}, None))
    assert result.structured == {"ok": True}
    assert log == ["a:in", "b:in", "terminal", "b:out", "a:out"]


async def test_stage_can_short_circuit_and_terminal_never_runs() -> None:
    calls: list[ToolCall] = []

    async def terminal(call: ToolCall) -> ToolResult:
        calls.append(call)
        return ToolResult(structured={})

    async def refuse(call: ToolCall, next_: Next) -> ToolResult:
        return ToolResult(structured={"error": {"code": "no"}}, is_error=True)

    result = await compose([refuse], terminal)(ToolCall("t", {}, None))
    assert result.is_error
    assert calls == []


async def test_stage_can_fan_out_and_merge() -> None:
    async def terminal(call: ToolCall) -> ToolResult:
        return ToolResult(structured={"source": call.arguments["source"]})

    async def fan_out(call: ToolCall, next_: Next) -> ToolResult:
        parts = [await next_(call.with_arguments({"source": s})) for s in ("work", "personal")]
        return ToolResult(structured={"merged": [p.structured["source"] for p in parts]})

    result = await compose([fan_out], terminal)(ToolCall("t", {}, None))
    assert result.structured == {"merged": ["work", "personal"]}


async def test_the_same_compose_chains_any_request_shape() -> None:
    """One composition for tool stages and HTTP stages alike: here plain strings in, ints out."""

    async def shout(request: str, next_: Callable[[str], Awaitable[int]]) -> int:
        return await next_(request.upper()) + 1

    async def refuse_empty(request: str, next_: Callable[[str], Awaitable[int]]) -> int:
        return -1 if not request else await next_(request)

    async def length_of_upper_only(request: str) -> int:
        return len(request) if request.isupper() else 0

    handler = compose([refuse_empty, shout], length_of_upper_only)
    assert await handler("abc") == 4
    assert await handler("") == -1
